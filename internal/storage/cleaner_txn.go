package storage

import (
	"container/heap"
	"fmt"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage/producerstate"
)

// cleanerTxns follows transactions while the cleaner walks a log in offset
// order (Kafka's CleanedTransactionMetadata). It decides which batches a
// transaction lets the cleaner discard:
//
//   - a data batch of an aborted transaction: always (its records were never
//     visible to READ_COMMITTED readers, and READ_UNCOMMITTED readers of a
//     compacted topic get no guarantee about them);
//   - an ABORT marker: once a pass meets no batch of its transaction any
//     more; while batches remain, the marker is kept and its .txnindex entry
//     copied to the cleaned segment, so READ_COMMITTED readers still skip
//     what is left (the emptied last batch of a producer, for example);
//   - a COMMIT marker: once a pass meets no batch of its transaction.
//
// A discardable marker is not dropped at once: the filter gives it a delete
// horizon first, as it does for tombstones (see batchFilter).
//
// Invariants: pending holds the aborted transactions (from the .txnindex
// files) not yet reached, ordered by first offset; aborted holds, per
// producer, the aborted transaction the walk is inside; a (producer, first
// offset) pair is added to pending at most once per walk.
type cleanerTxns struct {
	pending   abortedHeap
	seen      map[abortKey]bool
	aborted   map[int64]*abortedInWalk
	committed map[int64]bool // producers with data met since their last marker, not aborted
	// out receives the .txnindex entries of the ABORT markers kept, for the
	// segment being written; nil while building the offset map.
	out *producerstate.TxnIndex
}

type abortKey struct{ pid, first int64 }

// abortedInWalk is an aborted transaction the walk has entered.
type abortedInWalk struct {
	txn      producerstate.AbortedTxn
	sawBatch bool // a batch of it was met in this walk
}

func newCleanerTxns() *cleanerTxns {
	return &cleanerTxns{
		seen:      make(map[abortKey]bool),
		aborted:   make(map[int64]*abortedInWalk),
		committed: make(map[int64]bool),
	}
}

// addAborted queues aborted transactions read from the .txnindex files.
func (t *cleanerTxns) addAborted(txns []producerstate.AbortedTxn) {
	for _, a := range txns {
		k := abortKey{a.ProducerID, a.FirstOffset}
		if t.seen[k] {
			continue
		}
		t.seen[k] = true
		heap.Push(&t.pending, a)
	}
}

// enter moves the aborted transactions starting at or below offset into the
// walk.
func (t *cleanerTxns) enter(offset int64) {
	for len(t.pending) > 0 && t.pending[0].FirstOffset <= offset {
		a := heap.Pop(&t.pending).(producerstate.AbortedTxn)
		if _, ok := t.aborted[a.ProducerID]; !ok {
			t.aborted[a.ProducerID] = &abortedInWalk{txn: a}
		}
	}
}

// onData records a data batch and reports whether it belongs to an aborted
// transaction (and may be discarded).
func (t *cleanerTxns) onData(h record.Header) bool {
	t.enter(h.LastOffset())
	if !h.IsTransactional() {
		return false
	}
	if a, ok := t.aborted[h.ProducerID]; ok {
		a.sawBatch = true
		return true
	}
	t.committed[h.ProducerID] = true
	return false
}

// onControl records a control batch of type ctl (hasRecords false for one a
// previous cleaning emptied) and reports whether the cleaner may discard it.
// An ABORT marker that is kept has its .txnindex entry written to out.
// Control batches other than transaction markers (MIRROR_PID_RESET, leader
// changes) are never discardable.
func (t *cleanerTxns) onControl(h record.Header, ctl record.ControlType, hasRecords bool) (bool, error) {
	t.enter(h.LastOffset())
	if !hasRecords {
		return true, nil // what a previous cleaning left of a discarded marker
	}
	switch ctl {
	case record.ControlAbort:
		a, ok := t.aborted[h.ProducerID]
		delete(t.aborted, h.ProducerID)
		if !ok || !a.sawBatch {
			return true, nil
		}
		if t.out != nil {
			if err := t.out.Append(a.txn); err != nil {
				return false, fmt.Errorf("keep aborted transaction of producer %d at %d: %w", a.txn.ProducerID, a.txn.LastOffset, err)
			}
		}
		return false, nil
	case record.ControlCommit:
		met := t.committed[h.ProducerID]
		delete(t.committed, h.ProducerID)
		return !met, nil
	}
	return false, nil
}

// abortedHeap orders aborted transactions by first offset.
type abortedHeap []producerstate.AbortedTxn

func (h abortedHeap) Len() int           { return len(h) }
func (h abortedHeap) Less(i, j int) bool { return h[i].FirstOffset < h[j].FirstOffset }
func (h abortedHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *abortedHeap) Push(x any)        { *h = append(*h, x.(producerstate.AbortedTxn)) }
func (h *abortedHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
