package txn

import (
	"context"
	"slices"
	"time"

	"github.com/kmirror/kmirror/internal/coordinator"
)

// shard is the transaction coordinator's state for one __transaction_state
// partition: the metadata of its transactional ids. It runs on the
// runtime's shard goroutine (see package coordinator); marker jobs run on
// their own goroutines and come back to it only through runtime writes.
type shard struct {
	c    *Coordinator
	ctx  coordinator.ShardContext[*shard]
	txns map[string]*Txn

	// jobCtx is cancelled when the shard unloads: the marker jobs it
	// started stop, and the next load of the partition starts them again.
	jobCtx     context.Context
	cancelJobs context.CancelFunc
}

func (c *Coordinator) newShard(ctx coordinator.ShardContext[*shard]) *shard {
	jobCtx, cancel := context.WithCancel(context.Background())
	return &shard{c: c, ctx: ctx, txns: map[string]*Txn{}, jobCtx: jobCtx, cancelJobs: cancel}
}

func (s *shard) nowMs() int64 { return s.ctx.Clock.Now().UnixMilli() }

// Replay applies one record of the partition: the latest metadata of a
// transactional id, or its removal.
func (s *shard) Replay(r coordinator.LoggedRecord) error {
	id, err := DecodeKey(r.Key)
	if err != nil {
		return err
	}
	if r.Value == nil {
		delete(s.txns, id)
		return nil
	}
	t, err := DecodeValue(id, r.Value)
	if err != nil {
		return err
	}
	if t.State == Dead {
		delete(s.txns, id)
		return nil
	}
	s.txns[id] = t
	return nil
}

// ReplayMarker ignores transaction markers: __transaction_state is never
// part of a transaction.
func (s *shard) ReplayMarker(int64, coordinator.Marker) error { return nil }

// Loaded resumes the completion of every prepared transaction (its markers
// may or may not have been written before the previous coordinator
// stopped; writing them again is harmless) and starts the timers.
func (s *shard) Loaded() {
	prepared := 0
	for _, id := range s.ids() {
		if t := s.txns[id]; t.State.Prepared() {
			s.startMarkers(t)
			prepared++
		}
	}
	if prepared > 0 {
		s.ctx.Logger.Info("completing prepared transactions found while loading", "transactions", prepared)
	}
	s.scheduleAbortTimedOut()
	s.scheduleExpireIDs()
}

// Unloaded stops the shard's marker jobs.
func (s *shard) Unloaded() { s.cancelJobs() }

// ids returns the transactional ids in order (deterministic iteration).
func (s *shard) ids() []string {
	ids := make([]string, 0, len(s.txns))
	for id := range s.txns {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// txnRecord is the record that stores t (a tombstone when Dead).
func txnRecord(t *Txn) coordinator.Record {
	return coordinator.Record{Key: EncodeKey(t.ID), Value: EncodeValue(t)}
}

// install makes a committed transition current and starts what it asks.
func (s *shard) install(tr Transition) {
	t := tr.Next
	if t == nil {
		return
	}
	if t.State == Dead {
		delete(s.txns, t.ID)
	} else {
		s.txns[t.ID] = t
	}
	if tr.Markers != nil {
		s.startMarkers(t)
	}
}

// startMarkers starts the job that writes the markers of the prepared
// transaction t and then completes it.
func (s *shard) startMarkers(t *Txn) {
	job := markerJobOf(t)
	c, ctx := s.c, s.jobCtx
	partition, epoch := s.ctx.Partition, s.ctx.LeaderEpoch
	c.jobs.Add(1)
	go func() {
		defer c.jobs.Done()
		c.runMarkerJob(ctx, partition, epoch, job)
	}()
}

// Timer keys of a shard.
const (
	abortTimedOutTimer = "abort-timed-out"
	expireIDsTimer     = "expire-transactional-ids"
)

// maxTimerRecords bounds the records one timer write carries; the rest
// waits for the next round, which then comes at once.
const maxTimerRecords = 500

func (s *shard) scheduleAbortTimedOut() {
	s.scheduleTimer(abortTimedOutTimer, s.c.cfg.AbortTimedOutInterval, (*shard).abortTimedOut)
}

func (s *shard) scheduleExpireIDs() {
	s.scheduleTimer(expireIDsTimer, s.c.cfg.RemoveExpiredIDsInterval, (*shard).expireIDs)
}

func (s *shard) scheduleTimer(key string, after time.Duration, op coordinator.Op[*shard]) {
	s.ctx.Timers.Schedule(key, s.ctx.Clock.Now().Add(after), op)
}

// abortTimedOut aborts, with a bumped epoch, every Ongoing transaction past
// its timeout, in one write.
func (s *shard) abortTimedOut() (coordinator.Result, error) {
	return s.sweep(func(t *Txn, now int64) Transition { return Handle(t, TimeoutEvent{Now: now}) },
		abortTimedOutTimer, s.c.cfg.AbortTimedOutInterval, (*shard).abortTimedOut,
		"aborting transaction past its timeout")
}

// expireIDs removes every transactional id idle for longer than
// transactional.id.expiration.ms, in one write of tombstones.
func (s *shard) expireIDs() (coordinator.Result, error) {
	exp := s.c.cfg.IDExpiration.Milliseconds()
	return s.sweep(func(t *Txn, now int64) Transition { return Handle(t, ExpireEvent{Now: now, ExpirationMs: exp}) },
		expireIDsTimer, s.c.cfg.RemoveExpiredIDsInterval, (*shard).expireIDs,
		"removing expired transactional id")
}

// sweep runs event on every id and writes the transitions that change
// something in one batch, then schedules itself again under key: after
// interval, or at once when it left transitions for the next batch. The
// schedule is renewed whatever the write's outcome (an unknown outcome
// reloads the shard, whose load schedules anew).
func (s *shard) sweep(event func(*Txn, int64) Transition, key string, interval time.Duration, self coordinator.Op[*shard], msg string) (coordinator.Result, error) {
	now := s.nowMs()
	var trs []Transition
	var recs []coordinator.Record
	next := interval
	for _, id := range s.ids() {
		tr := event(s.txns[id], now)
		if tr.Next == nil {
			continue
		}
		if len(recs) == maxTimerRecords {
			next = 0
			break
		}
		trs = append(trs, tr)
		recs = append(recs, txnRecord(tr.Next))
	}
	return coordinator.Result{
		Records: recs,
		Apply: func(int64) {
			for _, tr := range trs {
				old := s.txns[tr.Next.ID]
				s.ctx.Logger.Info(msg, "transactional_id", tr.Next.ID, "producer_id", tr.Next.ProducerID,
					"producer_epoch", old.ProducerEpoch, "new_producer_epoch", tr.Next.ProducerEpoch)
				s.install(tr)
			}
			s.scheduleTimer(key, next, self)
		},
		OnError: func(err error) {
			s.ctx.Logger.Warn(msg+" failed", "err", err)
			s.scheduleTimer(key, interval, self)
		},
	}, nil
}
