package producerstate

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/record"
)

// Origin says who produced an append; it decides how strictly producer state
// is validated.
type Origin int8

const (
	// OriginClient is a leader append of a producer's batches: full
	// validation of epochs, sequences and transaction state.
	OriginClient Origin = iota
	// OriginReplication is a follower or mirror append, or recovery replay:
	// no validation, the batches are applied as they are (the leader or the
	// source cluster validated them).
	OriginReplication
	// OriginCoordinator is a leader append of transaction markers written by
	// the transaction coordinator, of a coordinator's own batches, or of the
	// MIRROR_PID_RESET a failing-over mirror appends: epochs and coordinator
	// epochs are checked, sequences are not.
	OriginCoordinator
)

// String names the origin for logs.
func (o Origin) String() string {
	switch o {
	case OriginClient:
		return "client"
	case OriginReplication:
		return "replication"
	case OriginCoordinator:
		return "coordinator"
	}
	return fmt.Sprintf("origin(%d)", int8(o))
}

// Append collects the producer-state effects of one log append (possibly
// several batches) in log order. Validation errors are kerr values wrapped
// with context; nothing changes in the Manager until Commit.
//
// An Append works on copies of the entries it touches. After a
// MIRROR_PID_RESET batch it forgets those copies and stops consulting the
// Manager, so later batches start from an empty state; Commit then clears the
// Manager before installing the copies, which is the same as applying every
// batch in order.
type Append struct {
	m      *Manager
	origin Origin

	reset     bool           // a MIRROR_PID_RESET batch was added
	work      []working      // the producers touched since the last reset, in first-touch order
	workIndex map[int64]int  // producer id → index in work, built once work is large
	completed []CompletedTxn // in log order
	nextOff   int64          // offset after the last added batch; -1 before any
	err       error          // first validation error; the append must not be committed
	done      bool           // committed
}

// NewAppend starts collecting the effects of one log append.
func (m *Manager) NewAppend(origin Origin) *Append {
	return &Append{m: m, origin: origin, nextOff: -1}
}

// entry returns the working copy of a producer, creating it from the
// committed state (or empty after a reset).
func (a *Append) entry(pid int64) *Entry {
	if w := a.find(pid); w != nil {
		return w.e
	}
	var e *Entry
	if cur, ok := a.m.producers[pid]; ok && !a.reset {
		e = cur.clone()
	} else {
		e = newEntry(pid)
	}
	a.work = append(a.work, working{e: e, baseEpoch: e.ProducerEpoch})
	switch n := len(a.work); {
	case n == workIndexThreshold:
		a.workIndex = make(map[int64]int, 2*n)
		for i, w := range a.work {
			a.workIndex[w.e.ProducerID] = i
		}
	case n > workIndexThreshold:
		a.workIndex[pid] = n - 1
	}
	return e
}

// working is an Append's copy of one producer's entry.
type working struct {
	e *Entry
	// baseEpoch is the producer's epoch before this append (or since the
	// last reset in it): Kafka accepts any sequence while it is -1.
	baseEpoch int16
}

// workIndexThreshold is the number of producers in one append above which
// lookups use a map; most appends carry one producer, where a linear scan
// allocates nothing.
const workIndexThreshold = 8

// find returns the working copy of pid, nil if the append has not touched it.
func (a *Append) find(pid int64) *working {
	if a.workIndex != nil {
		if i, ok := a.workIndex[pid]; ok {
			return &a.work[i]
		}
		return nil
	}
	for i := range a.work {
		if a.work[i].e.ProducerID == pid {
			return &a.work[i]
		}
	}
	return nil
}

// Add validates one batch whose header already carries its final offsets and
// records its effect. For a control batch pass its control type
// (record.ControlTypeOf) and, for COMMIT/ABORT, the coordinator epoch of the
// marker; for a data batch ctl is -1. Batches without a producer id, other
// than MIRROR_PID_RESET, have no effect. Like Kafka, control batches
// (markers and MIRROR_PID_RESET) are refused from OriginClient with
// kerr.InvalidRecord: the leader appends a MIRROR_PID_RESET with
// OriginCoordinator. After an error the Append is dead: further Adds return
// the same error and Commit ignores it.
func (a *Append) Add(h record.Header, ctl record.ControlType, coordinatorEpoch int32) error {
	if a.err != nil {
		return a.err
	}
	if a.done {
		return fmt.Errorf("producer state: add to a committed append")
	}
	if err := a.add(h, ctl, coordinatorEpoch); err != nil {
		a.err = err
		return err
	}
	if n := h.NextOffset(); n > a.nextOff {
		a.nextOff = n
	}
	return nil
}

func (a *Append) add(h record.Header, ctl record.ControlType, coordinatorEpoch int32) error {
	if h.IsControl() {
		if h.NumRecords == 0 {
			// An empty control batch is what compaction leaves of a
			// marker whose transaction was cleaned away: no effect.
			return nil
		}
		if ctl == record.ControlMirrorPIDReset {
			if a.origin == OriginClient {
				return fmt.Errorf("producer state: control batch at offset %d from a client: %w", h.BaseOffset, kerr.InvalidRecord)
			}
			a.resetProducers()
			return nil
		}
		if !h.HasProducerID() {
			return nil // LEADER_CHANGE, KRaft records: no producer state
		}
		if ctl != record.ControlAbort && ctl != record.ControlCommit {
			if a.origin == OriginReplication {
				a.m.log.Warn("producer state: ignoring control batch of unexpected type",
					"producer_id", h.ProducerID, "offset", h.BaseOffset, "control_type", int16(ctl))
				return nil
			}
			return fmt.Errorf("producer state: control batch of type %d at offset %d for producer %d is not a transaction marker: %w",
				int16(ctl), h.BaseOffset, h.ProducerID, kerr.InvalidRecord)
		}
		if a.origin == OriginClient {
			return fmt.Errorf("producer state: control batch at offset %d from a client: %w", h.BaseOffset, kerr.InvalidRecord)
		}
		return a.addMarker(h, ctl == record.ControlAbort, coordinatorEpoch)
	}
	if !h.HasProducerID() {
		return nil
	}
	return a.addData(h)
}

// checkEpoch rejects a batch or marker whose producer epoch is older than the
// producer's current one. Since Kafka 2.7 this is INVALID_PRODUCER_EPOCH for
// produce and markers alike (the client aborts and retries instead of dying).
func (a *Append) checkEpoch(e *Entry, h record.Header) error {
	if h.ProducerEpoch >= e.ProducerEpoch {
		return nil
	}
	if a.origin == OriginReplication {
		a.m.log.Warn("producer state: replicated batch has an older producer epoch",
			"producer_id", h.ProducerID, "offset", h.BaseOffset,
			"epoch", h.ProducerEpoch, "current_epoch", e.ProducerEpoch)
		return nil
	}
	return fmt.Errorf("producer %d at offset %d: epoch %d is older than the current epoch %d: %w",
		h.ProducerID, h.BaseOffset, h.ProducerEpoch, e.ProducerEpoch, kerr.InvalidProducerEpoch)
}

// checkSequence applies Kafka's sequence rules to a client batch.
func (a *Append) checkSequence(e *Entry, h record.Header) error {
	if h.ProducerEpoch != e.ProducerEpoch {
		// A new epoch restarts the sequence at 0, unless the producer is
		// unknown here (its state expired or was never written).
		if h.BaseSequence != 0 && e.ProducerEpoch != noEpoch {
			return fmt.Errorf("producer %d at offset %d: new epoch %d (current %d) must start at sequence 0, not %d: %w",
				h.ProducerID, h.BaseOffset, h.ProducerEpoch, e.ProducerEpoch, h.BaseSequence, kerr.OutOfOrderSequenceNumber)
		}
		return nil
	}
	// A producer with no known epoch before this append (its entries were
	// removed by retention, DeleteRecords, expiry or a reset) may continue
	// at any sequence, as Kafka accepts since KIP-360.
	if w := a.find(h.ProducerID); w == nil || w.baseEpoch == noEpoch {
		return nil
	}
	last := e.lastSeq()
	if !inSequence(last, h.BaseSequence) {
		return fmt.Errorf("producer %d at offset %d: sequence %d does not follow %d: %w",
			h.ProducerID, h.BaseOffset, h.BaseSequence, last, kerr.OutOfOrderSequenceNumber)
	}
	return nil
}

func (a *Append) addData(h record.Header) error {
	e := a.entry(h.ProducerID)
	if err := a.checkEpoch(e, h); err != nil {
		return err
	}
	if a.origin == OriginClient {
		if err := a.checkSequence(e, h); err != nil {
			return err
		}
	}
	txn := h.IsTransactional()
	keepTxn := false
	if e.CurrentTxnFirstOffset >= 0 && !txn {
		if a.origin != OriginReplication {
			return fmt.Errorf("producer %d at offset %d: non-transactional batch during an ongoing transaction: %w",
				h.ProducerID, h.BaseOffset, kerr.InvalidTxnState)
		}
		// Replicated bytes are applied, never refused: the transaction stays
		// open until its marker.
		a.m.log.Warn("producer state: replicated non-transactional batch during an ongoing transaction",
			"producer_id", h.ProducerID, "offset", h.BaseOffset, "txn_first_offset", e.CurrentTxnFirstOffset)
		keepTxn = true
	}
	e.addBatch(h.ProducerEpoch, BatchMetadata{
		FirstSeq:    h.BaseSequence,
		LastSeq:     h.LastSequence(),
		FirstOffset: h.BaseOffset,
		LastOffset:  h.LastOffset(),
		Timestamp:   h.MaxTimestamp,
	})
	if txn && e.CurrentTxnFirstOffset < 0 && !keepTxn {
		e.CurrentTxnFirstOffset = h.BaseOffset
	}
	return nil
}

func (a *Append) addMarker(h record.Header, aborted bool, coordinatorEpoch int32) error {
	e := a.entry(h.ProducerID)
	if err := a.checkEpoch(e, h); err != nil {
		return err
	}
	if coordinatorEpoch < e.CoordinatorEpoch {
		if a.origin != OriginReplication {
			return fmt.Errorf("producer %d at offset %d: marker coordinator epoch %d is older than %d: %w",
				h.ProducerID, h.BaseOffset, coordinatorEpoch, e.CoordinatorEpoch, kerr.TransactionCoordinatorFenced)
		}
		a.m.log.Info("producer state: replicated marker has an older coordinator epoch",
			"producer_id", h.ProducerID, "offset", h.BaseOffset,
			"coordinator_epoch", coordinatorEpoch, "current_coordinator_epoch", e.CoordinatorEpoch)
	}
	if e.CurrentTxnFirstOffset >= 0 {
		a.completed = append(a.completed, CompletedTxn{
			ProducerID:   h.ProducerID,
			FirstOffset:  e.CurrentTxnFirstOffset,
			MarkerOffset: h.BaseOffset,
			Aborted:      aborted,
		})
	}
	e.setEpoch(h.ProducerEpoch)
	e.CoordinatorEpoch = coordinatorEpoch
	e.CurrentTxnFirstOffset = -1
	e.LastTimestamp = h.MaxTimestamp
	return nil
}

// resetProducers applies MIRROR_PID_RESET at this point of the append.
func (a *Append) resetProducers() {
	a.reset = true
	clear(a.work)
	a.work = a.work[:0]
	a.workIndex = nil
}

// CompletedTxns lists the transactions the added markers complete, in log
// order. The Log writes an AbortedTxn to the segment's .txnindex for each
// aborted one, with LastStableOffsetAfter as its LSO.
func (a *Append) CompletedTxns() []CompletedTxn {
	return append([]CompletedTxn(nil), a.completed...)
}

// ResetsProducers reports whether a MIRROR_PID_RESET batch was added.
func (a *Append) ResetsProducers() bool { return a.reset }

// Commit applies the append after its bytes were written to the log, and
// advances MapEndOffset past the last added batch. A MIRROR_PID_RESET batch
// removes every producer entry (and every ongoing transaction) at the point
// in the batch order where it occurs. An Append that failed validation, was
// already committed or belongs to another Manager is ignored with a log line.
func (m *Manager) Commit(a *Append) {
	switch {
	case a == nil:
		return
	case a.m != m || a.done || a.err != nil:
		m.log.Error("producer state: refusing to commit an append",
			"foreign", a.m != m, "committed", a.done, "error", a.err)
		return
	}
	a.done = true
	if a.reset {
		clear(m.producers)
		clear(m.ongoing)
		m.log.Info("producer state: MIRROR_PID_RESET removed every producer")
	}
	for _, w := range a.work {
		pid, e := w.e.ProducerID, w.e
		m.producers[pid] = e
		if e.CurrentTxnFirstOffset >= 0 {
			m.ongoing[pid] = e.CurrentTxnFirstOffset
		} else {
			delete(m.ongoing, pid)
		}
	}
	m.unreplicated = append(m.unreplicated, a.completed...)
	if a.nextOff > m.mapEnd {
		m.mapEnd = a.nextOff
	}
	a.work, a.workIndex = nil, nil
}
