package controller

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
)

func assignment(p int32, replicas ...int32) kmsg.CreateTopicsRequestTopicReplicaAssignment {
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = p, replicas
	return a
}

func manualTopic(name string, as ...kmsg.CreateTopicsRequestTopicReplicaAssignment) kmsg.CreateTopicsRequestTopic {
	t := newTopic(name, -1, -1)
	t.ReplicaAssignment = as
	return t
}

func TestCreateTopicsRejects(t *testing.T) {
	three := cluster(t, upBrokers(3)...)
	oneFenced := cluster(t, broker{id: 1}, broker{id: 2}, broker{id: 3, fenced: true})
	allFenced := cluster(t, broker{id: 1, fenced: true}, broker{id: 2, shutdown: true})
	withDotted := withTopic(t, three, "a.b", metadata.Uuid{0: 1, 15: 1}, partition(1, []int32{1}, []int32{1}))
	for _, tc := range []struct {
		name  string
		img   *metadata.Image
		topic kmsg.CreateTopicsRequestTopic
		want  *kerr.Error
		msg   string
	}{
		{"empty name", three, newTopic("", 1, 1), kerr.InvalidTopicException, "empty string"},
		{"dot", three, newTopic(".", 1, 1), kerr.InvalidTopicException, "'.' is not allowed"},
		{"dot dot", three, newTopic("..", 1, 1), kerr.InvalidTopicException, "'..' is not allowed"},
		{"too long", three, newTopic(strings.Repeat("x", 250), 1, 1), kerr.InvalidTopicException, "limit is 249"},
		{"bad char", three, newTopic("a/b", 1, 1), kerr.InvalidTopicException, "character"},
		{"space", three, newTopic("a b", 1, 1), kerr.InvalidTopicException, "character"},
		{"metadata log name", three, newTopic("__cluster_metadata", 1, 1), kerr.InvalidTopicException, "metadata log"},
		{"internal by client", three, newTopic(OffsetsTopic, 1, 1), kerr.InvalidRequest, "internal topic"},
		{"exists", withDotted, newTopic("a.b", 1, 1), kerr.TopicAlreadyExists, "already exists"},
		{"collision", withDotted, newTopic("a_b", 1, 1), kerr.InvalidTopicException, "collides with existing topic: a.b"},
		{"rf zero", three, newTopic("t", 1, 0), kerr.InvalidReplicationFactor, "larger than 0"},
		{"rf below -1", three, newTopic("t", 1, -2), kerr.InvalidReplicationFactor, ""},
		{"rf above brokers", cluster(t, broker{id: 1}), newTopic("t", 1, 3), kerr.InvalidReplicationFactor, "replication factor 3 larger than available brokers 1"},
		{"rf above unfenced brokers", oneFenced, newTopic("t", 1, 3), kerr.InvalidReplicationFactor, "larger than available brokers 2"},
		{"no brokers", metadata.EmptyImage(), newTopic("t", 1, -1), kerr.InvalidReplicationFactor, "available brokers 0"},
		{"partitions zero", three, newTopic("t", 0, 1), kerr.InvalidPartitions, "non-positive"},
		{"partitions below -1", three, newTopic("t", -5, 1), kerr.InvalidPartitions, ""},
		{"too many partitions", three, newTopic("t", maxPartitionsPerRequest+1, 1), kerr.InvalidPartitions, "at most"},
		{"unknown config", three, newTopic("t", 1, 1, "no.such.config", "1"), kerr.InvalidConfig, "no.such.config"},
		{"bad config value", three, newTopic("t", 1, 1, "retention.ms", "soon"), kerr.InvalidConfig, "retention.ms"},
		{"config below minimum", three, newTopic("t", 1, 1, "segment.bytes", "12"), kerr.InvalidConfig, "segment.bytes"},
		{"mirror.name", three, newTopic("t", 1, 1, "mirror.name", "m"), kerr.InvalidConfig, "mirror.name is managed by the mirror APIs"},
		{"config twice", three, newTopic("t", 1, 1, "retention.ms", "1", "retention.ms", "2"), kerr.InvalidConfig, "more than once"},
		{"manual with rf", three, func() kmsg.CreateTopicsRequestTopic {
			x := manualTopic("t", assignment(0, 1))
			x.ReplicationFactor = 1
			return x
		}(), kerr.InvalidRequest, "replication factor was not set to -1"},
		{"manual with partitions", three, func() kmsg.CreateTopicsRequestTopic {
			x := manualTopic("t", assignment(0, 1))
			x.NumPartitions = 1
			return x
		}(), kerr.InvalidRequest, "numPartitions was not set to -1"},
		{"manual partition twice", three, manualTopic("t", assignment(0, 1), assignment(0, 2)), kerr.InvalidReplicaAssignment, "multiple"},
		{"manual empty", three, manualTopic("t", assignment(0)), kerr.InvalidReplicaAssignment, "empty replica list"},
		{"manual unknown broker", three, manualTopic("t", assignment(0, 1, 9)), kerr.InvalidReplicaAssignment, "broker 9, but no such broker"},
		{"manual broker twice", three, manualTopic("t", assignment(0, 2, 2)), kerr.InvalidReplicaAssignment, "more than once"},
		{"manual rf differs", three, manualTopic("t", assignment(0, 1, 2), assignment(1, 3)), kerr.InvalidReplicaAssignment, "not consistent"},
		{"manual gap", three, manualTopic("t", assignment(0, 1), assignment(2, 2)), kerr.InvalidReplicaAssignment, "consecutive"},
		{"manual all fenced", allFenced, manualTopic("t", assignment(0, 1, 2)), kerr.InvalidReplicaAssignment, "fenced or in controlled shutdown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, resp := decideCreateTopics(testView(t, tc.img, nil), createReq(7, tc.topic), false)
			if len(recs) != 0 {
				t.Fatalf("records for a refused topic: %v", recs)
			}
			if len(resp.Topics) != 1 || resp.Topics[0].Topic != tc.topic.Topic {
				t.Fatalf("response topics %+v", resp.Topics)
			}
			r := resp.Topics[0]
			wantCode(t, tc.name, r.ErrorCode, r.ErrorMessage, tc.want, tc.msg)
			if r.NumPartitions != -1 || r.ReplicationFactor != -1 || r.TopicID != [16]byte{} {
				t.Fatalf("failed topic reports partitions %d rf %d id %x", r.NumPartitions, r.ReplicationFactor, r.TopicID)
			}
		})
	}
}

func TestCreateTopicsPlacesAndRecords(t *testing.T) {
	img := cluster(t, upBrokers(3)...)
	v := testView(t, img, testConfig(t, map[string]string{"num.partitions": "4", "default.replication.factor": "2"}))
	recs, resp := decideCreateTopics(v, createReq(7,
		newTopic("orders", 6, 3, "retention.ms", "1000", "cleanup.policy", "compact"),
		newTopic("defaults", -1, -1),
	), false)
	for _, r := range resp.Topics {
		wantCode(t, r.Topic, r.ErrorCode, r.ErrorMessage, nil, "")
	}
	// Records: per topic the TopicRecord, its configs, then partitions.
	if _, ok := recs[0].(*metadata.TopicRecord); !ok {
		t.Fatalf("first record %T", recs[0])
	}
	if c, ok := recs[1].(*metadata.ConfigRecord); !ok || c.Name != "cleanup.policy" || c.Value != "compact" {
		t.Fatalf("second record %+v", recs[1])
	}
	after := apply(t, img, recs...)

	orders, ok := after.Topic("orders")
	if !ok || orders.ID != metadata.Uuid(resp.Topics[0].TopicID) || orders.ID.IsZero() {
		t.Fatalf("orders not created with the answered id")
	}
	if len(orders.Partitions) != 6 || resp.Topics[0].NumPartitions != 6 || resp.Topics[0].ReplicationFactor != 3 {
		t.Fatalf("orders: %d partitions, response %d/%d", len(orders.Partitions), resp.Topics[0].NumPartitions, resp.Topics[0].ReplicationFactor)
	}
	leaders := map[int32]int{}
	for _, p := range orders.PartitionIDs() {
		st := orders.Partitions[p]
		if len(st.Replicas) != 3 || !slices.Equal(st.ISR, st.Replicas) || st.Leader != st.Replicas[0] || st.LeaderEpoch != 0 {
			t.Fatalf("partition %d: %+v", p, st)
		}
		leaders[st.Leader]++
	}
	for b := int32(1); b <= 3; b++ {
		if leaders[b] != 2 {
			t.Fatalf("leaders not spread evenly: %v", leaders)
		}
	}
	if got := after.Configs(topicRes("orders")); got["retention.ms"] != "1000" || got["cleanup.policy"] != "compact" || len(got) != 2 {
		t.Fatalf("orders configs %v", got)
	}

	def, _ := after.Topic("defaults")
	if len(def.Partitions) != 4 || len(def.Partitions[0].Replicas) != 2 {
		t.Fatalf("defaults: %d partitions of rf %d, want 4 of 2", len(def.Partitions), len(def.Partitions[0].Replicas))
	}

	// v5+: effective configs with sources.
	var retention, segment *kmsg.CreateTopicsResponseTopicConfig
	for i := range resp.Topics[0].Configs {
		switch c := &resp.Topics[0].Configs[i]; c.Name {
		case "retention.ms":
			retention = c
		case "segment.bytes":
			segment = c
		}
	}
	if retention == nil || strp(retention.Value) != "1000" || retention.Source != int8(config.SourceDynamicTopic) {
		t.Fatalf("retention.ms in response: %+v", retention)
	}
	if segment == nil || strp(segment.Value) != "1073741824" || segment.Source != int8(config.SourceDefault) {
		t.Fatalf("segment.bytes in response: %+v", segment)
	}
}

func TestCreateTopicsResponseByVersion(t *testing.T) {
	img := cluster(t, upBrokers(1)...)
	for _, v := range []int16{0, 4, 5, 7} {
		_, resp := decideCreateTopics(testView(t, img, nil), createReq(v, newTopic("t", 1, 1)), false)
		r := resp.Topics[0]
		if resp.Version != v {
			t.Fatalf("v%d: response version %d", v, resp.Version)
		}
		if got := len(r.Configs) > 0; got != (v >= 5) {
			t.Fatalf("v%d: configs present %v", v, got)
		}
		// The response encodes and decodes at its version.
		back := kmsg.NewPtrCreateTopicsResponse()
		back.Version = v
		if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Fatalf("v%d: response does not round-trip: %v", v, err)
		}
		if gotID := back.Topics[0].TopicID != [16]byte{}; gotID != (v >= 7) {
			t.Fatalf("v%d: topic id on the wire %v", v, gotID)
		}
	}
}

func TestCreateTopicsDuplicatesAndCollisionsInOneRequest(t *testing.T) {
	img := cluster(t, upBrokers(1)...)
	recs, resp := decideCreateTopics(testView(t, img, nil), createReq(7,
		newTopic("dup", 1, 1), newTopic("x.y", 1, 1), newTopic("dup", 1, 1), newTopic("x_y", 1, 1), newTopic("ok", 1, 1)), false)
	if len(resp.Topics) != 4 {
		t.Fatalf("want one result per distinct name, got %d", len(resp.Topics))
	}
	wantCode(t, "dup", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.InvalidRequest, "Duplicate topic name")
	wantCode(t, "x.y", resp.Topics[1].ErrorCode, nil, nil, "")
	wantCode(t, "x_y", resp.Topics[2].ErrorCode, resp.Topics[2].ErrorMessage, kerr.InvalidTopicException, "collides")
	wantCode(t, "ok", resp.Topics[3].ErrorCode, nil, nil, "")
	after := apply(t, img, recs...)
	if after.NumTopics() != 2 {
		t.Fatalf("%d topics created, want 2", after.NumTopics())
	}
}

func TestCreateTopicsManualAssignment(t *testing.T) {
	img := cluster(t, broker{id: 1}, broker{id: 2, fenced: true}, broker{id: 3})
	recs, resp := decideCreateTopics(testView(t, img, nil), createReq(7,
		manualTopic("m", assignment(1, 3, 1), assignment(0, 2, 3))), false)
	wantCode(t, "m", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, nil, "")
	after := apply(t, img, recs...)
	m, _ := after.Topic("m")
	p0, p1 := m.Partitions[0], m.Partitions[1]
	// A fenced replica is assigned but not in the ISR and does not lead.
	if !slices.Equal(p0.Replicas, []int32{2, 3}) || !slices.Equal(p0.ISR, []int32{3}) || p0.Leader != 3 {
		t.Fatalf("p0 %+v", p0)
	}
	if !slices.Equal(p1.Replicas, []int32{3, 1}) || !slices.Equal(p1.ISR, []int32{3, 1}) || p1.Leader != 3 {
		t.Fatalf("p1 %+v", p1)
	}
}

func TestCreateTopicsInternal(t *testing.T) {
	img := cluster(t, upBrokers(2)...)
	cfg := testConfig(t, map[string]string{"offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "5"})
	recs, resp := decideCreateTopics(testView(t, img, cfg), internalTopicRequest(OffsetsTopic, 0, map[string]string{"cleanup.policy": "compact"}), true)
	wantCode(t, "internal", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, nil, "")
	after := apply(t, img, recs...)
	tp, ok := after.Topic(OffsetsTopic)
	if !ok || len(tp.Partitions) != 5 || len(tp.Partitions[0].Replicas) != 2 {
		t.Fatalf("internal topic: %+v (want 5 partitions of rf min(3, 2 live))", tp)
	}
	// Again: success with the existing id, no records.
	recs, resp = decideCreateTopics(testView(t, after, cfg), internalTopicRequest(OffsetsTopic, 0, nil), true)
	if len(recs) != 0 || resp.Topics[0].ErrorCode != 0 || metadata.Uuid(resp.Topics[0].TopicID) != tp.ID || resp.Topics[0].NumPartitions != 5 {
		t.Fatalf("second internal creation: %d records, %+v", len(recs), resp.Topics[0])
	}
	// The internal path may set internal configs; clients may not.
	_, resp = decideCreateTopics(testView(t, after, cfg), createReq(7, newTopic("mirrored", 1, 1, "mirror.name", "m")), true)
	wantCode(t, "internal mirror.name", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, nil, "")
}
