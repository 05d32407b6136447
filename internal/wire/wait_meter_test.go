package wire

import (
	"context"
	"testing"
	"time"
)

// TestWaitMeterMeasuresOutermostWait checks that a meter measures a wait
// once even when waits nest, and that waiting without a meter is a no-op.
func TestWaitMeterMeasuresOutermostWait(t *testing.T) {
	Waiting(context.Background())() // no meter: nothing to measure

	ctx, m := WithWaitMeter(context.Background())
	start := time.Now()
	outer := Waiting(ctx)
	time.Sleep(20 * time.Millisecond)
	inner := Waiting(ctx) // nested: not measured again
	time.Sleep(20 * time.Millisecond)
	inner()
	outer()
	elapsed := time.Since(start)
	got := m.Waited()
	if got < 40*time.Millisecond {
		t.Fatalf("measured %v of a 40 ms wait", got)
	}
	if got > elapsed {
		t.Fatalf("measured %v within %v: the nested wait was counted twice", got, elapsed)
	}
	if d := m.depth.Load(); d != 0 {
		t.Fatalf("depth %d after every wait ended", d)
	}
}
