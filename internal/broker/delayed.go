package broker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kmirror/kmirror/internal/wire"
)

// notifier announces that something waiters care about changed: for a
// partition, its log end offset, high watermark, log start offset or
// leadership; for the replica manager, the metadata image.
//
// Two ways to wait, both free of polling:
//   - Changed returns a channel that is closed at the next signal (then
//     replaced), for a waiter on a single notifier;
//   - subscribe registers a waker (a channel with a buffer of one) that every
//     signal pings without blocking, for a waiter on many notifiers (a fetch
//     over many partitions), which then needs a single select.
//
// A waiter must subscribe (or take Changed) before it checks its condition,
// so that a change between the check and the wait is never missed.
type notifier struct {
	mu     sync.Mutex
	ch     chan struct{}
	wakers map[waker]struct{}
}

// waker is a waiter's wake-up channel; it has a buffer of one so that a
// signal never blocks and several signals collapse into one wake-up.
type waker chan struct{}

func newWaker() waker { return make(waker, 1) }

// Changed returns a channel closed by the next signal.
func (n *notifier) Changed() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

// signal wakes every current waiter.
func (n *notifier) signal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
	for w := range n.wakers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

func (n *notifier) subscribe(w waker) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.wakers == nil {
		n.wakers = make(map[waker]struct{})
	}
	n.wakers[w] = struct{}{}
}

func (n *notifier) unsubscribe(w waker) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.wakers, w)
}

// waitCheckHook, when set (only by this package's tests), is called with a
// waitUntil's context as each evaluation of its condition begins, and the
// function it returns with the condition's result: a test sees a waiter of
// its request decide after a change it made, instead of sleeping in the
// hope that the waiter had its chance. Production code never sets it.
var waitCheckHook atomic.Pointer[func(ctx context.Context) func(held bool)]

// waitOutcome says why waitUntil returned.
type waitOutcome int8

const (
	waitDone     waitOutcome = iota // the condition held
	waitTimedOut                    // the deadline passed first
	waitCanceled                    // the request's context ended
	waitClosing                     // the broker is shutting down
)

// waitUntil waits until cond returns true, re-checking it after every
// signal of the given notifiers, or until the deadline (none if zero), ctx
// or closing ends the wait. cond runs on the caller's goroutine, first before any wait, so
// a condition that already holds returns at once.
func waitUntil(ctx context.Context, closing <-chan struct{}, deadline time.Time, ns []*notifier, cond func() bool) waitOutcome {
	defer wire.Waiting(ctx)() // not charged to the request quota
	w := newWaker()
	for _, n := range ns {
		n.subscribe(w)
	}
	defer func() {
		for _, n := range ns {
			n.unsubscribe(w)
		}
	}()
	var timer *time.Timer
	var timeout <-chan time.Time
	if h := waitCheckHook.Load(); h != nil {
		inner := cond
		cond = func() bool {
			report := (*h)(ctx)
			held := inner()
			report(held)
			return held
		}
	}
	for {
		if cond() {
			return waitDone
		}
		if timer == nil && !deadline.IsZero() {
			d := time.Until(deadline)
			if d <= 0 {
				return waitTimedOut
			}
			timer = time.NewTimer(d)
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case <-w:
		case <-timeout:
			if cond() {
				return waitDone
			}
			return waitTimedOut
		case <-ctx.Done():
			return waitCanceled
		case <-closing:
			return waitClosing
		}
	}
}
