package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// waitChecks watches the evaluations of the waits (produce acks=all,
// DeleteRecords) of the requests a test sends with its context, so that
// the test can check that a waiter decided "not yet" after a change,
// instead of sleeping and hoping the waiter had its chance to answer.
type waitChecks struct {
	n *notifier // the partition's, to wake its waiters
	// gen is 0 while disarmed; an evaluation reports the generation in
	// force when it began.
	gen     atomic.Int64
	results chan waitCheck
}

type waitCheck struct {
	gen  int64
	held bool
}

type watchedKey struct{}

// watchWaits installs the package's wait check hook for the test.
func watchWaits(t *testing.T, p *Partition) *waitChecks {
	t.Helper()
	w := &waitChecks{n: &p.notify, results: make(chan waitCheck, 256)}
	h := func(ctx context.Context) func(bool) {
		g := w.gen.Load()
		if g == 0 || ctx.Value(watchedKey{}) != w {
			return func(bool) {}
		}
		return func(held bool) {
			select {
			case w.results <- waitCheck{g, held}:
			default:
			}
		}
	}
	if !waitCheckHook.CompareAndSwap(nil, &h) {
		t.Fatal("another test watches waits")
	}
	t.Cleanup(func() { waitCheckHook.Store(nil) })
	return w
}

// ctx returns the context of a request whose waits are watched.
func (w *waitChecks) ctx() context.Context {
	return context.WithValue(context.Background(), watchedKey{}, w)
}

// arm starts recording the evaluations that begin from now on.
func (w *waitChecks) arm() {
	w.gen.Store(0)
	for len(w.results) > 0 {
		<-w.results
	}
	w.gen.Store(1)
}

// heldSinceArm wakes the waiters on the partition and waits until a
// watched one evaluated its condition after the call, which then read every
// change made before it. It reports whether any evaluation since arm found
// the condition held (the waiter answers).
func (w *waitChecks) heldSinceArm(t *testing.T, what string) bool {
	t.Helper()
	g := w.gen.Add(1)
	w.n.signal()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case r := <-w.results:
			if r.held {
				return true
			}
			if r.gen >= g {
				return false
			}
		case <-timeout:
			t.Fatalf("no watched waiter evaluated its condition: %s", what)
			return false
		}
	}
}
