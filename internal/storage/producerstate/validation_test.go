package producerstate

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

const (
	C  = OriginClient
	R  = OriginReplication
	Co = OriginCoordinator
)

// step is one append (or a high-watermark move when batches is empty).
type step struct {
	origin  Origin
	batches []bt
	err     error          // expected validation error (errors.Is), nil = success
	dup     []int64        // expected duplicate answer {firstOffset, lastOffset}
	done    []CompletedTxn // expected completed transactions (nil = none)
	lso     []int64        // expected LastStableOffsetAfter for each completed txn
	hw      int64          // >0: call OnHighWatermarkUpdated(hw) after the append
	fuo     *int64         // expected FirstUnstableOffset after the step (-1 = none)
}

// ps is the expected state of one producer: batches as {firstSeq, lastSeq}.
type ps struct {
	epoch int16
	seqs  [][2]int32
	txn   int64
	coord int32
}

func ok(o Origin, b ...bt) step { return step{origin: o, batches: b} }

func fail(o Origin, err error, b ...bt) step { return step{origin: o, batches: b, err: err} }

func dupOf(first, last int64, b bt) step {
	return step{origin: C, batches: []bt{b}, dup: []int64{first, last}}
}

func hw(off int64, fuo int64) step { return step{hw: off, fuo: &fuo} }

func (s step) completes(lso []int64, cts ...CompletedTxn) step {
	s.done, s.lso = cts, lso
	return s
}

func (s step) unstable(fuo int64) step {
	s.fuo = &fuo
	return s
}

func TestValidationRules(t *testing.T) {
	const maxSeq = math.MaxInt32
	rows := []struct {
		name  string
		steps []step
		want  map[int64]ps
		fuo   int64 // final FirstUnstableOffset, -1 = none
		end   int64 // final MapEndOffset
	}{
		{
			name:  "new producer starts at 0 and continues",
			steps: []step{ok(C, data(1, 0, 0, 3)), ok(C, data(1, 0, 3, 2))},
			want:  map[int64]ps{1: {0, [][2]int32{{0, 2}, {3, 4}}, -1, -1}},
			fuo:   -1, end: 5,
		},
		{
			name:  "sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER and changes nothing",
			steps: []step{ok(C, data(1, 0, 0, 3)), fail(C, kerr.OutOfOrderSequenceNumber, data(1, 0, 4, 1))},
			want:  map[int64]ps{1: {0, [][2]int32{{0, 2}}, -1, -1}},
			fuo:   -1, end: 3,
		},
		{
			name:  "unknown producer may start at any sequence (KIP-360, no UNKNOWN_PRODUCER_ID)",
			steps: []step{ok(C, data(1, 0, 42, 2)), ok(C, data(1, 0, 44, 1))},
			want:  map[int64]ps{1: {0, [][2]int32{{42, 43}, {44, 44}}, -1, -1}},
			fuo:   -1, end: 3,
		},
		{
			name:  "unknown producer is checked from its second batch on",
			steps: []step{ok(C, data(1, 0, 42, 1)), fail(C, kerr.OutOfOrderSequenceNumber, data(1, 0, 50, 1))},
			want:  map[int64]ps{1: {0, [][2]int32{{42, 42}}, -1, -1}},
			fuo:   -1, end: 1,
		},
		{
			name: "retry of a recent batch is answered with its original offsets",
			steps: []step{
				ok(C, data(1, 0, 0, 3)), ok(C, data(1, 0, 3, 2)),
				dupOf(3, 4, data(1, 0, 3, 2)), dupOf(0, 2, data(1, 0, 0, 3)),
			},
			want: map[int64]ps{1: {0, [][2]int32{{0, 2}, {3, 4}}, -1, -1}},
			fuo:  -1, end: 5,
		},
		{
			name: "retry detection covers the last five batches, not the sixth",
			steps: []step{
				ok(C, data(1, 0, 0, 1)), ok(C, data(1, 0, 1, 1)), ok(C, data(1, 0, 2, 1)),
				ok(C, data(1, 0, 3, 1)), ok(C, data(1, 0, 4, 1)), ok(C, data(1, 0, 5, 1)),
				dupOf(1, 1, data(1, 0, 1, 1)),
				fail(C, kerr.OutOfOrderSequenceNumber, data(1, 0, 0, 1)),
			},
			want: map[int64]ps{1: {0, [][2]int32{{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}}, -1, -1}},
			fuo:  -1, end: 6,
		},
		{
			name: "a different sequence range is not a retry",
			steps: []step{
				ok(C, data(1, 0, 0, 3)),
				fail(C, kerr.OutOfOrderSequenceNumber, data(1, 0, 0, 2)),
			},
			want: map[int64]ps{1: {0, [][2]int32{{0, 2}}, -1, -1}},
			fuo:  -1, end: 3,
		},
		{
			name:  "epoch bump starts at sequence 0 and forgets older batches",
			steps: []step{ok(C, data(1, 0, 0, 1)), ok(C, data(1, 1, 0, 1))},
			want:  map[int64]ps{1: {1, [][2]int32{{0, 0}}, -1, -1}},
			fuo:   -1, end: 2,
		},
		{
			name:  "epoch bump with a nonzero sequence is OUT_OF_ORDER_SEQUENCE_NUMBER",
			steps: []step{ok(C, data(1, 0, 0, 5)), fail(C, kerr.OutOfOrderSequenceNumber, data(1, 1, 5, 1))},
			want:  map[int64]ps{1: {0, [][2]int32{{0, 4}}, -1, -1}},
			fuo:   -1, end: 5,
		},
		{
			name: "older epoch is INVALID_PRODUCER_EPOCH, also for a retry of a batch of that epoch",
			steps: []step{
				ok(C, data(1, 0, 0, 1)), ok(C, data(1, 1, 0, 1)),
				fail(C, kerr.InvalidProducerEpoch, data(1, 0, 0, 1)),
			},
			want: map[int64]ps{1: {1, [][2]int32{{0, 0}}, -1, -1}},
			fuo:  -1, end: 2,
		},
		{
			name:  "sequence wraps from MaxInt32 to 0",
			steps: []step{ok(C, data(1, 0, maxSeq, 1)), ok(C, data(1, 0, 0, 1))},
			want:  map[int64]ps{1: {0, [][2]int32{{maxSeq, maxSeq}, {0, 0}}, -1, -1}},
			fuo:   -1, end: 2,
		},
		{
			name:  "a batch may span the wrap",
			steps: []step{ok(C, data(1, 0, maxSeq-1, 3)), ok(C, data(1, 0, 1, 1)), dupOf(0, 2, data(1, 0, maxSeq-1, 3))},
			want:  map[int64]ps{1: {0, [][2]int32{{maxSeq - 1, 0}, {1, 1}}, -1, -1}},
			fuo:   -1, end: 4,
		},
		{
			name:  "after MaxInt32 only 0 follows",
			steps: []step{ok(C, data(1, 0, maxSeq, 1)), fail(C, kerr.OutOfOrderSequenceNumber, data(1, 0, 1, 1))},
			want:  map[int64]ps{1: {0, [][2]int32{{maxSeq, maxSeq}}, -1, -1}},
			fuo:   -1, end: 1,
		},
		{
			name: "batches of one append are validated against each other; a failure commits none",
			steps: []step{
				ok(C, data(1, 0, 0, 1)),
				fail(C, kerr.OutOfOrderSequenceNumber, data(1, 0, 1, 3), data(1, 0, 5, 1)),
				ok(C, data(1, 0, 1, 3), data(1, 0, 4, 1)),
			},
			want: map[int64]ps{1: {0, [][2]int32{{0, 0}, {1, 3}, {4, 4}}, -1, -1}},
			fuo:  -1, end: 5,
		},
		{
			// Kafka checks against the committed entry: while it has no
			// epoch, every batch of the append is accepted.
			name:  "the first append of an unknown producer is not sequence-checked",
			steps: []step{ok(C, data(1, 0, 0, 3), data(1, 0, 9, 1))},
			want:  map[int64]ps{1: {0, [][2]int32{{0, 2}, {9, 9}}, -1, -1}},
			fuo:   -1, end: 4,
		},
		{
			name:  "transactional batch starts a transaction at its first offset",
			steps: []step{ok(C, data(2, 0, 0, 2)), ok(C, txn(1, 0, 0, 2)).unstable(2), ok(C, txn(1, 0, 2, 1)).unstable(2)},
			want:  map[int64]ps{1: {0, [][2]int32{{0, 1}, {2, 2}}, 2, -1}, 2: {0, [][2]int32{{0, 1}}, -1, -1}},
			fuo:   2, end: 5,
		},
		{
			name: "COMMIT completes the transaction; it holds the LSO until its marker is below the HW",
			steps: []step{
				ok(C, txn(1, 0, 0, 2)),
				ok(Co, commit(1, 0, 5)).completes([]int64{3}, CompletedTxn{1, 0, 2, false}).unstable(0),
				hw(2, 0),
				hw(3, -1),
			},
			want: map[int64]ps{1: {0, [][2]int32{{0, 1}}, -1, 5}},
			fuo:  -1, end: 3,
		},
		{
			name: "ABORT completes the transaction as aborted",
			steps: []step{
				ok(C, txn(1, 0, 0, 2)),
				ok(Co, abort(1, 0, 0)).completes([]int64{3}, CompletedTxn{1, 0, 2, true}),
			},
			want: map[int64]ps{1: {0, [][2]int32{{0, 1}}, -1, 0}},
			fuo:  0, end: 3,
		},
		{
			name:  "non-transactional batch during a transaction is INVALID_TXN_STATE",
			steps: []step{ok(C, txn(1, 0, 0, 1)), fail(C, kerr.InvalidTxnState, data(1, 0, 1, 1))},
			want:  map[int64]ps{1: {0, [][2]int32{{0, 0}}, 0, -1}},
			fuo:   0, end: 1,
		},
		{
			name: "transactional data after a marker starts a new transaction",
			steps: []step{
				ok(C, txn(1, 0, 0, 1)),
				ok(Co, commit(1, 0, 0)).completes([]int64{2}, CompletedTxn{1, 0, 1, false}),
				ok(C, txn(1, 0, 1, 1)),
				hw(3, 2),
			},
			want: map[int64]ps{1: {0, [][2]int32{{0, 0}, {1, 1}}, 2, 0}},
			fuo:  2, end: 3,
		},
		{
			name: "marker with an older coordinator epoch is TRANSACTION_COORDINATOR_FENCED",
			steps: []step{
				ok(C, txn(1, 0, 0, 1)),
				ok(Co, commit(1, 0, 5)).completes([]int64{2}, CompletedTxn{1, 0, 1, false}),
				ok(C, txn(1, 0, 1, 1)),
				fail(Co, kerr.TransactionCoordinatorFenced, abort(1, 0, 4)),
			},
			want: map[int64]ps{1: {0, [][2]int32{{0, 0}, {1, 1}}, 2, 5}},
			fuo:  0, end: 3,
		},
		{
			name:  "marker with an older producer epoch is INVALID_PRODUCER_EPOCH",
			steps: []step{ok(C, txn(1, 3, 0, 1)), fail(Co, kerr.InvalidProducerEpoch, abort(1, 2, 0))},
			want:  map[int64]ps{1: {3, [][2]int32{{0, 0}}, 0, -1}},
			fuo:   0, end: 1,
		},
		{
			name: "marker with a bumped epoch (transactions v2) moves the producer to it",
			steps: []step{
				ok(C, txn(1, 0, 0, 1)),
				ok(Co, commit(1, 1, 0)).completes([]int64{2}, CompletedTxn{1, 0, 1, false}),
				ok(C, txn(1, 1, 0, 1)),
			},
			want: map[int64]ps{1: {1, [][2]int32{{0, 0}}, 2, 0}},
			fuo:  0, end: 3,
		},
		{
			name:  "a client may not write markers (INVALID_RECORD)",
			steps: []step{ok(C, txn(1, 0, 0, 1)), fail(C, kerr.InvalidRecord, abort(1, 0, 0))},
			want:  map[int64]ps{1: {0, [][2]int32{{0, 0}}, 0, -1}},
			fuo:   0, end: 1,
		},
		{
			name:  "marker without an ongoing transaction completes nothing but records the coordinator epoch",
			steps: []step{ok(Co, commit(1, 0, 3))},
			want:  map[int64]ps{1: {0, nil, -1, 3}},
			fuo:   -1, end: 1,
		},
		{
			name: "replication applies gaps, old epochs, old coordinator epochs and odd txn state without failing",
			steps: []step{
				ok(R, data(1, 2, 0, 1)),
				ok(R, data(1, 1, 7, 1)),
				ok(R, txn(1, 1, 8, 1)),
				ok(R, data(1, 1, 20, 1)),
				ok(R, commit(1, 1, 3)).completes([]int64{5}, CompletedTxn{1, 2, 4, false}),
				ok(R, abort(1, 0, 1)),
			},
			want: map[int64]ps{1: {0, nil, -1, 1}},
			fuo:  2, end: 6,
		},
		{
			name: "coordinator origin checks epochs but not sequences",
			steps: []step{
				ok(Co, data(1, 1, 5, 1)), ok(Co, data(1, 1, 99, 1)),
				fail(Co, kerr.InvalidProducerEpoch, data(1, 0, 100, 1)),
			},
			want: map[int64]ps{1: {1, [][2]int32{{5, 5}, {99, 99}}, -1, -1}},
			fuo:  -1, end: 2,
		},
		{
			name: "aborted txn LSO is the earliest other ongoing transaction",
			steps: []step{
				ok(C, txn(1, 0, 0, 1)), ok(C, txn(2, 0, 0, 1)), ok(C, txn(1, 0, 1, 1)),
				ok(Co, abort(1, 0, 0)).completes([]int64{1}, CompletedTxn{1, 0, 3, true}).unstable(0),
				ok(Co, abort(2, 0, 0)).completes([]int64{5}, CompletedTxn{2, 1, 4, true}).unstable(0),
			},
			want: map[int64]ps{1: {0, [][2]int32{{0, 0}, {1, 1}}, -1, 0}, 2: {0, [][2]int32{{0, 0}}, -1, 0}},
			fuo:  0, end: 5,
		},
		{
			name: "transactions completed later in the same append were still ongoing",
			steps: []step{
				ok(C, txn(1, 0, 0, 1)), ok(C, txn(2, 0, 0, 1)),
				ok(Co, abort(1, 0, 0), abort(2, 0, 0)).completes([]int64{1, 4},
					CompletedTxn{1, 0, 2, true}, CompletedTxn{2, 1, 3, true}),
				hw(4, -1),
			},
			want: map[int64]ps{1: {0, [][2]int32{{0, 0}}, -1, 0}, 2: {0, [][2]int32{{0, 0}}, -1, 0}},
			fuo:  -1, end: 4,
		},
		{
			name: "first unstable offset: unreplicated completed txn, then the next ongoing one",
			steps: []step{
				ok(C, txn(1, 0, 0, 1)),
				ok(Co, commit(1, 0, 0)).completes([]int64{2}, CompletedTxn{1, 0, 1, false}),
				ok(C, txn(2, 0, 0, 1)).unstable(0),
				hw(2, 2),
				ok(Co, abort(2, 0, 0)).completes([]int64{4}, CompletedTxn{2, 2, 3, true}).unstable(2),
				hw(4, -1),
			},
			want: map[int64]ps{1: {0, [][2]int32{{0, 0}}, -1, 0}, 2: {0, [][2]int32{{0, 0}}, -1, 0}},
			fuo:  -1, end: 4,
		},
		{
			name: "MIRROR_PID_RESET in the middle of an append: before applied then removed, after kept",
			steps: []step{
				ok(R, data(1, 0, 0, 1), reset(), data(2, 0, 5, 1)),
				ok(C, data(1, 0, 17, 1)), // producer 1 is unknown again: any sequence
				ok(C, data(2, 0, 6, 1)),
				fail(C, kerr.OutOfOrderSequenceNumber, data(2, 0, 8, 1)),
			},
			want: map[int64]ps{1: {0, [][2]int32{{17, 17}}, -1, -1}, 2: {0, [][2]int32{{5, 5}, {6, 6}}, -1, -1}},
			fuo:  -1, end: 5,
		},
		{
			name: "MIRROR_PID_RESET removes ongoing transactions",
			steps: []step{
				ok(C, txn(1, 0, 0, 1)).unstable(0),
				ok(R, reset()).unstable(-1),
				ok(C, data(1, 0, 1, 1)),
			},
			want: map[int64]ps{1: {0, [][2]int32{{1, 1}}, -1, -1}},
			fuo:  -1, end: 3,
		},
		{
			name:  "same producer before and after MIRROR_PID_RESET in one append",
			steps: []step{ok(R, txn(1, 0, 0, 1), reset(), data(1, 0, 9, 1))},
			want:  map[int64]ps{1: {0, [][2]int32{{9, 9}}, -1, -1}},
			fuo:   -1, end: 3,
		},
		{
			name:  "after MIRROR_PID_RESET a lower epoch is a new producer",
			steps: []step{ok(C, data(1, 5, 0, 1)), ok(Co, reset()), ok(C, data(1, 0, 3, 1))},
			want:  map[int64]ps{1: {0, [][2]int32{{3, 3}}, -1, -1}},
			fuo:   -1, end: 3,
		},
		{
			name:  "a client may not write MIRROR_PID_RESET",
			steps: []step{ok(C, data(1, 0, 0, 1)), fail(C, kerr.InvalidRecord, data(1, 0, 1, 1), reset())},
			want:  map[int64]ps{1: {0, [][2]int32{{0, 0}}, -1, -1}},
			fuo:   -1, end: 1,
		},
		{
			name: "a transaction completed before MIRROR_PID_RESET is still reported and holds the LSO",
			steps: []step{
				ok(C, txn(1, 0, 0, 1)),
				ok(R, abort(1, 0, 0), reset(), txn(2, 0, 0, 1)).completes([]int64{3}, CompletedTxn{1, 0, 1, true}).unstable(0),
				hw(2, 3),
			},
			want: map[int64]ps{2: {0, [][2]int32{{0, 0}}, 3, -1}},
			fuo:  3, end: 4,
		},
		{
			name: "batches without producer id, leader-change and empty control batches carry no state",
			steps: []step{
				ok(C, bt{kind: "plain"}), ok(R, bt{kind: "leader"}), ok(R, bt{kind: "emptyctl", pid: 1}),
				ok(Co, bt{kind: "emptyctl", pid: 1}),
			},
			want: map[int64]ps{},
			fuo:  -1, end: 4,
		},
		{
			name: "a control batch of another type with a producer id is INVALID_RECORD, ignored when replicated",
			steps: []step{
				fail(Co, kerr.InvalidRecord, bt{kind: "ctl9", pid: 1}),
				ok(R, bt{kind: "ctl9", pid: 1}),
			},
			want: map[int64]ps{},
			fuo:  -1, end: 1,
		},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			l := newTestLog(t, "", Options{})
			for i, s := range row.steps {
				ctx := fmt.Sprintf("step %d", i)
				if len(s.batches) > 0 {
					r := l.append(s.origin, s.batches...)
					switch {
					case s.err != nil:
						if !errors.Is(r.err, s.err) {
							t.Fatalf("%s: error %v, want %v", ctx, r.err, s.err)
						}
					case r.err != nil:
						t.Fatalf("%s: unexpected error %v", ctx, r.err)
					}
					var gotDup []int64
					if r.dup != nil {
						gotDup = []int64{r.dup.FirstOffset, r.dup.LastOffset}
					}
					if !reflect.DeepEqual(gotDup, s.dup) {
						t.Fatalf("%s: duplicate %v, want %v", ctx, gotDup, s.dup)
					}
					if !reflect.DeepEqual(r.completed, s.done) {
						t.Fatalf("%s: completed %+v, want %+v", ctx, r.completed, s.done)
					}
					if !reflect.DeepEqual(r.lsos, s.lso) {
						t.Fatalf("%s: LSOs %v, want %v", ctx, r.lsos, s.lso)
					}
				}
				if s.hw > 0 {
					l.m.OnHighWatermarkUpdated(s.hw)
				}
				if s.fuo != nil {
					checkFUO(t, ctx, l.m, *s.fuo)
				}
			}
			checkState(t, l.m, row.want)
			checkFUO(t, "final", l.m, row.fuo)
			if got := l.m.MapEndOffset(); got != row.end {
				t.Errorf("MapEndOffset %d, want %d", got, row.end)
			}
		})
	}
}

func checkFUO(t *testing.T, ctx string, m *Manager, want int64) {
	t.Helper()
	off, ok := m.FirstUnstableOffset()
	if !ok {
		off = -1
	}
	if off != want {
		t.Fatalf("%s: FirstUnstableOffset %d, want %d", ctx, off, want)
	}
}

func checkState(t *testing.T, m *Manager, want map[int64]ps) {
	t.Helper()
	got := map[int64]ps{}
	for _, e := range m.ActiveProducers() {
		var seqs [][2]int32
		for _, b := range e.Batches {
			seqs = append(seqs, [2]int32{b.FirstSeq, b.LastSeq})
		}
		got[e.ProducerID] = ps{e.ProducerEpoch, seqs, e.CurrentTxnFirstOffset, e.CoordinatorEpoch}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("producers:\n got  %+v\n want %+v", got, want)
	}
}
