package mirror_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// The failover checks compare raw batches: a mirrored batch keeps every
// byte (offsets and partition leader epochs included), so a destination
// that failed over cleanly holds the source's batches up to the first
// offset of the source's oldest open transaction byte for byte, then
// exactly one MIRROR_PID_RESET batch of its own. A check on what is gone
// (the open transaction's records) would pass on a cut one batch too
// early, or on a lost batch in the middle; these do not.

// rawBatch is one batch of a log, as stored, with its header.
type rawBatch struct {
	record.Header
	raw []byte
}

// rawBatches splits a log's bytes into batches.
func rawBatches(t testing.TB, b []byte) []rawBatch {
	t.Helper()
	var out []rawBatch
	for len(b) > 0 {
		batch, rest, err := record.NextBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		h, err := record.ParseHeader(batch)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rawBatch{h, batch})
		b = rest
	}
	return out
}

// isBarrier reports whether a batch is a MIRROR_PID_RESET control batch
// (control type 7).
func isBarrier(b rawBatch) bool {
	if !b.IsControl() {
		return false
	}
	ct, err := record.ControlTypeOf(b.raw)
	return err == nil && ct == record.ControlMirrorPIDReset
}

// barrierOffsets returns the base offsets of a log's MIRROR_PID_RESET
// batches.
func barrierOffsets(t testing.TB, log []byte) []int64 {
	t.Helper()
	var out []int64
	for _, b := range rawBatches(t, log) {
		if isBarrier(b) {
			out = append(out, b.BaseOffset)
		}
	}
	return out
}

// batchesBelow returns the bytes of log's batches that end below cut,
// failing if a batch straddles it (the cut of a failover is at a batch
// boundary: the first offset of a transaction's first batch, or the end).
func batchesBelow(t testing.TB, name string, log []byte, cut int64) []byte {
	t.Helper()
	n := 0
	for _, b := range rawBatches(t, log) {
		if b.BaseOffset >= cut {
			break
		}
		if b.NextOffset() > cut {
			t.Fatalf("%s: the batch at %d..%d straddles the cut at %d", name, b.BaseOffset, b.LastOffset(), cut)
		}
		n += len(b.raw)
	}
	return log[:n]
}

// checkFailedOver fails unless log, a failed-over partition's, is exactly
// want (the batches the failover had to keep, as the source holds them)
// followed by one MIRROR_PID_RESET batch in a leader epoch above every
// epoch of want, and returns that barrier.
func checkFailedOver(t testing.TB, name string, want, log []byte) rawBatch {
	t.Helper()
	if !bytes.HasPrefix(log, want) {
		t.Fatalf("%s: the failed-over log is not the source's batches up to the cut: %s", name, firstDifference(t, want, log))
	}
	rest := rawBatches(t, log[len(want):])
	if len(rest) != 1 || !isBarrier(rest[0]) {
		var hs []string
		for _, b := range rest {
			hs = append(hs, fmt.Sprintf("{offset %d control %v barrier %v epoch %d}", b.BaseOffset, b.IsControl(), isBarrier(b), b.PartitionLeaderEpoch))
		}
		t.Fatalf("%s: after the source's %d bytes the log holds %v, want exactly one MIRROR_PID_RESET batch", name, len(want), hs)
	}
	barrier := rest[0]
	for _, b := range rawBatches(t, want) {
		if b.PartitionLeaderEpoch >= barrier.PartitionLeaderEpoch {
			t.Fatalf("%s: the barrier's epoch %d is not above the kept batch at %d in epoch %d", name, barrier.PartitionLeaderEpoch, b.BaseOffset, b.PartitionLeaderEpoch)
		}
	}
	return barrier
}

// firstDifference describes where got stops matching want, batch by batch.
func firstDifference(t testing.TB, want, got []byte) string {
	t.Helper()
	wb, gb := rawBatches(t, want), rawBatches(t, got)
	for i, w := range wb {
		if i >= len(gb) {
			return fmt.Sprintf("the log ends after %d batches; the source's batch %d is at offset %d", len(gb), i, w.BaseOffset)
		}
		if g := gb[i]; !bytes.Equal(g.raw, w.raw) {
			return fmt.Sprintf("batch %d: offset %d epoch %d control %v (%d bytes), the source's: offset %d epoch %d control %v (%d bytes)",
				i, g.BaseOffset, g.PartitionLeaderEpoch, g.IsControl(), len(g.raw), w.BaseOffset, w.PartitionLeaderEpoch, w.IsControl(), len(w.raw))
		}
	}
	return "same batches" // not reached: want is then a prefix of got
}

// lastStableOffsets returns the last stable offset of each partition of
// topic on c: the first offset of the oldest open transaction, or the high
// watermark.
func lastStableOffsets(t testing.TB, c *testcluster.Cluster, topic string, partitions int32) []int64 {
	t.Helper()
	lsos, err := c.Admin(t).ListCommittedOffsets(ctxFor(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, partitions)
	for p := range partitions {
		o, ok := lsos.Lookup(topic, p)
		if !ok || o.Err != nil {
			t.Fatalf("last stable offset of %s-%d: %v %v", topic, p, ok, o.Err)
		}
		out[p] = o.Offset
	}
	return out
}

// replicasAgree waits until every node of c holds the same bytes of a
// partition (followers fetch the leader's last batches a moment later)
// and returns them.
func replicasAgree(t testing.TB, c *testcluster.Cluster, topic string, partition int32) []byte {
	t.Helper()
	var ref []byte
	var why string
	ok := pollUntil(func() bool {
		nodes := c.Nodes()
		_, ref = logBytes(t, nodes[0], topic, partition)
		for _, n := range nodes[1:] {
			if _, d := logBytes(t, n, topic, partition); !bytes.Equal(d, ref) {
				why = fmt.Sprintf("node %d holds %d bytes, node %d %d", n.ID, len(d), nodes[0].ID, len(ref))
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("%s-%d: the replicas differ: %s", topic, partition, why)
	}
	return ref
}
