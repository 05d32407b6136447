package mirror_test

import (
	"testing"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestSourceEpochsAboveDestination mirrors, into a three-node cluster, data
// whose leader epochs are above the destination partitions' own (a source
// that failed over itself): the followers replicate it (their fetches name
// a last fetched epoch above the leader's current epoch), consumers read it,
// and the failover bumps the epoch above it.
func TestSourceEpochsAboveDestination(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "hi", 2, nil)
	produceN(t, a, "hi", "a", 20)
	createMirror(t, b, a, "ab")
	mirrorTopics(t, b, opAdd, "ab", "hi")
	waitStates(t, b, "ab", "hi", 2, wire.MirrorStateMirroring)
	waitIdentical(t, a.Nodes()[0], b.Nodes()[0], "hi", 2)
	mirrorTopics(t, b, opRemove, "ab", "hi")
	waitStates(t, b, "ab", "hi", 2, wire.MirrorStateStopped)
	produceN(t, b, "hi", "b", 20) // in B's failover epoch, above 0

	c := startCluster(t, testcluster.Nodes(3),
		testcluster.Config("mirror.state.topic.replication.factor", "3"),
		testcluster.Config("default.replication.factor", "3"))
	createMirror(t, c, b, "bc")
	mirrorTopics(t, c, opAdd, "bc", "hi")
	waitStates(t, c, "bc", "hi", 2, wire.MirrorStateMirroring)
	for _, cn := range c.Nodes() {
		waitIdentical(t, b.Nodes()[0], cn, "hi", 2)
	}
	if got := consume(t, c, "hi", true, 40); len(got[0])+len(got[1]) != 40 {
		t.Fatalf("consumed %v", got)
	}
	mirrorTopics(t, c, opRemove, "bc", "hi")
	waitStates(t, c, "bc", "hi", 2, wire.MirrorStateStopped)
	if err := produceErr(t, c, "hi"); err != nil {
		t.Fatalf("produce after failover: %v", err)
	}
}
