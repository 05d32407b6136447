package mirror

import "context"

// The pause points, for the in-process tests of package mirror_test.
const (
	PauseFetchersRemoved = pauseFetchersRemoved
	PauseLMEPersisted    = pauseLMEPersisted
	PauseBarrierAppended = pauseBarrierAppended
)

// HoldAt makes every driver of the test process that reaches point call
// hold with the driver's context, and go on when it returns. The returned
// function removes the hook.
func HoldAt(point pausePoint, hold func(ctx context.Context)) (remove func()) {
	h := func(ctx context.Context, _ *driver, p pausePoint) {
		if p == point {
			hold(ctx)
		}
	}
	pauseHook.Store(&h)
	return func() { pauseHook.Store(nil) }
}
