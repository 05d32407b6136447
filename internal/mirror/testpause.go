package mirror

import (
	"context"
	"sync/atomic"
)

// pausePoint is a place between two steps of STOPPING where a crash test
// can hold a failover, to kill a node there every time.
type pausePoint int8

// The pause points.
const (
	// pauseFetchersRemoved: after STOPPING's first step.
	pauseFetchersRemoved pausePoint = iota + 1
	// pauseLMEPersisted: after the fourth, before the barrier.
	pauseLMEPersisted
	// pauseBarrierAppended: after the fifth, before STOPPED is persisted.
	pauseBarrierAppended
)

// pauseHook, when set, is called by a driver at each pause point and holds
// it until it returns (or the driver ends, which cancels ctx). Release
// builds never set it: only a build with the kmirror_testhooks tag
// (testpause_hooks.go, which the test cluster builder sets for its child
// binaries) and in-process tests (export_test.go) do.
var pauseHook atomic.Pointer[func(ctx context.Context, d *driver, p pausePoint)]

// pauseAt calls the pause hook, if any.
func (d *driver) pauseAt(ctx context.Context, p pausePoint) {
	if h := pauseHook.Load(); h != nil {
		(*h)(ctx, d, p)
	}
}
