package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

var apTopic = metadata.Uuid{0: 0xAF, 15: 1}

// apImage: brokers 1-3 up, 4 fenced, 5 shutting down (epochs 10+id);
// topic "t" partition 0 with replicas 1-5, ISR [1 2], leader 1 in leader
// epoch 3, partition epoch 5; partition 1 recovering after an unclean
// election (leader 2 alone).
func apImage(t testing.TB) *metadata.Image {
	img := cluster(t, broker{id: 1}, broker{id: 2}, broker{id: 3}, broker{id: 4, fenced: true}, broker{id: 5, shutdown: true})
	p0 := metadata.PartitionState{Replicas: []int32{1, 2, 3, 4, 5}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 3, PartitionEpoch: 5}
	p1 := metadata.PartitionState{Replicas: []int32{2, 3}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1, LeaderRecoveryState: metadata.Recovering}
	return withTopic(t, img, "t", apTopic, p0, p1)
}

// isrMember is a member of a proposed ISR with its broker epoch.
type isrMember struct {
	id    int32
	epoch int64
}

func m(id int32) isrMember { return isrMember{id, 10 + int64(id)} }

// apReq builds an AlterPartition request of one partition.
func apReq(version int16, from int32, fromEpoch int64, topic metadata.Uuid, partition, leaderEpoch, partitionEpoch int32, recovery metadata.LeaderRecoveryState, isr ...isrMember) *kmsg.AlterPartitionRequest {
	r := kmsg.NewPtrAlterPartitionRequest()
	r.Version, r.BrokerID, r.BrokerEpoch = version, from, fromEpoch
	t := kmsg.NewAlterPartitionRequestTopic()
	t.Topic, t.TopicID = "t", topic
	if topic != apTopic {
		t.Topic = "nope"
	}
	p := kmsg.NewAlterPartitionRequestTopicPartition()
	p.Partition, p.LeaderEpoch, p.PartitionEpoch, p.LeaderRecoveryState = partition, leaderEpoch, partitionEpoch, int8(recovery)
	for _, x := range isr {
		p.NewISR = append(p.NewISR, x.id)
		e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
		e.BrokerID, e.BrokerEpoch = x.id, x.epoch
		p.NewEpochISR = append(p.NewEpochISR, e)
	}
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func TestAlterPartitionValidation(t *testing.T) {
	ok := metadata.Recovered
	rec := metadata.Recovering
	for _, tc := range []struct {
		name     string
		req      *kmsg.AlterPartitionRequest
		top      *kerr.Error // top-level error
		code     *kerr.Error // the partition's error
		isr      []int32     // the ISR after (when accepted)
		recovery metadata.LeaderRecoveryState
		changed  bool
	}{
		{name: "expand", req: apReq(3, 1, 11, apTopic, 0, 3, 5, ok, m(1), m(2), m(3)), isr: []int32{1, 2, 3}, changed: true},
		{name: "shrink", req: apReq(3, 1, 11, apTopic, 0, 3, 5, ok, m(1)), isr: []int32{1}, changed: true},
		{name: "no change", req: apReq(3, 1, 11, apTopic, 0, 3, 5, ok, m(1), m(2)), isr: []int32{1, 2}},
		{name: "v0 names topics and has no epochs", req: func() *kmsg.AlterPartitionRequest {
			r := apReq(0, 1, 11, apTopic, 0, 3, 5, ok, m(1), m(2), m(3))
			return r
		}(), isr: []int32{1, 2, 3}, changed: true},
		{name: "stale sender epoch", req: apReq(3, 1, 99, apTopic, 0, 3, 5, ok, m(1)), top: kerr.StaleBrokerEpoch},
		{name: "older leader epoch", req: apReq(3, 1, 11, apTopic, 0, 2, 5, ok, m(1)), code: kerr.FencedLeaderEpoch},
		{name: "newer leader epoch: the controller lags", req: apReq(3, 1, 11, apTopic, 0, 4, 5, ok, m(1)), code: kerr.NotController},
		{name: "older partition epoch", req: apReq(3, 1, 11, apTopic, 0, 3, 4, ok, m(1)), code: kerr.InvalidUpdateVersion},
		{name: "newer partition epoch", req: apReq(3, 1, 11, apTopic, 0, 3, 6, ok, m(1)), code: kerr.NotController},
		{name: "not the leader", req: apReq(3, 2, 12, apTopic, 0, 3, 5, ok, m(1), m(2)), code: kerr.InvalidRequest},
		{name: "ISR without the leader", req: apReq(3, 1, 11, apTopic, 0, 3, 5, ok, m(2), m(3)), code: kerr.InvalidRequest},
		{name: "ISR with a non-replica", req: apReq(3, 1, 11, apTopic, 0, 3, 5, ok, m(1), m(6)), code: kerr.InvalidRequest},
		{name: "ISR with a duplicate", req: apReq(3, 1, 11, apTopic, 0, 3, 5, ok, m(1), m(2), m(2)), code: kerr.InvalidRequest},
		{name: "fenced member", req: apReq(3, 1, 11, apTopic, 0, 3, 5, ok, m(1), m(4)), code: kerr.IneligibleReplica},
		{name: "fenced member, v0", req: apReq(0, 1, 11, apTopic, 0, 3, 5, ok, m(1), m(4)), code: kerr.OperationNotAttempted},
		{name: "shutting-down member", req: apReq(3, 1, 11, apTopic, 0, 3, 5, ok, m(1), m(5)), code: kerr.IneligibleReplica},
		{name: "member in a stale broker epoch", req: apReq(3, 1, 11, apTopic, 0, 3, 5, ok, m(1), isrMember{3, 99}), code: kerr.IneligibleReplica},
		{name: "member epoch unknown", req: apReq(3, 1, 11, apTopic, 0, 3, 5, ok, m(1), isrMember{3, -1}), isr: []int32{1, 3}, changed: true},
		{name: "v2 carries no member epochs", req: apReq(2, 1, 11, apTopic, 0, 3, 5, ok, m(1), isrMember{3, 99}), isr: []int32{1, 3}, changed: true},
		{name: "unknown topic id", req: apReq(3, 1, 11, metadata.Uuid{1}, 0, 3, 5, ok, m(1)), code: kerr.UnknownTopicID},
		{name: "unknown topic name, v1", req: apReq(1, 1, 11, metadata.Uuid{1}, 0, 3, 5, ok, m(1)), code: kerr.UnknownTopicOrPartition},
		{name: "unknown partition", req: apReq(3, 1, 11, apTopic, 9, 3, 5, ok, m(1)), code: kerr.UnknownTopicOrPartition},
		{name: "recovered to recovering", req: apReq(3, 1, 11, apTopic, 0, 3, 5, rec, m(1)), code: kerr.InvalidRequest},
		{name: "recovering with followers", req: apReq(3, 2, 12, apTopic, 1, 1, 1, rec, m(2), m(3)), code: kerr.InvalidRequest},
		{name: "recovery ends", req: apReq(3, 2, 12, apTopic, 1, 1, 1, ok, m(2)), isr: []int32{2}, recovery: ok, changed: true},
		{name: "recovery ends with a follower", req: apReq(3, 2, 12, apTopic, 1, 1, 1, ok, m(2), m(3)), isr: []int32{2, 3}, recovery: ok, changed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := apImage(t)
			recs, resp := decideAlterPartition(testView(t, img, nil), tc.req)
			wantCode(t, "top-level", resp.ErrorCode, nil, tc.top, "")
			if tc.top != nil {
				if len(recs) != 0 {
					t.Fatalf("records for a refused request: %v", recs)
				}
				return
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("response shape %+v", resp.Topics)
			}
			rp := resp.Topics[0].Partitions[0]
			wantCode(t, "partition", rp.ErrorCode, nil, tc.code, "")
			if tc.code != nil {
				if len(recs) != 0 {
					t.Fatalf("records for a refused change: %v", recs)
				}
				return
			}
			if (len(recs) == 1) != tc.changed {
				t.Fatalf("%d records, want a change: %v", len(recs), tc.changed)
			}
			after := apply(t, img, recs...)
			top, _ := after.TopicByID(apTopic)
			st := top.Partitions[tc.req.Topics[0].Partitions[0].Partition]
			before, _ := apImageTopic(t).Partition(tc.req.Topics[0].Partitions[0].Partition)
			if !slices.Equal(st.ISR, tc.isr) || st.LeaderRecoveryState != tc.recovery || st.Leader != before.Leader || st.LeaderEpoch != before.LeaderEpoch {
				t.Fatalf("after: %+v, want isr %v recovery %v, same leader and leader epoch as %+v", st, tc.isr, tc.recovery, before)
			}
			// The response describes the state the metadata now holds.
			if rp.LeaderID != st.Leader || rp.LeaderEpoch != st.LeaderEpoch || !slices.Equal(rp.ISR, st.ISR) ||
				rp.PartitionEpoch != st.PartitionEpoch || rp.LeaderRecoveryState != int8(st.LeaderRecoveryState) {
				t.Fatalf("response %+v, metadata %+v", rp, st)
			}
			wantEpoch := before.PartitionEpoch
			if tc.changed {
				wantEpoch++
			}
			if st.PartitionEpoch != wantEpoch {
				t.Fatalf("partition epoch %d, want %d", st.PartitionEpoch, wantEpoch)
			}
		})
	}
}

func apImageTopic(t testing.TB) *metadata.TopicImage {
	top, _ := apImage(t).TopicByID(apTopic)
	return top
}

func TestAlterPartitionManyPartitions(t *testing.T) {
	img := apImage(t)
	req := apReq(3, 1, 11, apTopic, 0, 3, 5, metadata.Recovered, m(1), m(2), m(3))
	// The same partition twice, and another led by someone else.
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, req.Topics[0].Partitions[0], apReq(3, 1, 11, apTopic, 1, 1, 1, metadata.Recovered, m(2)).Topics[0].Partitions[0])
	recs, resp := decideAlterPartition(testView(t, img, nil), req)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	codes := []int16{}
	for _, p := range resp.Topics[0].Partitions {
		codes = append(codes, p.ErrorCode)
	}
	if !slices.Equal(codes, []int16{0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code}) {
		t.Fatalf("codes %v", codes)
	}
	apply(t, img, recs...)
}

func TestInternalTopicMinISRCappedByReplicationFactor(t *testing.T) {
	img := cluster(t, upBrokers(2)...)
	cfg := testConfig(t, map[string]string{"transaction.state.log.replication.factor": "3"})
	v := testView(t, img, cfg)
	req := internalTopicRequest(TransactionStateTopic, 1, map[string]string{"min.insync.replicas": "2", "cleanup.policy": "compact"})
	recs, resp := decideCreateTopics(v, req, true)
	wantCode(t, "create", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, nil, "")
	if resp.Topics[0].ReplicationFactor != 2 {
		t.Fatalf("replication factor %d, want min(3, 2 live brokers)", resp.Topics[0].ReplicationFactor)
	}
	after := apply(t, img, recs...)
	if v, _ := after.Config(topicRes(TransactionStateTopic), "min.insync.replicas"); v != "2" {
		t.Fatalf("min.insync.replicas %q with two replicas", v)
	}
	img1 := cluster(t, upBrokers(1)...)
	recs, _ = decideCreateTopics(testView(t, img1, cfg), internalTopicRequest(TransactionStateTopic, 1, map[string]string{"min.insync.replicas": "2"}), true)
	after = apply(t, img1, recs...)
	if v, _ := after.Config(topicRes(TransactionStateTopic), "min.insync.replicas"); v != "1" {
		t.Fatalf("min.insync.replicas %q with one replica, want it capped to 1", v)
	}
	// A client's topic is not touched.
	recs, _ = decideCreateTopics(testView(t, img1, cfg), createReq(7, newTopic("c", 1, 1, "min.insync.replicas", "2")), false)
	after = apply(t, img1, recs...)
	if v, _ := after.Config(topicRes("c"), "min.insync.replicas"); v != "2" {
		t.Fatalf("a client topic's min.insync.replicas became %q", v)
	}
}
