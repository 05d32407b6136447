package controller

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
)

// testConfig loads a configuration as the server would with no file and
// these overrides.
func testConfig(t testing.TB, overrides map[string]string) *config.Config {
	t.Helper()
	cfg, _, err := config.Load("", nil, overrides)
	if err != nil {
		t.Fatalf("load config: %v", err)
	}
	return cfg
}

// apply replays recs onto img as one log entry and returns the result; a
// record the replay rules refuse fails the test, so every decision's
// records are checked for validity wherever a test applies them.
func apply(t testing.TB, img *metadata.Image, recs ...metadata.Record) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(img)
	for _, r := range recs {
		if err := d.Replay(r, img.Offset()+1); err != nil {
			t.Fatalf("replay %T: %v", r, err)
		}
	}
	return d.Apply()
}

// broker describes a registered broker for test images.
type broker struct {
	id       int32
	rack     string
	fenced   bool
	shutdown bool
}

// brokerRecords registers brokers with epoch 10+id.
func brokerRecords(bs ...broker) []metadata.Record {
	var out []metadata.Record
	for _, b := range bs {
		out = append(out, &metadata.RegisterBrokerRecord{BrokerRegistration: metadata.BrokerRegistration{
			ID: b.id, IncarnationID: metadata.Uuid{0: 0x11, 15: byte(b.id)}, Epoch: 10 + int64(b.id),
			Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "h", Port: uint16(9000 + b.id)}},
			Rack:      b.rack, Fenced: b.fenced, InControlledShutdown: b.shutdown,
		}})
	}
	return out
}

// cluster returns an image with these brokers.
func cluster(t testing.TB, bs ...broker) *metadata.Image {
	t.Helper()
	return apply(t, metadata.EmptyImage(), brokerRecords(bs...)...)
}

// upBrokers returns n unfenced brokers with ids 1..n.
func upBrokers(n int) []broker {
	var out []broker
	for i := 1; i <= n; i++ {
		out = append(out, broker{id: int32(i)})
	}
	return out
}

// testView returns a deterministic view: seeded randomness and topic ids
// 0xAB00..01, 0xAB00..02, ...
func testView(t testing.TB, img *metadata.Image, cfg *config.Config) *view {
	t.Helper()
	if cfg == nil {
		cfg = testConfig(t, nil)
	}
	n := byte(0)
	return &view{
		img: img, cfg: cfg, rnd: rand.New(rand.NewPCG(1, 2)), nodeID: 1,
		newID: func() metadata.Uuid { n++; return metadata.Uuid{0: 0xAB, 15: n} },
	}
}

// partition is a shorthand for a partition state.
func partition(leader int32, replicas, isr []int32) metadata.PartitionState {
	return metadata.PartitionState{Replicas: replicas, ISR: isr, Leader: leader}
}

// withTopic adds a topic with these partitions (by index) to img.
func withTopic(t testing.TB, img *metadata.Image, name string, id metadata.Uuid, parts ...metadata.PartitionState) *metadata.Image {
	t.Helper()
	recs := []metadata.Record{&metadata.TopicRecord{Name: name, ID: id}}
	for i, p := range parts {
		recs = append(recs, &metadata.PartitionRecord{TopicID: id, Partition: int32(i), PartitionState: p})
	}
	return apply(t, img, recs...)
}

// withConfig sets configs on a resource of img.
func withConfig(t testing.TB, img *metadata.Image, res metadata.ConfigResource, kv ...string) *metadata.Image {
	t.Helper()
	var recs []metadata.Record
	for i := 0; i+1 < len(kv); i += 2 {
		recs = append(recs, metadata.SetConfig(res, kv[i], kv[i+1]))
	}
	return apply(t, img, recs...)
}

func topicRes(name string) metadata.ConfigResource {
	return metadata.ConfigResource{Type: metadata.ResourceTopic, Name: name}
}

func brokerRes(name string) metadata.ConfigResource {
	return metadata.ConfigResource{Type: metadata.ResourceBroker, Name: name}
}

// wantCode fails unless got is want's code; msgPart, when set, must appear
// in msg.
func wantCode(t testing.TB, what string, got int16, msg *string, want *kerr.Error, msgPart string) {
	t.Helper()
	wantC := int16(0)
	if want != nil {
		wantC = want.Code
	}
	if got != wantC {
		m := ""
		if msg != nil {
			m = *msg
		}
		t.Fatalf("%s: error code %d (%v, %q), want %d (%v)", what, got, kerr.ErrorForCode(got), m, wantC, want)
	}
	if msgPart != "" && (msg == nil || !strings.Contains(*msg, msgPart)) {
		t.Fatalf("%s: message %v does not contain %q", what, strp(msg), msgPart)
	}
}

func strp(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func ptr[T any](v T) *T { return &v }

// wantErr fails unless err wraps want (nil: no error).
func wantErr(t testing.TB, what string, err error, want *kerr.Error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s: unexpected error %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: error %v, want %v", what, err, want)
	}
}

// createReq builds a CreateTopics request at version v.
func createReq(v int16, topics ...kmsg.CreateTopicsRequestTopic) *kmsg.CreateTopicsRequest {
	r := kmsg.NewPtrCreateTopicsRequest()
	r.Version = v
	r.Topics = topics
	return r
}

// newTopic is a CreateTopics topic entry.
func newTopic(name string, partitions int32, rf int16, kv ...string) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = kv[i], ptr(kv[i+1])
		t.Configs = append(t.Configs, c)
	}
	return t
}
