package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/record"
)

// Shard host states.
const (
	stateLoading int32 = iota
	stateActive
	stateFailed // the load failed
	stateFenced // an append found that leadership moved
	stateClosed
)

type taskKind int8

const (
	taskWrite taskKind = iota
	taskRead
	taskTimer
)

// task is one queued operation.
type task[S Shard] struct {
	kind     taskKind
	ctx      context.Context // nil for timers
	op       Op[S]
	read     func(S) error
	timerKey string
	timerGen uint64
	done     chan error // buffered; nil for timers
}

func (t *task[S]) finish(err error) {
	if t.done != nil {
		t.done <- err
	}
}

// shardHost runs one shard: it loads the partition, then executes queued
// operations one at a time on its goroutine until it is closed.
type shardHost[S Shard] struct {
	rt        *Runtime[S]
	partition int32
	epoch     int32
	log       *slog.Logger

	ctx    context.Context // cancelled by close
	cancel context.CancelFunc
	prev   *shardHost[S] // the previous host of the partition, finished before this one loads
	done   chan struct{}

	state atomic.Int32

	mu     sync.Mutex
	queue  []*task[S]
	wake   chan struct{}
	closed bool

	// Owned by the run goroutine.
	plog        PartitionLog
	shard       S
	loaded      bool // shard was built and not yet unloaded
	timers      *Timers[S]
	timerSeq    uint64
	reloadCause error // set by a write whose outcome is unknown
}

func newShardHost[S Shard](rt *Runtime[S], partition, epoch int32, prev *shardHost[S]) *shardHost[S] {
	ctx, cancel := context.WithCancel(context.Background())
	h := &shardHost[S]{
		rt:        rt,
		partition: partition,
		epoch:     epoch,
		log:       rt.log.With("partition", partition, "leader_epoch", epoch),
		ctx:       ctx,
		cancel:    cancel,
		prev:      prev,
		done:      make(chan struct{}),
		wake:      make(chan struct{}, 1),
	}
	h.state.Store(stateLoading)
	return h
}

// admit answers whether operations are accepted now.
func (h *shardHost[S]) admit() error {
	switch h.state.Load() {
	case stateActive:
		return nil
	case stateLoading:
		return ErrLoading
	case stateFailed:
		return ErrNotAvailable
	default:
		return ErrNotCoordinator
	}
}

// enqueue adds a task; false if the host is closed.
func (h *shardHost[S]) enqueue(t *task[S]) bool {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return false
	}
	h.queue = append(h.queue, t)
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default:
	}
	return true
}

// close stops the host; run returns after failing what is queued.
func (h *shardHost[S]) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.state.Store(stateClosed)
	h.cancel()
}

// take returns the queued tasks.
func (h *shardHost[S]) take() []*task[S] {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queue
	h.queue = nil
	return q
}

func (h *shardHost[S]) run() {
	defer close(h.done)
	defer h.failQueued(ErrNotCoordinator)
	if h.prev != nil {
		select {
		case <-h.prev.done:
		case <-h.ctx.Done():
			return
		}
		h.prev = nil
	}
	plog, err := h.rt.host.PartitionLog(h.rt.cfg.Topic, h.partition)
	if err != nil {
		h.log.Error("coordinator partition has no local log", "err", err)
		h.fail(stateFailed)
		return
	}
	h.plog = plog
	if h.loadShard() {
		h.serve()
	} else {
		h.fail(stateFailed)
	}
	h.unloadShard()
}

// serve executes queued tasks until the host is closed.
func (h *shardHost[S]) serve() {
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.wake:
		}
		for _, t := range h.take() {
			if err := h.admit(); err != nil {
				t.finish(err)
				continue
			}
			h.execute(t)
			if cause := h.reloadCause; cause != nil {
				h.reloadCause = nil
				if !h.reload(cause) {
					h.fail(stateFailed)
					return
				}
			}
		}
	}
}

// fail leaves the host failed (unless it is closed), answering tasks with
// the state's error until it is closed.
func (h *shardHost[S]) fail(state int32) {
	for {
		cur := h.state.Load()
		if cur == stateClosed || h.state.CompareAndSwap(cur, state) {
			break
		}
	}
	for {
		for _, t := range h.take() {
			t.finish(h.admit())
		}
		select {
		case <-h.ctx.Done():
			return
		case <-h.wake:
		}
	}
}

// failQueued closes the queue and answers what is in it.
func (h *shardHost[S]) failQueued(err error) {
	h.mu.Lock()
	h.closed = true
	q := h.queue
	h.queue = nil
	h.mu.Unlock()
	for _, t := range q {
		t.finish(err)
	}
}

// loadShard builds a fresh shard and replays the partition into it,
// reporting whether the shard is now active.
func (h *shardHost[S]) loadShard() bool {
	h.timers = newTimers(h)
	h.shard = h.rt.cfg.NewShard(ShardContext[S]{
		Topic:       h.rt.cfg.Topic,
		Partition:   h.partition,
		LeaderEpoch: h.epoch,
		Timers:      h.timers,
		Clock:       h.rt.clock,
		Logger:      h.log,
	})
	h.loaded = true
	start := h.rt.clock.Now()
	stats, err := h.load()
	if err != nil {
		if h.ctx.Err() == nil {
			h.log.Error("loading coordinator partition failed", "err", err)
		}
		return false
	}
	if !h.protect("loaded", h.shard.Loaded) {
		return false
	}
	if !h.state.CompareAndSwap(stateLoading, stateActive) {
		return false // closed meanwhile
	}
	h.log.Info("coordinator partition loaded", "records", stats.records, "skipped", stats.skipped,
		"end_offset", stats.end, "elapsed", h.rt.clock.Now().Sub(start))
	return true
}

// unloadShard stops the shard's timers and lets it fail what it holds.
func (h *shardHost[S]) unloadShard() {
	if !h.loaded {
		return
	}
	h.loaded = false
	h.timers.stopAll()
	h.protect("unloaded", h.shard.Unloaded)
}

// reload replaces the shard by a fresh load of the log, after a write whose
// outcome is unknown: what the log holds is the truth.
func (h *shardHost[S]) reload(cause error) bool {
	h.log.Warn("coordinator write outcome unknown: reloading the partition from its log", "err", cause)
	if !h.state.CompareAndSwap(stateActive, stateLoading) && h.state.Load() != stateLoading {
		return false // closed
	}
	h.unloadShard()
	for _, t := range h.take() {
		t.finish(ErrLoading)
	}
	return h.loadShard()
}

// execute runs one task on the shard.
func (h *shardHost[S]) execute(t *task[S]) {
	switch t.kind {
	case taskRead:
		if err := t.ctx.Err(); err != nil {
			t.finish(err)
			return
		}
		var err error
		if !h.protect("read", func() { err = t.read(h.shard) }) {
			err = fmt.Errorf("coordinator read failed: %w", kerr.UnknownServerError)
		}
		t.finish(err)
	case taskWrite:
		if err := t.ctx.Err(); err != nil {
			t.finish(err)
			return
		}
		t.finish(h.write(t.op))
	case taskTimer:
		op, ok := h.timers.take(t.timerKey, t.timerGen)
		if !ok {
			return
		}
		if err := h.write(op); err != nil {
			h.log.Warn("coordinator timer operation failed", "timer", t.timerKey, "err", err)
		}
	}
}

// write runs op, appends its records, waits for the commit and applies.
func (h *shardHost[S]) write(op Op[S]) error {
	var res Result
	var err error
	if !h.protect("operation", func() { res, err = op(h.shard) }) {
		return fmt.Errorf("coordinator operation failed: %w", kerr.UnknownServerError)
	}
	if err != nil {
		return err
	}
	if len(res.Records) == 0 && res.Marker == nil {
		return h.apply(res, -1)
	}
	batch, err := h.buildBatch(res)
	if err != nil {
		if res.OnError != nil {
			h.protect("error handler", func() { res.OnError(err) })
		}
		return err
	}
	ctx, cancel := context.WithTimeout(h.ctx, h.rt.cfg.AppendTimeout)
	base, err := h.plog.Append(ctx, batch, h.epoch)
	cancel()
	if err == nil {
		return h.apply(res, base)
	}
	err = timeoutError(fmt.Errorf("append to %s-%d: %w", h.rt.cfg.Topic, h.partition, err))
	if h.ctx.Err() != nil {
		return ErrNotCoordinator
	}
	switch classifyAppendError(err) {
	case refused:
		if res.OnError != nil {
			h.protect("error handler", func() { res.OnError(err) })
		}
	case fenced:
		h.log.Warn("coordinator append fenced: leadership moved", "err", err)
		h.state.Store(stateFenced)
		h.timers.stopAll()
		return fmt.Errorf("%w: %w", err, kerr.NotCoordinator)
	case unknown:
		// Stop admitting operations before the caller hears of the failure:
		// the state is reloaded from the log before anything else runs.
		h.reloadCause = err
		h.state.CompareAndSwap(stateActive, stateLoading)
	}
	return err
}

// apply runs a committed result's Apply; a panic there leaves the shard in
// an unknown state, so it is reloaded.
func (h *shardHost[S]) apply(res Result, base int64) error {
	if res.Apply == nil {
		return nil
	}
	if !h.protect("apply", func() { res.Apply(base) }) {
		h.reloadCause = errors.New("apply panicked")
		h.state.CompareAndSwap(stateActive, stateLoading)
		return fmt.Errorf("coordinator apply failed: %w", kerr.UnknownServerError)
	}
	return nil
}

// buildBatch encodes a result's records or marker as one batch.
func (h *shardHost[S]) buildBatch(res Result) ([]byte, error) {
	now := h.rt.clock.Now().UnixMilli()
	if res.Marker != nil {
		m := res.Marker
		return record.BuildEndTxnMarker(m.ProducerID, m.ProducerEpoch,
			record.EndTxnMarker{Commit: m.Commit, CoordinatorEpoch: m.CoordinatorEpoch}, now, h.epoch), nil
	}
	spec := record.BatchSpec{
		PartitionLeaderEpoch: h.epoch,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
		BaseTimestamp:        now,
	}
	if p := res.Producer; p != nil {
		spec.ProducerID, spec.ProducerEpoch = p.ID, p.Epoch
		spec.BaseSequence = 0
		spec.Transactional = true
	}
	recs := make([]record.Record, len(res.Records))
	for i, r := range res.Records {
		recs[i] = record.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
	}
	b, err := record.Build(spec, recs)
	if err != nil {
		return nil, fmt.Errorf("build coordinator batch: %w: %w", err, kerr.RecordListTooLarge)
	}
	return b, nil
}

// protect runs f, turning a panic into a logged failure: a bug in one
// coordinator operation must not take the broker down.
func (h *shardHost[S]) protect(what string, f func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			h.log.Error("coordinator "+what+" panicked", "panic", r, "stack", string(debug.Stack()))
			ok = false
		}
	}()
	f()
	return true
}
