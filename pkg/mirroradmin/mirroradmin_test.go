package mirroradmin

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/wire"
)

func TestTopicResultsConversion(t *testing.T) {
	msg := `topic "b" is PAUSED; only MIRRORING topics can be paused`
	resp := &wire.PauseMirrorTopicsResponse{Topics: []wire.MirrorTopicsResponseTopic{
		{Name: "a", TopicID: [16]byte{1}},
		{Name: "b", TopicID: [16]byte{2}, ErrorCode: kerr.InvalidRequest.Code, ErrorMessage: &msg},
	}}
	rs, err := topicResults(resp)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Err != nil || rs[0].ID != (TopicID{1}) {
		t.Fatalf("results %+v", rs)
	}
	b, ok := rs.On("b")
	if !ok || !errors.Is(b.Err, kerr.InvalidRequest) {
		t.Fatalf("b: %+v", b)
	}
	var e *Error
	if !errors.As(rs.Error(), &e) || e.Message != msg || e.Err != kerr.InvalidRequest {
		t.Fatalf("Error() = %v", rs.Error())
	}
	if got := e.Error(); got != "INVALID_REQUEST: "+msg {
		t.Fatalf("text %q", got)
	}
	// A mirror-level error is returned as the error.
	nf := "mirror \"x\" does not exist"
	_, err = topicResults(&wire.AddTopicsToMirrorResponse{ErrorCode: kerr.ResourceNotFound.Code, ErrorMessage: &nf})
	if !errors.Is(err, kerr.ResourceNotFound) {
		t.Fatalf("mirror-level: %v", err)
	}
}

func TestDescribeResultConversion(t *testing.T) {
	v, leaked, lastErr := "src:9092", "leaked", "fetch failed"
	notFound := "no such mirror"
	resp := &wire.DescribeMirrorsResponse{Mirrors: []wire.DescribeMirrorsResponseMirror{
		{Name: "east",
			Configs: []wire.DescribeMirrorsResponseConfig{{Name: "bootstrap.servers", Value: &v}, {Name: "sasl.password", Value: &leaked, Sensitive: true}},
			Topics: []wire.DescribeMirrorsResponseTopic{{Name: "orders", TopicID: [16]byte{7}, MirrorNameConfig: "east.paused",
				Partitions: []wire.DescribeMirrorsResponsePartition{{Partition: 1, State: wire.MirrorStatePaused, LeaderID: 2,
					SourceHighWatermark: 10, SourceLogStartOffset: 0, DestinationLogEndOffset: 8, Lag: 2,
					LastFetchMillis: 1_700_000_000_000, StateChangeMillis: -1, LastError: &lastErr}}}},
			Syncs: []wire.DescribeMirrorsResponseSync{{Kind: "configs", LastSuccessMillis: -1}}},
		{Name: "gone", ErrorCode: kerr.ResourceNotFound.Code, ErrorMessage: &notFound},
	}}
	ms, err := describeResult(resp)
	if err != nil {
		t.Fatal(err)
	}
	east, ok := ms.On("east")
	if !ok || east.Err != nil || len(east.Configs) != 2 || len(east.Topics) != 1 || len(east.Syncs) != 1 {
		t.Fatalf("east %+v", east)
	}
	if c := east.Configs[1]; !c.Sensitive || c.Value != nil {
		t.Fatalf("a sensitive value must never be kept: %+v", c)
	}
	p := east.Topics[0].Partitions[0]
	if p.State != StatePaused || p.State.String() != "PAUSED" || p.Lag != 2 || p.LastError != lastErr ||
		!p.LastFetch.Equal(time.UnixMilli(1_700_000_000_000)) || !p.StateChange.IsZero() {
		t.Fatalf("partition %+v", p)
	}
	if !east.Syncs[0].LastSuccess.IsZero() {
		t.Fatal("never-synced must be the zero time")
	}
	gone, _ := ms.On("gone")
	if !errors.Is(gone.Err, kerr.ResourceNotFound) {
		t.Fatalf("gone: %v", gone.Err)
	}
	if s := State(9).String(); s != "State(9)" {
		t.Fatal(s)
	}
}

func TestClientWithoutMirrorVersions(t *testing.T) {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := NewClient(cl)
	if _, err := adm.ListMirrors(t.Context()); err == nil || !errors.Is(err, adm.missing) {
		t.Fatalf("ListMirrors without ClientOpts: %v", err)
	}
	if err := adm.CreateMirror(t.Context(), "m", nil); err == nil {
		t.Fatal("CreateMirror without ClientOpts succeeded")
	}
	ok, err := kgo.NewClient(append(ClientOpts(), kgo.SeedBrokers("127.0.0.1:1"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	if NewClient(ok).missing != nil {
		t.Fatal("a client built with ClientOpts is refused")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	in := Mirror{Name: "east", Topics: []MirrorTopic{{Name: "orders", ID: TopicID{1, 2, 3, 15: 9}, Partitions: []PartitionStatus{
		{Partition: 1, State: StateStopping, LastFetch: time.UnixMilli(1_700_000_000_000).UTC()}}}}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "state_change") || !strings.Contains(string(b), `"state":"STOPPING"`) {
		t.Fatalf("json %s: want the zero time omitted and the state by name", b)
	}
	var out Mirror
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip:\n%+v\n%+v", in, out)
	}
	var id TopicID
	if err := id.UnmarshalText([]byte("short")); err == nil {
		t.Fatal("a bad id decoded")
	}
	var st State
	if err := st.UnmarshalText([]byte("NOPE")); err == nil {
		t.Fatal("a bad state decoded")
	}
}
