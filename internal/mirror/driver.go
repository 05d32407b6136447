package mirror

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/broker"
	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
	"github.com/kmirror/kmirror/internal/mirror/readonly"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// driverSpec is what a driver is created with.
type driverSpec struct {
	key         mirrorstate.PartitionKey
	tp          storage.TopicPartition
	leaderEpoch int32
	part        *broker.Partition
	desired     Desired
	raw         string  // mirror.name as configured
	prev        *driver // the partition's previous driver, finished first
}

// driver runs the state machine of one mirrored partition on its leader,
// for one leader epoch: it reads the persisted state, then applies events
// (desired state changes from the manager, outcomes of its own work) one at
// a time on its goroutine, persisting each transition before running its
// actions. A leadership change ends the driver; the next leader's driver
// starts over from the persisted state.
type driver struct {
	m           *Manager
	source      *source
	key         mirrorstate.PartitionKey
	tp          storage.TopicPartition
	topicID     [16]byte
	leaderEpoch int32
	part        *broker.Partition
	stats       *liveStats
	log         *slog.Logger
	prev        *driver

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	queue   []Event
	desired Desired // the latest desired state, also for the first read
	raw     string
	wake    chan struct{}
	status  Status // the machine's status, for DescribeMirrors
	known   bool   // status was read

	// Owned by the run goroutine.
	machine  Machine
	work     *work
	timers   []*delayed // postLater's; stopped by cleanup
	released bool
	// reported: the partition's STOPPED was reported to the controller
	// (failover_complete.go).
	reported bool

	// The leader epoch raise of epoch_floor.go: the greatest mirrored
	// epoch asked for, and whether its goroutine runs.
	epochWant    atomic.Int32
	epochBumping atomic.Bool
}

// work is PREPARING's or STOPPING's job in flight.
type work struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func newDriver(m *Manager, src *source, s driverSpec) *driver {
	d := &driver{
		m: m, source: src, key: s.key, tp: s.tp, topicID: s.key.TopicID, leaderEpoch: s.leaderEpoch,
		part: s.part, stats: newLiveStats(m.cfg.Now()), prev: s.prev, desired: s.desired, raw: s.raw,
		log:  m.log.With("mirror", s.key.Mirror, "topic", s.tp.Topic, "partition", s.tp.Partition, "leader_epoch", s.leaderEpoch),
		done: make(chan struct{}),
		wake: make(chan struct{}, 1),
	}
	if s.prev != nil && s.prev.key == s.key {
		// A new leader epoch of the same leadership (the epoch floor, a
		// failover bump): the figures DescribeMirrors shows carry on
		// rather than drop to "unknown" until the next fetch.
		d.stats = s.prev.stats
		// Until it has read the state, it shows the one its predecessor
		// last published (the same record in __mirror_state).
		st, known, _ := s.prev.snapshot()
		d.status, d.known = st, known
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	return d
}

func (d *driver) start() {
	d.m.wg.Add(1)
	go func() {
		defer d.m.wg.Done()
		defer close(d.done)
		d.run()
	}()
}

// stop ends the driver (leadership lost, or replaced); it returns at once,
// done closes when its work has stopped.
func (d *driver) stop() { d.cancel() }

// setDesired tells the driver what mirror.name now asks.
func (d *driver) setDesired(desired Desired, raw string) {
	d.mu.Lock()
	d.desired, d.raw = desired, raw
	d.mu.Unlock()
	d.post(Event{Kind: EvDesired, Desired: desired})
}

// post queues an event for the driver's goroutine.
func (d *driver) post(ev Event) {
	d.mu.Lock()
	d.queue = append(d.queue, ev)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *driver) take() []Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	q := d.queue
	d.queue = nil
	return q
}

func (d *driver) run() {
	if d.prev != nil {
		select {
		case <-d.prev.done:
		case <-d.ctx.Done():
			return
		}
		d.prev = nil
	}
	defer d.cleanup()
	d.mu.Lock()
	d.applyReadOnlyLocked(Machine{Desired: d.desired})
	d.mu.Unlock()
	for d.ctx.Err() == nil && !d.released {
		if !d.load() {
			return
		}
		switch d.step(Event{Kind: EvStart}) {
		case stepReload: // the claim was fenced: another leader wrote
			continue
		case stepDone: // released, or stopped
			return
		}
		if d.loop() {
			return
		}
		// The state was written by someone else meanwhile: read it again.
	}
}

// load reads the persisted state, retrying until it succeeds or the
// driver stops.
func (d *driver) load() bool {
	d.stopWork()
	backoff := 50 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(d.ctx, d.m.cfg.RequestTimeout)
		st, err := d.m.deps.Store.Read(ctx, d.key)
		cancel()
		if err == nil {
			d.mu.Lock()
			desired := d.desired
			d.queue = nil // the machine starts from the latest desired state
			d.mu.Unlock()
			d.machine = Machine{Desired: desired}
			if st.Found {
				v := st.Value
				d.machine.Status = Status{State: v.State, StateEpoch: v.StateEpoch, SourceClusterID: v.SourceClusterID, LastError: v.LastError}
			}
			d.publish()
			d.log.Debug("mirror partition state read", "state", d.machine.Status.State, "state_epoch", d.machine.Status.StateEpoch, "desired", desired)
			return true
		}
		if d.ctx.Err() != nil {
			return false
		}
		d.stats.setError("read mirror state: " + err.Error())
		d.log.Info("reading the mirror partition state failed; retrying", "error", err)
		if !d.sleep(backoff) {
			return false
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// loop applies events until the driver stops or is released (true), or
// the state must be read again (false).
func (d *driver) loop() bool {
	for {
		select {
		case <-d.ctx.Done():
			return true
		case <-d.wake:
		}
		for _, ev := range d.take() {
			switch d.step(ev) {
			case stepReload:
				return false
			case stepDone:
				return true
			}
		}
	}
}

type stepOutcome int8

const (
	stepOK stepOutcome = iota
	stepReload
	stepDone
)

// step applies one event and the reconciliations that follow it.
func (d *driver) step(ev Event) stepOutcome {
	for {
		next, tr := d.machine.Step(ev)
		if tr.Persist {
			if err := d.persist(next.Status); err != nil {
				if d.ctx.Err() != nil {
					return stepDone
				}
				if errors.Is(err, kerr.FencedStateEpoch) || errors.Is(err, kerr.FencedLeaderEpoch) {
					d.log.Info("mirror partition state changed elsewhere; reading it again", "error", err)
					return stepReload
				}
				d.stats.setError("persist mirror state: " + err.Error())
				d.log.Warn("persisting a mirror state transition failed; retrying", "to", next.Status.State, "error", err)
				d.postLater(ev, time.Second)
				return stepOK
			}
			d.stats.entered(d.m.cfg.Now())
			d.failoverProgress(d.machine.Status.State, next.Status.State, d.m.cfg.Now())
			if next.Status.State != d.machine.Status.State {
				d.log.Info("mirror partition state", "from", d.machine.Status.State, "to", next.Status.State,
					"state_epoch", next.Status.StateEpoch, "desired", next.Desired, "last_error", next.Status.LastError)
			}
		}
		d.machine = next
		d.publish()
		for _, a := range tr.Actions {
			d.act(a)
		}
		if d.released {
			return stepDone
		}
		if !tr.Persist && len(tr.Actions) == 0 {
			return stepOK
		}
		ev = Event{Kind: EvReconcile}
	}
}

// persist writes a status under this driver's leader epoch.
func (d *driver) persist(st Status) error {
	ctx, cancel := context.WithTimeout(d.ctx, d.m.cfg.RequestTimeout)
	defer cancel()
	return d.m.deps.Store.Write(ctx, StateWrite{
		Key:         d.key,
		Value:       mirrorstate.PartitionValue{State: st.State, StateEpoch: st.StateEpoch, SourceClusterID: st.SourceClusterID, LastError: st.LastError},
		LeaderEpoch: d.leaderEpoch,
	})
}

// publish makes the machine's status visible to DescribeMirrors and sets
// the partition's read-only state. A partition STOPPED in a REMOVED topic
// is reported to the controller (once per driver), which records the
// failover as complete when every partition is.
func (d *driver) publish() {
	d.mu.Lock()
	d.status, d.known = d.machine.Status, true
	d.applyReadOnlyLocked(d.machine)
	d.mu.Unlock()
	if !d.reported && d.machine.Status.State == wire.MirrorStateStopped && d.machine.Desired == DesiredStopped {
		d.reported = true
		d.m.failovers.report(d.tp.Topic, d.topicID, d.key.Mirror)
	}
}

// applyReadOnlyLocked answers client produces as m says. Caller holds mu.
func (d *driver) applyReadOnlyLocked(m Machine) {
	var reason error
	switch m.ReadOnly() {
	case ReadOnlyMirrored:
		reason = readonly.Refusal(d.tp.Topic, d.raw, "producing", kerr.InvalidTopicException)
	case ReadOnlyFailingOver:
		reason = readonly.Refusal(d.tp.Topic, d.raw, "producing", kerr.NotLeaderForPartition)
	}
	d.part.SetReadOnly(reason)
}

// act runs one action of a persisted transition.
func (d *driver) act(a Action) {
	switch a.Kind {
	case ActPrepare:
		d.startWork(func(ctx context.Context) Event { return d.prepare(ctx, a.Source) })
	case ActCancelPrepare:
		d.stopWork()
	case ActStartFetching:
		d.checkEpochFloor()
		d.source.startFetching(d, &fetchTarget{p: d.part, leaderEpoch: d.leaderEpoch, stats: d.stats, now: d.m.cfg.Now,
			onRestart: func(off int64) {
				d.log.Warn("the source no longer has the mirror's position (retention passed it): restarting the partition at the source's log start", "offset", off)
			},
			onEpochAbove: d.raiseLeaderEpoch}, d.machine.Status.SourceClusterID)
	case ActStopFetching:
		d.source.stopFetching(d)
		if d.machine.Status.State == wire.MirrorStatePausing {
			d.post(Event{Kind: EvFetchersRemoved})
		}
	case ActStop:
		d.startWork(func(ctx context.Context) Event { return d.stopping(ctx, a.Source) })
	case ActScheduleRetry:
		wait := d.m.retryBackoff(a.Attempt)
		d.log.Info("mirror partition failed; retrying later", "error", d.machine.Status.LastError, "backoff", wait)
		d.postLater(Event{Kind: EvRetry}, wait)
	case ActRelease:
		d.released = true
	}
}

// startWork runs PREPARING's or STOPPING's job on its own goroutine; its
// outcome comes back as an event.
func (d *driver) startWork(f func(ctx context.Context) Event) {
	d.stopWork()
	ctx, cancel := context.WithCancel(d.ctx)
	w := &work{cancel: cancel, done: make(chan struct{})}
	d.work = w
	d.m.wg.Add(1)
	go func() {
		defer d.m.wg.Done()
		defer close(w.done)
		ev := f(ctx)
		if ctx.Err() == nil {
			d.post(ev)
		}
	}()
}

// stopWork cancels the job in flight and waits for it, so that no
// truncation of a cancelled PREPARING runs after the machine moved on.
func (d *driver) stopWork() {
	if d.work == nil {
		return
	}
	d.work.cancel()
	<-d.work.done
	d.work = nil
}

// postLater posts ev after wait (unless the driver stops first). Each call
// has its own timer: a re-posted transition must not cancel FAILED's retry.
func (d *driver) postLater(ev Event, wait time.Duration) {
	live := d.timers[:0]
	for _, t := range d.timers {
		if !t.fired.Load() {
			live = append(live, t)
		}
	}
	dt := &delayed{}
	dt.t = time.AfterFunc(wait, func() {
		dt.fired.Store(true)
		if d.ctx.Err() == nil {
			d.post(ev)
		}
	})
	d.timers = append(live, dt)
}

// delayed is one postLater timer.
type delayed struct {
	t     *time.Timer
	fired atomic.Bool
}

// sleep waits for wait or the driver's end; false if the driver ended.
func (d *driver) sleep(wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-d.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// cleanup stops everything the driver started. A released partition is
// made writable; one whose leadership moved keeps its read-only reason
// (it refuses produces as a follower anyway, and its next leadership
// sets it again).
func (d *driver) cleanup() {
	for _, t := range d.timers {
		t.t.Stop()
	}
	d.stopWork()
	d.source.stopFetching(d)
	if d.released {
		d.part.SetReadOnly(nil)
		d.log.Info("mirror partition released")
		d.m.forget(d)
	}
	d.cancel()
}

// snapshot is the driver's view for DescribeMirrors.
func (d *driver) snapshot() (Status, bool, statsSnapshot) {
	d.mu.Lock()
	st, known := d.status, d.known
	d.mu.Unlock()
	return st, known, d.stats.snapshot()
}
