package mirror_test

import (
	"testing"

	"github.com/kmirror/kmirror/internal/wire"
)

// TestChain mirrors A to B and B to C. B fails over and writes on: C,
// mirroring B, holds B's batches in leader epochs above its own (B's
// failover epoch) and B's barrier, ends byte-identical with B, serves
// consumers, and fails over in turn above every epoch it holds.
func TestChain(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	c := startCluster(t)
	createTopic(t, a, "ch", 2, nil)
	produceN(t, a, "ch", "a", 30)
	createMirror(t, b, a, "ab")
	mirrorTopics(t, b, opAdd, "ab", "ch")
	waitStates(t, b, "ab", "ch", 2, wire.MirrorStateMirroring)
	createMirror(t, c, b, "bc")
	mirrorTopics(t, c, opAdd, "bc", "ch")
	waitStates(t, c, "bc", "ch", 2, wire.MirrorStateMirroring)
	an, bn, cn := a.Nodes()[0], b.Nodes()[0], c.Nodes()[0]
	waitIdentical(t, an, bn, "ch", 2)
	waitIdentical(t, bn, cn, "ch", 2)

	mirrorTopics(t, b, opRemove, "ab", "ch")
	waitStates(t, b, "ab", "ch", 2, wire.MirrorStateStopped)
	produceN(t, b, "ch", "b", 20)
	waitIdentical(t, bn, cn, "ch", 2)
	for p := range int32(2) {
		_, data := logBytes(t, cn, "ch", p)
		hs := batches(t, data)
		if last := hs[len(hs)-1]; last.PartitionLeaderEpoch < 1 {
			t.Fatalf("ch-%d: C's last batch is in epoch %d; B's failover epoch is above 0", p, last.PartitionLeaderEpoch)
		}
	}
	got := consume(t, c, "ch", true, 50)
	n := 0
	for _, vs := range got {
		n += len(vs)
	}
	if n != 50 {
		t.Fatalf("C's consumer read %d records", n)
	}

	mirrorTopics(t, c, opRemove, "bc", "ch")
	waitStates(t, c, "bc", "ch", 2, wire.MirrorStateStopped)
	produceN(t, c, "ch", "c", 5)
}
