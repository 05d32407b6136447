package mirror_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestFailedOverTopicNeedsNoMirrorState fails a topic over on a three-node
// destination whose __mirror_state has one replica per partition, waits
// until the failover is recorded as complete (mirror.name m.stopped), then
// stops the broker that holds the partition of __mirror_state with the
// topic's state and moves the topic's leadership: the new leader takes
// produces at once. (Before the failover was recorded in the metadata, a
// new leader of a REMOVED topic answered NOT_LEADER_OR_FOLLOWER until it
// could read the partition's state in __mirror_state, which here it never
// could.)
func TestFailedOverTopicNeedsNoMirrorState(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t, testcluster.Nodes(3),
		testcluster.Config("mirror.state.topic.replication.factor", "1"),
		testcluster.Config("default.replication.factor", "3"))
	createTopic(t, a, "free", 1, nil)
	produceN(t, a, "free", "a", 10)
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "free")
	waitStates(t, b, "m", "free", 1, wire.MirrorStateMirroring)
	mirrorTopics(t, b, opRemove, "m", "free")
	waitStates(t, b, "m", "free", 1, wire.MirrorStateStopped)
	waitMirrorName(t, b, "free", "m.stopped")

	adm := kadm.NewClient(b.Client(t, kgo.MetadataMinAge(10*time.Millisecond)))
	ctx := ctxFor(t)
	md, err := adm.Metadata(ctx, "free", mirrorstate.Topic)
	if err != nil {
		t.Fatal(err)
	}
	id := md.Topics["free"].ID
	statePart := mirrorstate.PartitionFor("m", id, 0, int32(len(md.Topics[mirrorstate.Topic].Partitions)))
	holder := md.Topics[mirrorstate.Topic].Partitions[statePart].Leader
	leader := md.Topics["free"].Partitions[0].Leader
	t.Logf("__mirror_state-%d (free-0's state) on node %d; free-0 led by node %d", statePart, holder, leader)
	b.Node(holder).Stop()

	// Leadership moves to a live node other than the current leader.
	var next int32
	for _, n := range b.Nodes() {
		if n.Running() && n.ID != leader {
			next = n.ID
			break
		}
	}
	if leader != holder {
		var req kadm.AlterPartitionAssignmentsReq
		replicas := []int32{next, leader}
		for _, n := range b.Nodes() {
			if !slices.Contains(replicas, n.ID) {
				replicas = append(replicas, n.ID)
			}
		}
		req.Assign("free", 0, replicas)
		if resp, err := adm.AlterPartitionAssignments(ctx, req); err != nil || resp.Error() != nil {
			t.Fatalf("reorder free-0's replicas: %v %v", err, resp.Error())
		}
	}
	waitFor(t, "free-0 led by another live node", func() bool {
		_, _ = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{"free": {0: {}}})
		md, err := adm.Metadata(ctx, "free")
		if err != nil {
			return false
		}
		l := md.Topics["free"].Partitions[0].Leader
		return l >= 0 && l != leader && l != holder
	})
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cl := b.Client(t, kgo.DefaultProduceTopic("free"), kgo.RecordDeliveryTimeout(15*time.Second))
	if err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte("after the move")}).FirstErr(); err != nil {
		t.Fatalf("produce to the failed-over topic under its new leader: %v", err)
	}
}
