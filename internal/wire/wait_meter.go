package wire

import (
	"context"
	"sync/atomic"
	"time"
)

// A WaitMeter measures how long a request's handler waited for other work
// rather than working: a long poll for data, replication of what it wrote,
// a rebalance, a coordinator's write, the active controller. Kafka's
// request quota (request_percentage) charges a client for the time its
// requests keep a request thread busy, and Kafka does not hold a thread
// while a request waits (purgatory, futures); kmirror's handlers wait in
// their own goroutine instead, so the server charges the handler's time
// less what its meter measured.
//
// Waits may nest (a forwarded request waiting on a waiting call): only the
// outermost one is measured. Waits of goroutines the handler runs in
// parallel overlap, and only one of them at a time is measured.
type WaitMeter struct {
	nanos atomic.Int64
	depth atomic.Int32
}

type waitMeterKey struct{}

// WithWaitMeter returns a context carrying a new meter, and the meter.
func WithWaitMeter(ctx context.Context) (context.Context, *WaitMeter) {
	m := &WaitMeter{}
	return context.WithValue(ctx, waitMeterKey{}, m), m
}

// Waited is the time the meter has measured.
func (m *WaitMeter) Waited() time.Duration { return time.Duration(m.nanos.Load()) }

// Waiting starts measuring a wait on ctx's meter, if it carries one, and
// returns the function that ends it. Callers write
//
//	defer wire.Waiting(ctx)()
//
// around the blocking part of a handler.
func Waiting(ctx context.Context) (done func()) {
	m, _ := ctx.Value(waitMeterKey{}).(*WaitMeter)
	if m == nil {
		return func() {}
	}
	if m.depth.Add(1) != 1 {
		return func() { m.depth.Add(-1) }
	}
	start := time.Now()
	return func() {
		m.nanos.Add(int64(time.Since(start)))
		m.depth.Add(-1)
	}
}

// BusySince is the time since start that the request of ctx spent working:
// all of it less what ctx's meter measured as waits (all of it when ctx
// carries no meter).
func BusySince(ctx context.Context, start time.Time) time.Duration {
	d := time.Since(start)
	if m, _ := ctx.Value(waitMeterKey{}).(*WaitMeter); m != nil {
		d -= m.Waited()
	}
	return max(d, 0)
}
