package mirror_test

import (
	"slices"
	"testing"

	"github.com/kmirror/kmirror/internal/wire"
)

// TestChain mirrors A to B and B to C. B fails over (its log: A's,
// byte for byte, then one barrier) and writes on: C, mirroring B, holds
// B's batches in leader epochs above its own (B's failover epoch) and B's
// barrier, ends byte-identical with B, serves consumers, and fails over in
// turn: its log is then B's whole log, byte for byte, followed by one
// barrier of its own above every epoch it holds, its second in all.
func TestChain(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	c := startCluster(t)
	const parts = 2
	createTopic(t, a, "ch", parts, nil)
	produceN(t, a, "ch", "a", 30)
	createMirror(t, b, a, "ab")
	mirrorTopics(t, b, opAdd, "ab", "ch")
	waitStates(t, b, "ab", "ch", parts, wire.MirrorStateMirroring)
	createMirror(t, c, b, "bc")
	mirrorTopics(t, c, opAdd, "bc", "ch")
	waitStates(t, c, "bc", "ch", parts, wire.MirrorStateMirroring)
	an, bn, cn := a.Nodes()[0], b.Nodes()[0], c.Nodes()[0]
	waitIdentical(t, an, bn, "ch", parts)
	waitIdentical(t, bn, cn, "ch", parts)

	mirrorTopics(t, b, opRemove, "ab", "ch")
	waitStates(t, b, "ab", "ch", parts, wire.MirrorStateStopped)
	bBarriers := make([]rawBatch, parts)
	cuts := lastStableOffsets(t, a, "ch", parts) // A has no open transaction: its ends
	for p := range int32(parts) {
		name := "ch-" + itoa(int(p)) + " on B"
		_, src := logBytes(t, an, "ch", p)
		_, data := logBytes(t, bn, "ch", p)
		bBarriers[p] = checkFailedOver(t, name, batchesBelow(t, name, src, cuts[p]), data)
	}
	produceN(t, b, "ch", "b", 20)
	waitIdentical(t, bn, cn, "ch", parts)
	for p := range int32(parts) {
		_, data := logBytes(t, cn, "ch", p)
		if got := barrierOffsets(t, data); !slices.Equal(got, []int64{bBarriers[p].BaseOffset}) {
			t.Fatalf("ch-%d: C holds MIRROR_PID_RESET batches at %v, want B's one at %d", p, got, bBarriers[p].BaseOffset)
		}
		for _, h := range rawBatches(t, data) {
			if h.BaseOffset > bBarriers[p].BaseOffset && h.PartitionLeaderEpoch < bBarriers[p].PartitionLeaderEpoch {
				t.Fatalf("ch-%d: C holds B's batch at %d in epoch %d, below B's failover epoch %d", p, h.BaseOffset, h.PartitionLeaderEpoch, bBarriers[p].PartitionLeaderEpoch)
			}
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

	// C fails over: B has no open transaction, so C keeps all of B's log.
	mirrorTopics(t, c, opRemove, "bc", "ch")
	waitStates(t, c, "bc", "ch", parts, wire.MirrorStateStopped)
	cuts = lastStableOffsets(t, b, "ch", parts)
	for p := range int32(parts) {
		name := "ch-" + itoa(int(p)) + " on C"
		_, src := logBytes(t, bn, "ch", p)
		_, data := logBytes(t, cn, "ch", p)
		barrier := checkFailedOver(t, name, batchesBelow(t, name, src, cuts[p]), data)
		if got, want := barrierOffsets(t, data), []int64{bBarriers[p].BaseOffset, barrier.BaseOffset}; !slices.Equal(got, want) {
			t.Fatalf("%s: MIRROR_PID_RESET batches at %v, want B's and C's at %v", name, got, want)
		}
	}
	produceN(t, c, "ch", "c", 5)
}
