package producerstate

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/record"
)

// addRealBatch is what the partition Log does for each batch of an append:
// parse the header, and for a control batch read its type and, for a
// transaction marker, its coordinator epoch.
func addRealBatch(t *testing.T, a *Append, batch []byte) error {
	t.Helper()
	h, err := record.ParseHeader(batch)
	if err != nil {
		t.Fatal(err)
	}
	ctl, coordEpoch := record.ControlType(-1), int32(0)
	if h.IsControl() {
		if ctl, err = record.ControlTypeOf(batch); err != nil {
			t.Fatal(err)
		}
		if ctl == record.ControlAbort || ctl == record.ControlCommit {
			m, err := record.ParseEndTxnMarker(batch)
			if err != nil {
				t.Fatal(err)
			}
			coordEpoch = m.CoordinatorEpoch
		}
	}
	return a.Add(h, ctl, coordEpoch)
}

// TestRealBatches drives the manager with batches built by internal/record,
// so the attribute bits, control types and marker values it relies on are
// the ones the record package really writes.
func TestRealBatches(t *testing.T) {
	m, err := NewManager(t.TempDir(), Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	next := int64(0)
	appendAll := func(origin Origin, batches ...[]byte) (*Append, error) {
		a := m.NewAppend(origin)
		off := next
		for _, b := range batches {
			record.SetBaseOffset(b, off)
			if err := addRealBatch(t, a, b); err != nil {
				return a, err
			}
			h, _ := record.ParseHeader(b)
			off = h.NextOffset()
		}
		next = off
		m.Commit(a)
		return a, nil
	}
	build := func(pid int64, epoch int16, seq int32, n int, transactional bool) []byte {
		recs := make([]record.Record, n)
		for i := range recs {
			recs[i].Value = []byte("v")
		}
		record.NumberRecords(recs)
		b, err := record.Build(record.BatchSpec{
			ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq,
			Transactional: transactional, BaseTimestamp: 1000,
		}, recs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	if _, err := appendAll(C, build(1, 0, 0, 3, false), build(1, 0, 3, 2, false)); err != nil {
		t.Fatal(err)
	}
	dupHeader, _ := record.ParseHeader(build(1, 0, 3, 2, false))
	if d, ok := m.FindDuplicate(dupHeader); !ok || d.FirstOffset != 3 || d.LastOffset != 4 {
		t.Fatalf("retry: %+v %v", d, ok)
	}
	if _, err := appendAll(C, build(2, 5, 0, 2, true)); err != nil { // 5-6
		t.Fatal(err)
	}
	if _, err := appendAll(C, build(1, 0, 9, 1, false)); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("gap: %v", err)
	}
	marker := func(pid int64, epoch int16, commit bool, coord int32) []byte {
		return record.BuildEndTxnMarker(pid, epoch, record.EndTxnMarker{Commit: commit, CoordinatorEpoch: coord}, 1000, 0)
	}
	if _, err := appendAll(Co, marker(2, 5, false, 3)); err != nil { // 7
		t.Fatal(err)
	}
	if _, err := appendAll(Co, marker(2, 5, true, 2)); !errors.Is(err, kerr.TransactionCoordinatorFenced) {
		t.Fatalf("zombie coordinator: %v", err)
	}
	a, err := appendAll(R, build(3, 0, 0, 1, true), record.BuildMirrorPIDReset(1000, 0, "src"), build(4, 0, 0, 1, false)) // 8, 9, 10
	if err != nil {
		t.Fatal(err)
	}
	if !a.ResetsProducers() {
		t.Fatal("MIRROR_PID_RESET built by internal/record not recognised")
	}
	checkState(t, m, map[int64]ps{4: {0, [][2]int32{{0, 0}}, -1, -1}})
	if m.MapEndOffset() != 11 {
		t.Fatalf("MapEndOffset %d, want 11", m.MapEndOffset())
	}
	if off, ok := m.FirstUnstableOffset(); !ok || off != 5 {
		t.Fatalf("FirstUnstableOffset %d %v; want 5 (aborted txn not yet replicated)", off, ok)
	}
}
