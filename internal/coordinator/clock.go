package coordinator

import (
	"sort"
	"sync"
	"time"
)

// Clock is the time source of the runtime and its timers.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d; stop cancels the call
	// if it has not started and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// ManualClock is a Clock that moves only when told to, for tests of timer
// driven behaviour without sleeping. Timers fire synchronously inside
// Advance, in deadline order.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    int
	timers map[int]manualTimer
}

type manualTimer struct {
	at time.Time
	f  func()
}

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start, timers: map[int]manualTimer{}}
}

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc registers f to run when the clock reaches now+d.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	id := c.seq
	c.timers[id] = manualTimer{at: c.now.Add(d), f: f}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.timers[id]
		delete(c.timers, id)
		return ok
	}
}

// Advance moves the clock by d, running every timer that comes due.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for {
		ids := make([]int, 0, len(c.timers))
		for id, t := range c.timers {
			if !t.at.After(end) {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			break
		}
		sort.Slice(ids, func(i, j int) bool {
			a, b := c.timers[ids[i]], c.timers[ids[j]]
			if !a.at.Equal(b.at) {
				return a.at.Before(b.at)
			}
			return ids[i] < ids[j]
		})
		t := c.timers[ids[0]]
		delete(c.timers, ids[0])
		if t.at.After(c.now) {
			c.now = t.at
		}
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	c.now = end
	c.mu.Unlock()
}

// Pending returns how many timers are registered.
func (c *ManualClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
