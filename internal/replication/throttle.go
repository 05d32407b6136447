package replication

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// RateLimiter bounds the bytes per second that the fetchers sharing it
// fetch together (the mirror's mirror.replication.throttled.rate). It is a
// token bucket holding at most one second of rate: a fetcher waits before
// each request until the bucket is out of debt, then the response's bytes
// are taken from it, possibly into debt (a response's size is known only
// after it arrived). The rate can change at any time; zero or less means
// unlimited. Safe for concurrent use.
type RateLimiter struct {
	mu      sync.Mutex
	now     func() time.Time
	rate    float64 // bytes per second, <= 0 unlimited
	tokens  float64
	last    time.Time
	changed chan struct{} // closed and replaced by SetRate
	waited  atomic.Int64  // nanoseconds spent in Wait's timers (metrics.go)
}

// NewRateLimiter returns a limiter of bytesPerSecond (<= 0: unlimited).
func NewRateLimiter(bytesPerSecond int64) *RateLimiter {
	return newRateLimiter(bytesPerSecond, time.Now)
}

func newRateLimiter(bytesPerSecond int64, now func() time.Time) *RateLimiter {
	r := &RateLimiter{now: now, changed: make(chan struct{}), last: now()}
	r.rate = float64(bytesPerSecond)
	r.tokens = max(r.rate, 0)
	return r
}

// SetRate changes the rate; waiters re-evaluate at once.
func (r *RateLimiter) SetRate(bytesPerSecond int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refillLocked()
	r.rate = float64(bytesPerSecond)
	if r.rate <= 0 {
		r.tokens = 0
	} else {
		r.tokens = min(r.tokens, r.rate)
	}
	close(r.changed)
	r.changed = make(chan struct{})
}

// Rate returns the current rate in bytes per second (<= 0: unlimited).
func (r *RateLimiter) Rate() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int64(r.rate)
}

// Consume takes n fetched bytes from the bucket.
func (r *RateLimiter) Consume(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rate <= 0 || n <= 0 {
		return
	}
	r.refillLocked()
	r.tokens -= float64(n)
}

// delay returns how long a fetcher must wait before its next request, and
// the channel that announces a rate change.
func (r *RateLimiter) delay() (time.Duration, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rate <= 0 {
		return 0, r.changed
	}
	r.refillLocked()
	if r.tokens >= 0 {
		return 0, r.changed
	}
	return time.Duration(-r.tokens / r.rate * float64(time.Second)), r.changed
}

// Wait blocks until the bucket is out of debt or ctx ends.
func (r *RateLimiter) Wait(ctx context.Context) error {
	for {
		d, changed := r.delay()
		if d <= 0 {
			return nil
		}
		start := time.Now()
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			r.waited.Add(int64(time.Since(start)))
			return ctx.Err()
		case <-changed:
			t.Stop()
		case <-t.C:
		}
		r.waited.Add(int64(time.Since(start)))
	}
}

// refillLocked adds the tokens earned since the last refill, up to one
// second's worth. Caller holds mu.
func (r *RateLimiter) refillLocked() {
	now := r.now()
	if el := now.Sub(r.last); el > 0 && r.rate > 0 {
		r.tokens = min(r.tokens+el.Seconds()*r.rate, r.rate)
	}
	r.last = now
}
