package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fullRegistry serves every key kmsg and this package know, at all versions.
func fullRegistry() *Registry {
	reg := NewRegistry()
	for k := int16(0); k <= MaxMirrorKey+5; k++ {
		reg.Add(k, 0, 1000)
	}
	return reg
}

// encodeRequest frames req with kmsg's own formatter (an encoder we did not
// write), except for ControlledShutdown v0 whose frame kmsg's formatter
// leaves without a body, and strips the size prefix. Frames from both
// encoders are compared in TestAppendRequestMatchesKmsg.
func encodeRequest(req kmsg.Request, corr int32, clientID *string) []byte {
	if req.Key() == controlledShutdownKey && req.GetVersion() == 0 {
		return AppendRequest(nil, corr, clientID, req)[4:]
	}
	var opts []kmsg.RequestFormatterOpt
	if clientID != nil {
		opts = append(opts, kmsg.FormatterClientID(*clientID))
	}
	return kmsg.NewRequestFormatter(opts...).AppendRequest(nil, req, corr)[4:]
}

func TestAppendRequestMatchesKmsg(t *testing.T) {
	id := "client"
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		req := kmsg.RequestForKey(k)
		if req == nil {
			continue
		}
		for v := int16(0); v <= req.MaxVersion(); v++ {
			if k == controlledShutdownKey && v == 0 {
				continue
			}
			req.SetVersion(v)
			for _, cid := range []*string{nil, &id} {
				var opts []kmsg.RequestFormatterOpt
				if cid != nil {
					opts = append(opts, kmsg.FormatterClientID(*cid))
				}
				want := kmsg.NewRequestFormatter(opts...).AppendRequest(nil, req, 9)
				if got := AppendRequest(nil, 9, cid, req); !bytes.Equal(got, want) {
					t.Fatalf("%s v%d: frames differ\n got % x\nwant % x", APIName(k), v, got, want)
				}
			}
		}
	}
	// ControlledShutdown v0: header without client id, then the body.
	cs := kmsg.NewPtrControlledShutdownRequest()
	cs.SetVersion(0)
	cs.BrokerID = 7
	got := AppendRequest(nil, 3, &id, cs)
	want := []byte{0, 0, 0, 12, 0, 7, 0, 0, 0, 0, 0, 3, 0, 0, 0, 7}
	if !bytes.Equal(got, want) {
		t.Fatalf("ControlledShutdown v0 = % x, want % x", got, want)
	}
}

func TestParseRequestHeaderVersions(t *testing.T) {
	reg := fullRegistry()
	cases := []struct {
		name       string
		req        kmsg.Request
		version    int16
		wantHeader int16
	}{
		{"ControlledShutdown v0 has no client id", kmsg.NewPtrControlledShutdownRequest(), 0, 0},
		{"ControlledShutdown v1", kmsg.NewPtrControlledShutdownRequest(), 1, 1},
		{"Metadata v8 is header v1", kmsg.NewPtrMetadataRequest(), 8, 1},
		{"Metadata v9 is flexible, header v2", kmsg.NewPtrMetadataRequest(), 9, 2},
		{"Produce v3", kmsg.NewPtrProduceRequest(), 3, 1},
		{"ApiVersions v3 is header v2", kmsg.NewPtrApiVersionsRequest(), 3, 2},
		{"mirror request is header v2", &ListMirrorsRequest{}, 0, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if hv := RequestHeaderVersion(c.req.Key(), c.version); hv != c.wantHeader {
				t.Fatalf("RequestHeaderVersion = %d, want %d", hv, c.wantHeader)
			}
			c.req.SetVersion(c.version)
			id := "client-1"
			frame := encodeRequest(c.req, 77, &id)
			h, got, err := ParseRequest(frame, reg)
			if err != nil {
				t.Fatal(err)
			}
			want := RequestHeader{APIKey: c.req.Key(), APIVersion: c.version, CorrelationID: 77}
			if c.wantHeader > 0 {
				want.ClientID = &id
			}
			if !reflect.DeepEqual(h, want) {
				t.Fatalf("header = %+v (client %v), want %+v", h, h.ClientID, want)
			}
			if got.GetVersion() != c.version || reflect.TypeOf(got) != reflect.TypeOf(c.req) {
				t.Fatalf("request %T v%d", got, got.GetVersion())
			}
		})
	}
}

func TestParseRequestNullClientIDAndHeaderTags(t *testing.T) {
	reg := fullRegistry()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	frame := encodeRequest(req, 5, nil) // kmsg writes a null client id
	h, _, err := ParseRequest(frame, reg)
	if err != nil || h.ClientID != nil {
		t.Fatalf("null client id: %v %v", h.ClientID, err)
	}
	// Unknown header tags (flexible header v2) are skipped.
	hdr := binary.BigEndian.AppendUint16(nil, uint16(kmsg.Metadata))
	hdr = binary.BigEndian.AppendUint16(hdr, 12)
	hdr = binary.BigEndian.AppendUint32(hdr, 6)
	hdr = binary.BigEndian.AppendUint16(hdr, 1)
	hdr = append(hdr, 'c')
	hdr = AppendTags(hdr, Tags{{Key: 3, Value: []byte("xyz")}})
	frame = append(hdr, req.AppendTo(nil)...)
	h, got, err := ParseRequest(frame, reg)
	if err != nil || *h.ClientID != "c" || got.(*kmsg.MetadataRequest).Version != 12 {
		t.Fatalf("header with tags: %+v %v", h, err)
	}
}

func TestParseRequestUnknownAndUnsupported(t *testing.T) {
	reg := NewRegistry()
	reg.Add(int16(kmsg.ApiVersions), 0, 3)
	reg.Add(int16(kmsg.Metadata), 4, 12)

	// A key with no message type at all.
	frame := []byte{0x7f, 0x00, 0, 1, 0, 0, 0, 9}
	h, req, err := ParseRequest(frame, reg)
	if !errors.Is(err, ErrUnknownAPIKey) || req != nil || h.APIKey != 0x7f00 || h.CorrelationID != 9 {
		t.Fatalf("no such key: %+v %v %v", h, req, err)
	}
	// A key kmsg knows but the registry does not serve.
	frame = encodeRequest(kmsg.NewPtrProduceRequest(), 10, nil)
	if h, req, err = ParseRequest(frame, reg); !errors.Is(err, ErrUnknownAPIKey) || req != nil || h.CorrelationID != 10 {
		t.Fatalf("unserved key: %+v %v", h, err)
	}
	// A mirror key is unserved unless added.
	frame = encodeRequest(&CreateMirrorRequest{MirrorName: "m"}, 11, nil)
	if _, _, err = ParseRequest(frame, reg); !errors.Is(err, ErrUnknownAPIKey) {
		t.Fatalf("unserved mirror key: %v", err)
	}
	// A served key at a version below the range.
	m := kmsg.NewPtrMetadataRequest()
	m.SetVersion(2)
	frame = encodeRequest(m, 12, nil)
	h, req, err = ParseRequest(frame, reg)
	if !errors.Is(err, kerr.UnsupportedVersion) || req != nil || h.APIVersion != 2 || h.CorrelationID != 12 {
		t.Fatalf("unsupported version: %+v %v", h, err)
	}
	// ApiVersions at a version newer than served: the header (flexible, v2)
	// still parses, so the server can answer with the v0 fallback body.
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(4)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "kgo", "1.0"
	id := "cli"
	frame = encodeRequest(av, 13, &id)
	h, req, err = ParseRequest(frame, reg)
	if !errors.Is(err, kerr.UnsupportedVersion) || req != nil || h.CorrelationID != 13 || h.ClientID == nil || *h.ClientID != "cli" {
		t.Fatalf("ApiVersions v4: %+v %v", h, err)
	}
	fallback := reg.UnsupportedApiVersionsResponse()
	if fallback.Version != 0 || fallback.ErrorCode != kerr.UnsupportedVersion.Code || len(fallback.ApiKeys) != 2 {
		t.Fatalf("fallback = %+v", fallback)
	}
}

func TestParseRequestMalformed(t *testing.T) {
	reg := fullRegistry()
	id := "c"
	good := encodeRequest(kmsg.NewPtrMetadataRequest(), 1, &id)
	cases := map[string][]byte{
		"empty":        nil,
		"short header": good[:7],
		"client id too long": func() []byte {
			b := append([]byte{}, good[:8]...)
			return binary.BigEndian.AppendUint16(b, 100)
		}(),
	}
	for name, frame := range cases {
		if _, req, err := ParseRequest(frame, reg); !errors.Is(err, ErrMalformed) || req != nil {
			t.Errorf("%s: err %v req %v", name, err, req)
		}
	}
	// A body that does not decode.
	p := kmsg.NewPtrProduceRequest()
	p.SetVersion(9)
	p.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Records: []byte("abc")}}}}
	frame := encodeRequest(p, 2, &id)
	_, req, err := ParseRequest(frame[:len(frame)-3], reg)
	if !errors.Is(err, ErrMalformed) || req != nil {
		t.Errorf("truncated body: %v", err)
	}
	// Our own strict decoders: a mirror request with a trailing byte.
	frame = append(encodeRequest(&DeleteMirrorRequest{MirrorName: "m"}, 3, &id), 0)
	if _, _, err := ParseRequest(frame, reg); !errors.Is(err, ErrMalformed) {
		t.Errorf("mirror body with trailing byte: %v", err)
	}
}

func TestParseRequestBodyDecodes(t *testing.T) {
	reg := fullRegistry()
	p := kmsg.NewPtrProduceRequest()
	p.SetVersion(9)
	p.Acks = -1
	p.TimeoutMillis = 1500
	p.Topics = []kmsg.ProduceRequestTopic{{Topic: "orders", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 3, Records: []byte("recs")}}}}
	frame := encodeRequest(p, 2, nil)
	_, req, err := ParseRequest(frame, reg)
	if err != nil {
		t.Fatal(err)
	}
	got := req.(*kmsg.ProduceRequest)
	if got.Acks != -1 || got.TimeoutMillis != 1500 || got.Topics[0].Topic != "orders" ||
		got.Topics[0].Partitions[0].Partition != 3 || !bytes.Equal(got.Topics[0].Partitions[0].Records, []byte("recs")) {
		t.Fatalf("decoded %+v", got)
	}
	// The mirror types decode through the same path.
	in := sampleMirrorMessages()[KeyDescribeMirrors-MinMirrorKey]
	_, req, err = ParseRequest(encodeRequest(in, 4, nil), reg)
	if err != nil || !reflect.DeepEqual(req, in) {
		t.Fatalf("DescribeMirrors through ParseRequest: %+v, %v", req, err)
	}
}
