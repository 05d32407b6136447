package coordinator

import (
	"time"
)

// Timers schedules operations on one shard by key, like Kafka's
// CoordinatorTimer: scheduling a key again replaces its earlier schedule,
// and a timer's operation runs on the shard's goroutine like any write.
// A Timers is used only from its shard's goroutine; all its timers stop
// when the shard unloads.
type Timers[S Shard] struct {
	host    *shardHost[S]
	entries map[string]*timerEntry[S]
}

type timerEntry[S Shard] struct {
	gen  uint64
	stop func() bool
	op   Op[S]
}

func newTimers[S Shard](h *shardHost[S]) *Timers[S] {
	return &Timers[S]{host: h, entries: map[string]*timerEntry[S]{}}
}

// Schedule runs op on the shard at time at (at once if at is past),
// replacing any earlier schedule of key.
func (t *Timers[S]) Schedule(key string, at time.Time, op Op[S]) {
	t.Cancel(key)
	// Generations are unique per host, across reloads, so that a firing
	// from before a reload never matches a schedule made after it.
	t.host.timerSeq++
	gen := t.host.timerSeq
	d := max(at.Sub(t.host.rt.clock.Now()), 0)
	e := &timerEntry[S]{gen: gen, op: op}
	h := t.host
	e.stop = h.rt.clock.AfterFunc(d, func() {
		h.enqueue(&task[S]{kind: taskTimer, timerKey: key, timerGen: gen})
	})
	t.entries[key] = e
}

// Cancel drops the schedule of key, if any.
func (t *Timers[S]) Cancel(key string) {
	if e, ok := t.entries[key]; ok {
		e.stop()
		delete(t.entries, key)
	}
}

// Scheduled reports whether key has a pending schedule.
func (t *Timers[S]) Scheduled(key string) bool {
	_, ok := t.entries[key]
	return ok
}

// Len is the number of pending schedules.
func (t *Timers[S]) Len() int { return len(t.entries) }

// take returns the operation of a fired timer if the firing is still the
// current schedule of its key, and forgets the key.
func (t *Timers[S]) take(key string, gen uint64) (Op[S], bool) {
	e, ok := t.entries[key]
	if !ok || e.gen != gen {
		return nil, false
	}
	delete(t.entries, key)
	return e.op, true
}

// stopAll cancels every schedule.
func (t *Timers[S]) stopAll() {
	for k, e := range t.entries {
		e.stop()
		delete(t.entries, k)
	}
}
