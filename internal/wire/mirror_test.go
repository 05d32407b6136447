package wire

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func sp(s string) *string { return &s }

func tg(k uint32, v string) Tags { return Tags{{Key: k, Value: []byte(v)}} }

var (
	idA = [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	idB = [16]byte{0xff, 0xee}
)

// sampleMirrorMessages returns, for every mirror key, a request and a
// response with every field set to a non-zero value and tagged fields at
// every level, so that a field dropped or swapped by an encoder or decoder
// shows up as a difference.
func sampleMirrorMessages() []kmsg.Request {
	topicsReq := MirrorTopicsRequest{
		MirrorName:    "east",
		Topics:        []MirrorTopicsRequestTopic{{Name: "orders", UnknownTags: tg(3, "t")}, {Name: "payments"}},
		ValidateOnly:  true,
		TimeoutMillis: 30000,
		UnknownTags:   tg(0, "top"),
	}
	return []kmsg.Request{
		&CreateMirrorRequest{
			MirrorName: "east",
			Configs: []CreateMirrorRequestConfig{
				{Name: "bootstrap.servers", Value: sp("a:9092,b:9092"), UnknownTags: tg(1, "x")},
				{Name: "sasl.password", Value: nil},
			},
			ValidateOnly: true, TimeoutMillis: 1234, UnknownTags: tg(5, "y"),
		},
		func() kmsg.Request { r := AddTopicsToMirrorRequest(topicsReq); return &r }(),
		func() kmsg.Request { r := RemoveTopicsFromMirrorRequest(topicsReq); return &r }(),
		&DeleteMirrorRequest{MirrorName: "east", TimeoutMillis: 99, UnknownTags: tg(2, "z")},
		&ListMirrorsRequest{UnknownTags: tg(4, "list")},
		&DescribeMirrorsRequest{MirrorNames: []string{"east", "west"}, IncludePartitions: true, UnknownTags: tg(9, "d")},
		&ReadMirrorStatesRequest{
			Partitions: []ReadMirrorStatesRequestPartition{
				{MirrorName: "east", TopicID: idA, Partition: 7, UnknownTags: tg(1, "p")},
				{MirrorName: "west", TopicID: idB, Partition: -1},
			},
			UnknownTags: tg(3, "r"),
		},
		&WriteMirrorStatesRequest{
			Partitions: []WriteMirrorStatesRequestPartition{{
				MirrorName: "east", TopicID: idA, Partition: 3, State: MirrorStateStopping,
				StateEpoch: 12, LeaderEpoch: 5, LastError: sp("boom"), UnknownTags: tg(1, "w"),
			}},
			LastMirroredEpochs: []WriteMirrorStatesRequestLastMirroredEpoch{{
				MirrorName: "east", TopicID: idA, Partition: 3, SourceClusterID: "clusterA",
				LastMirroredEpoch: 41, EndOffset: 1 << 40, UnknownTags: tg(2, "l"),
			}},
			UnknownTags: tg(7, "ws"),
		},
		func() kmsg.Request { r := PauseMirrorTopicsRequest(topicsReq); return &r }(),
		func() kmsg.Request { r := ResumeMirrorTopicsRequest(topicsReq); return &r }(),
		&ReadLastMirroredEpochsRequest{
			ClusterID: "clusterB",
			Topics: []ReadLastMirroredEpochsRequestTopic{
				{TopicID: idA, Name: "orders", Partitions: []int32{0, 1, 2}, UnknownTags: tg(1, "lt")},
				{TopicID: idB, Name: "x"},
			},
			UnknownTags: tg(6, "lme"),
		},
	}
}

func sampleMirrorResponses() []kmsg.Response {
	topicsResp := MirrorTopicsResponse{
		ThrottleMillis: 5, ErrorCode: 0, ErrorMessage: sp("partial"),
		Topics: []MirrorTopicsResponseTopic{
			{Name: "orders", TopicID: idA, ErrorCode: kerr.InvalidRequest.Code, ErrorMessage: sp("topic orders is in mirror west"), UnknownTags: tg(1, "a")},
			{Name: "payments", TopicID: idB},
		},
		UnknownTags: tg(2, "b"),
	}
	return []kmsg.Response{
		&CreateMirrorResponse{ThrottleMillis: 1, ErrorCode: 36, ErrorMessage: sp("mirror east exists"), UnknownTags: tg(0, "c")},
		func() kmsg.Response { r := AddTopicsToMirrorResponse(topicsResp); return &r }(),
		func() kmsg.Response { r := RemoveTopicsFromMirrorResponse(topicsResp); return &r }(),
		&DeleteMirrorResponse{ThrottleMillis: 2, ErrorCode: 91, ErrorMessage: sp("no mirror"), UnknownTags: tg(4, "d")},
		&ListMirrorsResponse{
			ThrottleMillis: 3, ErrorCode: 0,
			Mirrors: []ListMirrorsResponseMirror{
				{Name: "east", SourceBootstrapServers: "a:9092", TopicCount: 4, UnknownTags: tg(1, "m")},
				{Name: "west", SourceBootstrapServers: "b:9092"},
			},
			UnknownTags: tg(3, "l"),
		},
		&DescribeMirrorsResponse{
			ThrottleMillis: 4, ErrorCode: 0,
			Mirrors: []DescribeMirrorsResponseMirror{{
				Name: "east", ErrorCode: 0, ErrorMessage: sp("ok"),
				Configs: []DescribeMirrorsResponseConfig{
					{Name: "bootstrap.servers", Value: sp("a:9092"), UnknownTags: tg(1, "c")},
					{Name: "sasl.jaas.config", Sensitive: true},
				},
				Topics: []DescribeMirrorsResponseTopic{{
					Name: "orders", TopicID: idA, MirrorNameConfig: "east.paused",
					Partitions: []DescribeMirrorsResponsePartition{{
						Partition: 2, State: MirrorStatePaused, LeaderID: 3, SourceHighWatermark: 100,
						SourceLogStartOffset: 10, DestinationLogEndOffset: 90, Lag: 10, LastFetchMillis: 1700000000000,
						StateChangeMillis: 1700000000001, LastError: sp("source unreachable"), UnknownTags: tg(2, "p"),
					}},
					UnknownTags: tg(3, "t"),
				}},
				Syncs:       []DescribeMirrorsResponseSync{{Kind: "configs", LastSuccessMillis: 17, LastError: sp("denied"), UnknownTags: tg(4, "s")}},
				UnknownTags: tg(5, "m"),
			}, {Name: "gone", ErrorCode: kerr.ResourceNotFound.Code}},
			UnknownTags: tg(6, "r"),
		},
		&ReadMirrorStatesResponse{
			ThrottleMillis: 6, ErrorCode: 0,
			Partitions: []ReadMirrorStatesResponsePartition{{
				MirrorName: "east", TopicID: idA, Partition: 1, ErrorCode: 16, ErrorMessage: sp("not coordinator"),
				State: MirrorStateMirroring, StateEpoch: 4, LeaderEpoch: 9, UpdateMillis: 123456, LastError: sp("e"), UnknownTags: tg(1, "x"),
			}},
			UnknownTags: tg(2, "y"),
		},
		&WriteMirrorStatesResponse{
			ThrottleMillis: 7, ErrorCode: 0,
			Partitions:  []WriteMirrorStatesResponsePartition{{MirrorName: "east", TopicID: idB, Partition: 8, ErrorCode: 74, ErrorMessage: sp("fenced"), UnknownTags: tg(1, "w")}},
			UnknownTags: tg(3, "z"),
		},
		func() kmsg.Response { r := PauseMirrorTopicsResponse(topicsResp); return &r }(),
		func() kmsg.Response { r := ResumeMirrorTopicsResponse(topicsResp); return &r }(),
		&ReadLastMirroredEpochsResponse{
			ThrottleMillis: 8, ErrorCode: 0,
			Topics: []ReadLastMirroredEpochsResponseTopic{{
				TopicID: idA, Name: "orders",
				Partitions: []ReadLastMirroredEpochsResponsePartition{
					{Partition: 0, LastMirroredEpoch: 7, EndOffset: 5000, UnknownTags: tg(1, "p")},
					{Partition: 1, ErrorCode: 3, LastMirroredEpoch: -1, EndOffset: -1},
				},
				UnknownTags: tg(2, "t"),
			}},
			UnknownTags: tg(3, "r"),
		},
	}
}

type message interface {
	Key() int16
	AppendTo([]byte) []byte
	ReadFrom([]byte) error
	GetVersion() int16
}

func TestMirrorMessagesCoverEveryKey(t *testing.T) {
	reqs, resps := sampleMirrorMessages(), sampleMirrorResponses()
	if len(reqs) != 11 || len(resps) != 11 {
		t.Fatalf("%d requests, %d responses", len(reqs), len(resps))
	}
	for i := range reqs {
		k := MinMirrorKey + int16(i)
		if reqs[i].Key() != k || resps[i].Key() != k {
			t.Errorf("sample %d: keys %d/%d, want %d", i, reqs[i].Key(), resps[i].Key(), k)
		}
		if reflect.TypeOf(NewMirrorRequest(k)) != reflect.TypeOf(reqs[i]) {
			t.Errorf("NewMirrorRequest(%d) = %T, sample %T", k, NewMirrorRequest(k), reqs[i])
		}
		if reflect.TypeOf(reqs[i].ResponseKind()) != reflect.TypeOf(resps[i]) {
			t.Errorf("%T.ResponseKind() = %T, want %T", reqs[i], reqs[i].ResponseKind(), resps[i])
		}
		if reflect.TypeOf(resps[i].RequestKind()) != reflect.TypeOf(reqs[i]) {
			t.Errorf("%T.RequestKind() = %T", resps[i], resps[i].RequestKind())
		}
		if !reqs[i].IsFlexible() || !resps[i].IsFlexible() || reqs[i].MaxVersion() != 0 || resps[i].MaxVersion() != 0 {
			t.Errorf("key %d: flexible %v/%v max %d/%d", k, reqs[i].IsFlexible(), resps[i].IsFlexible(), reqs[i].MaxVersion(), resps[i].MaxVersion())
		}
		_, admin := reqs[i].(kmsg.AdminRequest)
		wantAdmin := k <= KeyDescribeMirrors || k == KeyPauseMirrorTopics || k == KeyResumeMirrorTopics
		if admin != wantAdmin {
			t.Errorf("key %d: admin = %v, want %v", k, admin, wantAdmin)
		}
		_, timeout := reqs[i].(kmsg.TimeoutRequest)
		wantTimeout := wantAdmin && k != KeyListMirrors && k != KeyDescribeMirrors
		if timeout != wantTimeout {
			t.Errorf("key %d: timeout request = %v, want %v", k, timeout, wantTimeout)
		}
		if _, ok := resps[i].(kmsg.ThrottleResponse); !ok {
			t.Errorf("key %d response is not a ThrottleResponse", k)
		}
	}
}

func roundTrip(t *testing.T, m message, fresh message) {
	t.Helper()
	enc := m.AppendTo(nil)
	if err := fresh.ReadFrom(enc); err != nil {
		t.Fatalf("%T: decode: %v", m, err)
	}
	if !reflect.DeepEqual(m, fresh) {
		t.Fatalf("%T: round trip differs:\n got %+v\nwant %+v", m, fresh, m)
	}
	if again := fresh.AppendTo(nil); !bytes.Equal(enc, again) {
		t.Fatalf("%T: re-encoding differs", m)
	}
	// Every strict prefix is an error, never a panic or a silent success.
	for i := 0; i < len(enc); i++ {
		if err := fresh.ReadFrom(enc[:i]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%T: prefix of %d/%d bytes: err = %v", m, i, len(enc), err)
		}
	}
	if err := fresh.ReadFrom(append(enc[:len(enc):len(enc)], 0)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("%T: trailing byte accepted: %v", m, err)
	}
}

func TestMirrorMessagesRoundTrip(t *testing.T) {
	for _, req := range sampleMirrorMessages() {
		roundTrip(t, req, NewMirrorRequest(req.Key()))
	}
	for _, resp := range sampleMirrorResponses() {
		roundTrip(t, resp, NewMirrorResponse(resp.Key()))
	}
	// Zero values round-trip too (nil slices stay nil).
	for k := MinMirrorKey; k <= MaxMirrorKey; k++ {
		roundTrip(t, NewMirrorRequest(k), NewMirrorRequest(k))
		roundTrip(t, NewMirrorResponse(k), NewMirrorResponse(k))
	}
}

func TestDescribeMirrorsNullVersusEmptyNames(t *testing.T) {
	for _, names := range [][]string{nil, {}} {
		in := &DescribeMirrorsRequest{MirrorNames: names}
		var out DescribeMirrorsRequest
		if err := out.ReadFrom(in.AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
		if (out.MirrorNames == nil) != (names == nil) || len(out.MirrorNames) != 0 {
			t.Errorf("names %#v decoded as %#v", names, out.MirrorNames)
		}
	}
}

// The exact bytes of one message, worked out by hand from the schema, pin
// the encoding (a symmetric encoder/decoder bug would pass round trips).
func TestDeleteMirrorRequestGoldenBytes(t *testing.T) {
	req := &DeleteMirrorRequest{MirrorName: "ab", TimeoutMillis: 258, UnknownTags: tg(1, "z")}
	want := []byte{
		3, 'a', 'b', // compact string: length+1
		0, 0, 1, 2, // int32 258
		1,         // one tag
		1, 1, 'z', // key 1, size 1, value
	}
	if got := req.AppendTo(nil); !bytes.Equal(got, want) {
		t.Fatalf("encoded % x, want % x", got, want)
	}
	resp := &ReadLastMirroredEpochsResponse{Topics: []ReadLastMirroredEpochsResponseTopic{{
		Name: "t", Partitions: []ReadLastMirroredEpochsResponsePartition{{Partition: 1, LastMirroredEpoch: -1, EndOffset: -1}},
	}}}
	want = append([]byte{0, 0, 0, 0, 0, 0, 2}, make([]byte, 16)...) // throttle, error, 1 topic, zero id
	want = append(want, 2, 't', 2, 0, 0, 0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff)
	want = append(want, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0)
	if got := resp.AppendTo(nil); !bytes.Equal(got, want) {
		t.Fatalf("encoded\n% x\nwant\n% x", got, want)
	}
}

func TestMirrorMessagesRejectOtherVersions(t *testing.T) {
	for _, req := range sampleMirrorMessages() {
		enc := req.AppendTo(nil)
		fresh := NewMirrorRequest(req.Key())
		fresh.SetVersion(1)
		if err := fresh.ReadFrom(enc); !errors.Is(err, kerr.UnsupportedVersion) {
			t.Errorf("%T v1: err = %v", req, err)
		}
	}
}

func TestReadFromResetsFields(t *testing.T) {
	full := sampleMirrorMessages()[0].(*CreateMirrorRequest)
	var r CreateMirrorRequest
	if err := r.ReadFrom(full.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if err := r.ReadFrom((&CreateMirrorRequest{MirrorName: "x"}).AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	if r.Configs != nil || r.ValidateOnly || r.UnknownTags != nil {
		t.Errorf("stale fields after ReadFrom: %+v", r)
	}
}

func TestMirrorPartitionStateNames(t *testing.T) {
	want := []string{"UNKNOWN", "PREPARING", "MIRRORING", "PAUSING", "PAUSED", "STOPPING", "STOPPED", "FAILED"}
	for i, w := range want {
		s := MirrorPartitionState(i)
		if s.String() != w || !s.Valid() {
			t.Errorf("state %d = %q valid %v, want %q", i, s, s.Valid(), w)
		}
		if p, ok := ParseMirrorPartitionState(w); !ok || p != s {
			t.Errorf("parse %q = %v %v", w, p, ok)
		}
	}
	if s := MirrorPartitionState(8); s.Valid() || s.String() != "MirrorPartitionState(8)" {
		t.Errorf("state 8: %q valid %v", s, s.Valid())
	}
	if s := MirrorPartitionState(-1); s.Valid() {
		t.Error("state -1 valid")
	}
	// The numbering is a wire and disk format.
	if MirrorStateStopped != 6 || MirrorStateFailed != 7 || MirrorStateMirroring != 2 {
		t.Error("state numbering changed")
	}
}

func TestAPIName(t *testing.T) {
	cases := map[int16]string{
		0: "Produce", 18: "ApiVersions", 94: "UnregisterController",
		9000: "CreateMirror", 9005: "DescribeMirrors", 9010: "ReadLastMirroredEpochs",
		30000: "Unknown(30000)",
	}
	for k, w := range cases {
		if got := APIName(k); got != w {
			t.Errorf("APIName(%d) = %q, want %q", k, got, w)
		}
	}
}

func TestValidateMirrorName(t *testing.T) {
	for _, ok := range []string{"east", "dc1.to-dc2_v2", strings.Repeat("m", 249)} {
		if err := ValidateMirrorName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a b", "east.paused", "east.removed", "east.stopped", "ü", strings.Repeat("m", 250)} {
		if err := ValidateMirrorName(bad); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("%q accepted (%v)", bad, err)
		}
	}
}

func TestParseMirrorName(t *testing.T) {
	for _, tc := range []struct {
		raw      string
		mirror   string
		m        MirrorMembership
		readOnly bool
	}{
		{"", "", NotMirrored, false},
		{"east", "east", MembershipMirroring, true},
		{"east.paused", "east", MembershipPaused, true},
		{"east.removed", "east", MembershipRemoved, true},
		{"east.stopped", "east", MembershipStopped, false},
		{"dc1.east.removed", "dc1.east", MembershipRemoved, true},
	} {
		mirror, m := ParseMirrorName(tc.raw)
		if mirror != tc.mirror || m != tc.m || m.ReadOnly() != tc.readOnly {
			t.Errorf("ParseMirrorName(%q) = %q, %v (read-only %v), want %q, %v (%v)", tc.raw, mirror, m, m.ReadOnly(), tc.mirror, tc.m, tc.readOnly)
		}
		if tc.m != NotMirrored {
			if back := MirrorNameValue(mirror, m); back != tc.raw {
				t.Errorf("MirrorNameValue(%q, %v) = %q, want %q", mirror, m, back, tc.raw)
			}
		}
	}
}

// TestDescribeMirrorsPartitionTaggedFields: the failover cut and the lag in
// time travel as tagged fields (0 and 1); an answer without them (an older
// kmirror) reads as unknown (-1), and other tags are kept.
func TestDescribeMirrorsPartitionTaggedFields(t *testing.T) {
	p := DescribeMirrorsResponsePartition{Partition: 3, LeaderID: 1, LastStableOffset: 42, LagMillis: 1500}
	p.UnknownTags.Set(7, []byte{9})
	var got DescribeMirrorsResponsePartition
	got.readFrom(NewReader(p.appendTo(nil)))
	if got.LastStableOffset != 42 || got.LagMillis != 1500 || len(got.UnknownTags) != 1 || got.UnknownTags[0].Key != 7 {
		t.Fatalf("round trip: %+v", got)
	}
	old := p
	old.UnknownTags = nil
	b := old.appendTo(nil)
	// Strip the tag section (the last bytes: count 2, then two 8-byte
	// values with their key and length bytes) and write an empty one.
	b = append(b[:len(b)-(1+2*(1+1+8))], 0)
	got = DescribeMirrorsResponsePartition{}
	got.readFrom(NewReader(b))
	if got.LastStableOffset != -1 || got.LagMillis != -1 || got.Partition != 3 {
		t.Fatalf("without the tags: %+v", got)
	}
}
