package mirror_test

import (
	"bytes"
	"testing"

	"github.com/kmirror/kmirror/internal/record"
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
		_, bdata := logBytes(t, bn, "t", p)
		_, adata := logBytes(t, an, "t", p)
		if !bytes.HasPrefix(adata, bdata) {
			t.Fatalf("t-%d: A's log does not start with B's", p)
		}
		tail := batches(t, adata[len(bdata):])
		if len(tail) != 1 || !tail[0].IsControl() {
			t.Fatalf("t-%d: A's log after B's: %+v, want one barrier", p, tail)
		}
		if ct, _ := record.ControlTypeOf(adata[len(bdata):]); ct != record.ControlMirrorPIDReset {
			t.Fatalf("t-%d: A's last batch is a %v", p, ct)
		}
		for _, h := range batches(t, bdata) {
			if h.PartitionLeaderEpoch >= tail[0].PartitionLeaderEpoch {
				t.Fatalf("t-%d: A's barrier epoch %d is not above %d", p, tail[0].PartitionLeaderEpoch, h.PartitionLeaderEpoch)
			}
		}
		// Two barriers in all: B's (copied) and A's.
		n := 0
		for _, h := range batches(t, adata) {
			if h.IsControl() && h.ProducerID < 0 {
				n++
			}
		}
		if n != 2 {
			t.Fatalf("t-%d holds %d barriers, want B's and A's", p, n)
		}
	}
	produceN(t, a, "t", "a3", 5)
}
