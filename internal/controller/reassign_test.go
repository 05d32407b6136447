package controller

import (
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// reassignReq builds an AlterPartitionReassignments request (v1); a nil
// target cancels.
func reassignReq(allowRFChange bool, topic string, targets map[int32][]int32) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.Version = 1
	req.AllowReplicationFactorChange = allowRFChange
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	for _, p := range slices.Sorted(maps.Keys(targets)) {
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = p, targets[p]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// reassign decides req on img, checks every partition's code against want
// (nil: success) and returns the image after the records.
func reassign(t *testing.T, img *metadata.Image, req *kmsg.AlterPartitionAssignmentsRequest, want map[int32]*kerr.Error) *metadata.Image {
	t.Helper()
	recs, resp := decideAlterPartitionReassignments(testView(t, img, nil), req)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			wantCode(t, "partition", rp.ErrorCode, rp.ErrorMessage, want[rp.Partition], "")
		}
	}
	return apply(t, img, recs...)
}

func stateOf(t *testing.T, img *metadata.Image, topic string, p int32) metadata.PartitionState {
	t.Helper()
	tp, ok := img.Topic(topic)
	if !ok {
		t.Fatalf("no topic %s", topic)
	}
	st, ok := tp.Partition(p)
	if !ok {
		t.Fatalf("no partition %s-%d", topic, p)
	}
	return st
}

func wantState(t *testing.T, what string, st metadata.PartitionState, replicas, adding, removing, isr []int32, leader int32) {
	t.Helper()
	if !slices.Equal(st.Replicas, replicas) || !slices.Equal(st.AddingReplicas, adding) || !slices.Equal(st.RemovingReplicas, removing) ||
		!slices.Equal(st.ISR, isr) || st.Leader != leader {
		t.Fatalf("%s: replicas %v adding %v removing %v isr %v leader %d; want %v %v %v %v %d", what,
			st.Replicas, st.AddingReplicas, st.RemovingReplicas, st.ISR, st.Leader, replicas, adding, removing, isr, leader)
	}
}

// TestReassignmentLifecycle moves a partition from broker 1 to brokers 2
// and 3: the targets are added as followers, the reassignment completes
// only when both are in the ISR, and then broker 1 leaves and leadership
// moves to broker 2 in a new leader epoch.
func TestReassignmentLifecycle(t *testing.T) {
	img := withTopic(t, cluster(t, upBrokers(3)...), "t", metadata.Uuid{1}, partition(1, []int32{1}, []int32{1}))
	img = reassign(t, img, reassignReq(true, "t", map[int32][]int32{0: {2, 3}}), nil)
	st := stateOf(t, img, "t", 0)
	wantState(t, "started", st, []int32{2, 3, 1}, []int32{2, 3}, []int32{1}, []int32{1}, 1)
	epoch := st.LeaderEpoch

	if recs := reassignmentCompletions(img); len(recs) != 0 {
		t.Fatalf("completed before the targets caught up: %+v", recs)
	}
	// Broker 2 joins the ISR: not complete while 3 is missing.
	img = apply(t, img, &metadata.PartitionChangeRecord{TopicID: metadata.Uuid{1}, Partition: 0, ISR: []int32{1, 2}})
	if recs := reassignmentCompletions(img); len(recs) != 0 {
		t.Fatalf("completed with broker 3 out of the ISR: %+v", recs)
	}
	img = apply(t, img, &metadata.PartitionChangeRecord{TopicID: metadata.Uuid{1}, Partition: 0, ISR: []int32{1, 2, 3}})
	img = apply(t, img, reassignmentCompletions(img)...)
	st = stateOf(t, img, "t", 0)
	wantState(t, "completed", st, []int32{2, 3}, nil, nil, []int32{2, 3}, 2)
	if st.LeaderEpoch <= epoch {
		t.Fatalf("leader epoch %d after the leader moved, was %d", st.LeaderEpoch, epoch)
	}
	if recs := reassignmentCompletions(img); len(recs) != 0 {
		t.Fatalf("completed twice: %+v", recs)
	}
}

// TestReassignmentCancelAndReplace: cancelling returns to the original
// replicas (dropping a target that had joined the ISR); a new target
// replaces an ongoing one, counted from the original replicas; cancelling
// nothing is NO_REASSIGNMENT_IN_PROGRESS.
func TestReassignmentCancelAndReplace(t *testing.T) {
	id := metadata.Uuid{1}
	img := withTopic(t, cluster(t, upBrokers(4)...), "t", id, partition(1, []int32{1, 2}, []int32{1, 2}))
	img = reassign(t, img, reassignReq(true, "t", map[int32][]int32{0: {3, 4}}), nil)
	img = apply(t, img, &metadata.PartitionChangeRecord{TopicID: id, Partition: 0, ISR: []int32{1, 2, 3}})

	replaced := reassign(t, img, reassignReq(true, "t", map[int32][]int32{0: {1, 4}}), nil)
	wantState(t, "replaced", stateOf(t, replaced, "t", 0), []int32{1, 4, 2}, []int32{4}, []int32{2}, []int32{1, 2}, 1)

	img = reassign(t, img, reassignReq(true, "t", map[int32][]int32{0: nil}), nil)
	wantState(t, "cancelled", stateOf(t, img, "t", 0), []int32{1, 2}, nil, nil, []int32{1, 2}, 1)

	reassign(t, img, reassignReq(true, "t", map[int32][]int32{0: nil}), map[int32]*kerr.Error{0: kerr.NoReassignmentInProgress})

	// Once only the added replicas are in sync (the original ones fell
	// out), cancelling would leave no in-sync replica: refused.
	img = reassign(t, img, reassignReq(true, "t", map[int32][]int32{0: {3}}), nil)
	img = apply(t, img, &metadata.PartitionChangeRecord{TopicID: id, Partition: 0, ISR: []int32{3}, Leader: ptr(int32(3))})
	reassign(t, img, reassignReq(true, "t", map[int32][]int32{0: nil}), map[int32]*kerr.Error{0: kerr.InvalidReplicaAssignment})
}

// TestReassignmentInSyncCompletesAtOnce: a target already in the ISR (a
// shrink here) completes in the same change, moving leadership off the
// removed leader.
func TestReassignmentInSyncCompletesAtOnce(t *testing.T) {
	img := withTopic(t, cluster(t, upBrokers(3)...), "t", metadata.Uuid{1}, partition(1, []int32{1, 2, 3}, []int32{1, 2, 3}))
	img = reassign(t, img, reassignReq(true, "t", map[int32][]int32{0: {3, 2}}), nil)
	wantState(t, "shrunk", stateOf(t, img, "t", 0), []int32{3, 2}, nil, nil, []int32{2, 3}, 3)
	// The same target again changes nothing.
	recs, _ := decideAlterPartitionReassignments(testView(t, img, nil), reassignReq(true, "t", map[int32][]int32{0: {3, 2}}))
	if len(recs) != 0 {
		t.Fatalf("a no-op reassignment wrote %+v", recs)
	}
}

func TestReassignmentErrors(t *testing.T) {
	img := withTopic(t, cluster(t, upBrokers(3)...), "t", metadata.Uuid{1}, partition(1, []int32{1, 2}, []int32{1, 2}))
	cases := []struct {
		name  string
		req   *kmsg.AlterPartitionAssignmentsRequest
		want  *kerr.Error
		inMsg string
	}{
		{"unknown topic", reassignReq(true, "nope", map[int32][]int32{0: {1}}), kerr.UnknownTopicOrPartition, `"nope"`},
		{"unknown partition", reassignReq(true, "t", map[int32][]int32{5: {1}}), kerr.UnknownTopicOrPartition, "t-5"},
		{"empty target", reassignReq(true, "t", map[int32][]int32{0: {}}), kerr.InvalidReplicaAssignment, "empty"},
		{"duplicate broker", reassignReq(true, "t", map[int32][]int32{0: {2, 2}}), kerr.InvalidReplicaAssignment, "broker 2 is listed twice"},
		{"unknown broker", reassignReq(true, "t", map[int32][]int32{0: {1, 9}}), kerr.InvalidReplicaAssignment, "broker 9 is not registered"},
		{"replication factor", reassignReq(false, "t", map[int32][]int32{0: {1, 2, 3}}), kerr.InvalidReplicationFactor, "replication factor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, resp := decideAlterPartitionReassignments(testView(t, img, nil), c.req)
			if len(recs) != 0 {
				t.Fatalf("records for a refused reassignment: %+v", recs)
			}
			rp := resp.Topics[0].Partitions[0]
			wantCode(t, c.name, rp.ErrorCode, rp.ErrorMessage, c.want, c.inMsg)
		})
	}
	// The same size is fine without a replication factor change.
	reassign(t, img, reassignReq(false, "t", map[int32][]int32{0: {2, 3}}), nil)
	// A partition named twice.
	req := reassignReq(true, "t", map[int32][]int32{0: {2, 3}})
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, req.Topics[0].Partitions[0])
	_, resp := decideAlterPartitionReassignments(testView(t, img, nil), req)
	if got := resp.Topics[0].Partitions[1].ErrorCode; got != kerr.InvalidRequest.Code {
		t.Fatalf("a partition named twice: %v", kerr.ErrorForCode(got))
	}
}
