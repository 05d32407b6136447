package mirror_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/kmirror/kmirror/internal/wire"
)

// TestFailback mirrors A to B, fails over to B, lets both sides write, and
// then mirrors the topic back from B to A: A drops what it wrote after the
// failover (the Last Mirrored Epoch B recorded tells it where), ends
// byte-identical with B, and fails over again cleanly with a barrier of its
// own above every epoch it holds.
func TestFailback(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	const parts = 2
	createTopic(t, a, "t", parts, nil)
	produceN(t, a, "t", "a1", 40)
	createMirror(t, b, a, "ab")
	mirrorTopics(t, b, opAdd, "ab", "t")
	an, bn := a.Nodes()[0], b.Nodes()[0]
	waitStates(t, b, "ab", "t", parts, wire.MirrorStateMirroring)
	waitIdentical(t, an, bn, "t", parts)

	mirrorTopics(t, b, opRemove, "ab", "t")
	waitStates(t, b, "ab", "t", parts, wire.MirrorStateStopped)
	bBarriers := make([]int64, parts)
	for p := range int32(parts) {
		_, src := logBytes(t, an, "t", p)
		_, data := logBytes(t, bn, "t", p)
		bBarriers[p] = checkFailedOver(t, "t-"+itoa(int(p))+" on B", src, data).BaseOffset
	}
	failoverEnd := leos(t, bn, "t", parts) // B's logs end with their barrier
	// Both sides write after the failover; A's writes are lost on failback.
	produceN(t, b, "t", "b1", 25)
	produceN(t, a, "t", "a2-lost", 15)

	createMirror(t, a, b, "ba")
	mirrorTopics(t, a, opAdd, "ba", "t")
	waitStates(t, a, "ba", "t", parts, wire.MirrorStateMirroring)
	waitIdentical(t, bn, an, "t", parts)
	for p := range int32(parts) {
		_, data := logBytes(t, an, "t", p)
		if bytes.Contains(data, []byte("a2-lost")) {
			t.Fatalf("A kept t-%d's records written after the failover", p)
		}
		if leo(t, an, "t", p) <= failoverEnd[p] {
			t.Fatalf("A did not copy B's new records of t-%d", p)
		}
	}
	produceN(t, b, "t", "b2", 10)
	waitIdentical(t, bn, an, "t", parts)

	// A fails over again: one barrier of its own, above every epoch.
	mirrorTopics(t, a, opRemove, "ba", "t")
	waitStates(t, a, "ba", "t", parts, wire.MirrorStateStopped)
	for p := range int32(parts) {
		name := "t-" + itoa(int(p)) + " on A"
		_, bdata := logBytes(t, bn, "t", p)
		_, adata := logBytes(t, an, "t", p)
		barrier := checkFailedOver(t, name, bdata, adata)
		// Two barriers in all: B's (copied) and A's.
		if got := barrierOffsets(t, adata); !slices.Equal(got, []int64{bBarriers[p], barrier.BaseOffset}) {
			t.Fatalf("%s: MIRROR_PID_RESET batches at %v, want B's at %d and A's at %d", name, got, bBarriers[p], barrier.BaseOffset)
		}
	}
	produceN(t, a, "t", "a3", 5)
}
