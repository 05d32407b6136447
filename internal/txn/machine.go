package txn

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/storage"
)

// Event is an input of the state machine of one transactional id: a client
// request (InitProducerIDEvent, AddPartitionsEvent, EndTxnEvent), the end of
// a transaction's markers (CompleteEvent) or a timer (TimeoutEvent,
// ExpireEvent). Times are milliseconds since the epoch; the machine reads no
// clock.
type Event interface{ isEvent() }

// InitProducerIDEvent is an InitProducerId request with a transactional id.
type InitProducerIDEvent struct {
	TransactionalID string
	TimeoutMs       int32
	// MaxTimeoutMs is transaction.max.timeout.ms.
	MaxTimeoutMs int32
	// ExpectedProducerID and ExpectedEpoch are the producer id and epoch the
	// client has (KIP-360 recovery, InitProducerId v3+), NoProducerID and
	// NoProducerEpoch when it has none.
	ExpectedProducerID int64
	ExpectedEpoch      int16
	// NewProducerID is a fresh producer id for the transition to use when
	// it needs one (a new transactional id, an exhausted epoch);
	// NoProducerID when the driver has not allocated one: the transition
	// then asks for it (NeedProducerID).
	NewProducerID int64
	Now           int64
}

// AddPartitionsEvent adds partitions to the producer's transaction
// (AddPartitionsToTxn, and AddOffsetsToTxn with the group's
// __consumer_offsets partition).
type AddPartitionsEvent struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Partitions      []storage.TopicPartition
	Now             int64
}

// EndTxnEvent is a client's request to commit or abort its transaction.
type EndTxnEvent struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Commit          bool
	Now             int64
}

// CompleteEvent says that every marker of a prepared transaction was
// written: the transaction becomes CompleteCommit or CompleteAbort.
type CompleteEvent struct {
	ProducerID    int64
	ProducerEpoch int16
	Commit        bool
	Now           int64
}

// TimeoutEvent is the periodic check for transactions past their timeout:
// an Ongoing transaction that started more than its timeout ago is aborted
// by the coordinator with a bumped epoch, fencing the producer.
type TimeoutEvent struct{ Now int64 }

// ExpireEvent is the periodic check for idle transactional ids: one with no
// transaction in progress and no update for ExpirationMs
// (transactional.id.expiration.ms) is removed.
type ExpireEvent struct {
	Now          int64
	ExpirationMs int64
}

func (InitProducerIDEvent) isEvent() {}
func (AddPartitionsEvent) isEvent()  {}
func (EndTxnEvent) isEvent()         {}
func (CompleteEvent) isEvent()       {}
func (TimeoutEvent) isEvent()        {}
func (ExpireEvent) isEvent()         {}

// Transition is the outcome of one event for one transactional id.
//
// A driver writes Next (a tombstone when Next.State is Dead) when it is not
// nil, and only once the record is committed installs it, answers Err (and
// ProducerID/ProducerEpoch) and starts Markers. When Next is nil nothing is
// written and the answer is given at once. When NeedProducerID is set the
// driver allocates a producer id and runs the event again with it.
type Transition struct {
	Next           *Txn
	Err            *kerr.Error
	ProducerID     int64
	ProducerEpoch  int16
	Markers        *MarkerJob
	NeedProducerID bool
}

// MarkerJob is the markers a prepared transaction needs: one COMMIT or ABORT
// marker with the producer id and epoch in each of its partitions.
type MarkerJob struct {
	TransactionalID string
	ProducerID      int64
	ProducerEpoch   int16
	Commit          bool
	Partitions      []storage.TopicPartition
}

// markerJobOf returns the marker job of a prepared transaction.
func markerJobOf(t *Txn) *MarkerJob {
	return &MarkerJob{
		TransactionalID: t.ID,
		ProducerID:      t.ProducerID,
		ProducerEpoch:   t.ProducerEpoch,
		Commit:          t.State == PrepareCommit,
		Partitions:      t.Partitions,
	}
}

// Handle returns the transition of the transactional id whose metadata is
// cur (nil when the id is unknown) for ev.
func Handle(cur *Txn, ev Event) Transition {
	switch ev := ev.(type) {
	case InitProducerIDEvent:
		return initProducerID(cur, ev)
	case AddPartitionsEvent:
		return addPartitions(cur, ev)
	case EndTxnEvent:
		return endTxn(cur, ev)
	case CompleteEvent:
		return complete(cur, ev)
	case TimeoutEvent:
		return timeout(cur, ev)
	case ExpireEvent:
		return expire(cur, ev)
	}
	return fail(kerr.UnknownServerError)
}

func fail(err *kerr.Error) Transition {
	return Transition{Err: err, ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}
}

// initProducerID gives the producer its id and epoch: a new id for a new
// transactional id, the next epoch otherwise (fencing the producers with
// older epochs), a new id when the epochs are exhausted. An Ongoing
// transaction is first aborted with a bumped epoch and the client told to
// retry (CONCURRENT_TRANSACTIONS); the bumped epoch is never handed out, so
// the retry bumps again.
func initProducerID(cur *Txn, ev InitProducerIDEvent) Transition {
	if ev.TransactionalID == "" {
		return fail(kerr.InvalidRequest)
	}
	if ev.TimeoutMs <= 0 || ev.TimeoutMs > ev.MaxTimeoutMs {
		return fail(kerr.InvalidTransactionTimeout)
	}
	if cur == nil {
		if ev.NewProducerID < 0 {
			return Transition{NeedProducerID: true, ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}
		}
		// A fresh id, as Kafka creates it before bumping its epoch to 0.
		cur = &Txn{
			ID:                ev.TransactionalID,
			ProducerID:        ev.NewProducerID,
			ProducerEpoch:     NoProducerEpoch,
			LastProducerID:    NoProducerID,
			LastProducerEpoch: NoProducerEpoch,
			TimeoutMs:         ev.TimeoutMs,
			State:             Empty,
			StartTime:         -1,
			LastUpdate:        ev.Now,
		}
		// The id we just made is not the client's to reuse.
		ev.NewProducerID = NoProducerID
	}
	expected := ev.ExpectedProducerID >= 0
	if expected {
		// Fence the client unless its id is the current one (the epoch is
		// checked below), the metadata was just created (a producer
		// recovering from UNKNOWN_PRODUCER_ID), or it is the previous id
		// with an exhausted epoch (a retry of a rotation whose answer was
		// lost).
		valid := cur.ProducerEpoch == NoProducerEpoch ||
			ev.ExpectedProducerID == cur.ProducerID ||
			(ev.ExpectedProducerID == cur.LastProducerID && epochExhausted(ev.ExpectedEpoch))
		if !valid {
			return fail(kerr.ProducerFenced)
		}
	}
	switch {
	case cur.State.Prepared():
		return fail(kerr.ConcurrentTransactions)
	case cur.State == Ongoing:
		t := fence(cur, ev.Now)
		t.Err = kerr.ConcurrentTransactions
		return t
	case !cur.State.Completed():
		return fail(kerr.UnknownServerError)
	}
	next := cur.clone()
	if epochExhausted(cur.ProducerEpoch) && (!expected || ev.ExpectedEpoch == cur.ProducerEpoch) {
		if ev.NewProducerID < 0 {
			return Transition{NeedProducerID: true, ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}
		}
		next.LastProducerID = cur.ProducerID
		next.LastProducerEpoch = NoProducerEpoch
		if expected {
			next.LastProducerEpoch = cur.ProducerEpoch
		}
		next.ProducerID, next.ProducerEpoch = ev.NewProducerID, 0
	} else {
		switch {
		case !expected:
			next.ProducerEpoch, next.LastProducerEpoch = cur.ProducerEpoch+1, NoProducerEpoch
		case cur.ProducerEpoch == NoProducerEpoch || ev.ExpectedEpoch == cur.ProducerEpoch:
			next.ProducerEpoch, next.LastProducerEpoch = cur.ProducerEpoch+1, cur.ProducerEpoch
		case ev.ExpectedEpoch == cur.LastProducerEpoch:
			// A retry of a bump whose answer was lost: the same epoch again.
		default:
			return fail(kerr.ProducerFenced)
		}
		if next.ProducerEpoch > cur.ProducerEpoch && epochExhausted(cur.ProducerEpoch) {
			return fail(kerr.ProducerFenced)
		}
	}
	next.TimeoutMs = ev.TimeoutMs
	next.State = Empty
	next.Partitions = nil
	next.StartTime = -1
	next.LastUpdate = ev.Now
	return Transition{Next: next, ProducerID: next.ProducerID, ProducerEpoch: next.ProducerEpoch}
}

// fence aborts cur's Ongoing transaction on the coordinator's initiative,
// bumping the epoch so that the producer (a zombie, or one about to be
// replaced) can write nothing more: PrepareEpochFence followed at once by
// PrepareAbort, in one record. At the last epoch there is nothing to bump
// to; the abort then happens at the current epoch.
func fence(cur *Txn, now int64) Transition {
	next := cur.clone()
	if next.ProducerEpoch < math.MaxInt16 {
		next.ProducerEpoch++
	}
	next.LastProducerEpoch = NoProducerEpoch
	next.State = PrepareAbort
	next.LastUpdate = now
	return Transition{Next: next, Markers: markerJobOf(next), ProducerID: NoProducerID, ProducerEpoch: NoProducerEpoch}
}

// checkProducer applies the checks every transactional request starts with.
func checkProducer(cur *Txn, id string, pid int64, epoch int16) *kerr.Error {
	switch {
	case id == "":
		return kerr.InvalidRequest
	case cur == nil || cur.ProducerID != pid:
		return kerr.InvalidProducerIDMapping
	case cur.ProducerEpoch != epoch:
		return kerr.ProducerFenced
	}
	return nil
}

// addPartitions adds partitions to the transaction, starting it if none is
// in progress.
func addPartitions(cur *Txn, ev AddPartitionsEvent) Transition {
	if err := checkProducer(cur, ev.TransactionalID, ev.ProducerID, ev.ProducerEpoch); err != nil {
		return fail(err)
	}
	switch {
	case cur.State.Prepared():
		return fail(kerr.ConcurrentTransactions)
	case cur.State == Ongoing && cur.hasAll(ev.Partitions):
		return Transition{}
	case cur.State != Ongoing && !cur.State.Completed():
		return fail(kerr.UnknownServerError)
	}
	next := cur.clone()
	if cur.State != Ongoing {
		next.StartTime = ev.Now
		next.Partitions = nil
	}
	next.Partitions = next.withPartitions(ev.Partitions)
	next.State = Ongoing
	next.LastUpdate = ev.Now
	return Transition{Next: next}
}

// endTxn prepares the commit or abort of the Ongoing transaction; retries of
// an end that is done or under way are answered as Kafka answers them.
func endTxn(cur *Txn, ev EndTxnEvent) Transition {
	if err := checkProducer(cur, ev.TransactionalID, ev.ProducerID, ev.ProducerEpoch); err != nil {
		return fail(err)
	}
	switch cur.State {
	case Ongoing:
		next := cur.clone()
		next.State = PrepareAbort
		if ev.Commit {
			next.State = PrepareCommit
		}
		next.LastUpdate = ev.Now
		return Transition{Next: next, Markers: markerJobOf(next)}
	case CompleteCommit, CompleteAbort:
		if ev.Commit == (cur.State == CompleteCommit) {
			return Transition{}
		}
	case PrepareCommit, PrepareAbort:
		if ev.Commit == (cur.State == PrepareCommit) {
			return fail(kerr.ConcurrentTransactions)
		}
	}
	return fail(kerr.InvalidTxnState)
}

// complete ends a prepared transaction once its markers are written. A
// stale job (the transaction moved on meanwhile) changes nothing.
func complete(cur *Txn, ev CompleteEvent) Transition {
	want := PrepareAbort
	if ev.Commit {
		want = PrepareCommit
	}
	if cur == nil || cur.ProducerID != ev.ProducerID || cur.ProducerEpoch != ev.ProducerEpoch || cur.State != want {
		return fail(kerr.InvalidTxnState)
	}
	next := cur.clone()
	next.State = CompleteAbort
	if ev.Commit {
		next.State = CompleteCommit
	}
	next.Partitions = nil
	next.LastUpdate = ev.Now
	return Transition{Next: next}
}

// TimedOut reports whether t is an Ongoing transaction past its timeout at
// now (Kafka aborts when start + timeout < now).
func (t *Txn) TimedOut(now int64) bool {
	return t.State == Ongoing && t.StartTime+int64(t.TimeoutMs) < now
}

func timeout(cur *Txn, ev TimeoutEvent) Transition {
	if cur == nil || !cur.TimedOut(ev.Now) {
		return Transition{}
	}
	return fence(cur, ev.Now)
}

// Expired reports whether t is idle long enough to be removed.
func (t *Txn) Expired(now, expirationMs int64) bool {
	return t.State.Completed() && t.LastUpdate <= now-expirationMs
}

func expire(cur *Txn, ev ExpireEvent) Transition {
	if cur == nil || !cur.Expired(ev.Now, ev.ExpirationMs) {
		return Transition{}
	}
	next := cur.clone()
	next.State = Dead
	next.Partitions = nil
	next.LastUpdate = ev.Now
	return Transition{Next: next}
}

// Verify answers a broker's question (AddPartitionsToTxn with VerifyOnly)
// whether each of tps is part of the producer's transaction: either one
// error for all (the producer is unknown or fenced, or the transaction is
// being completed), or per partition nil (part of it) or
// TRANSACTION_ABORTABLE (not part of it: a late or stray write).
func Verify(cur *Txn, id string, pid int64, epoch int16, tps []storage.TopicPartition) (*kerr.Error, []*kerr.Error) {
	if err := checkProducer(cur, id, pid, epoch); err != nil {
		return err, nil
	}
	if cur.State.Prepared() {
		return kerr.ConcurrentTransactions, nil
	}
	errs := make([]*kerr.Error, len(tps))
	for i, tp := range tps {
		if cur.State != Ongoing || !cur.HasPartition(tp) {
			errs[i] = kerr.TransactionAbortable
		}
	}
	return nil, errs
}
