package broker

import (
	"context"
	"time"
)

// runISRChecks runs Kafka's "isr-expiration" task until ctx ends: every
// half replica.lag.time.max.ms each partition this node leads drops the
// followers that fell behind from its ISR (and re-evaluates its high
// watermark, which time alone can move), and a leader still recovering
// from an unclean election whose first attempt failed asks again.
func (rm *ReplicaManager) runISRChecks(ctx context.Context) {
	for {
		interval := max(time.Duration(rm.Config().ReplicaLagTimeMaxMs)*time.Millisecond/2, 10*time.Millisecond)
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		now := rm.now()
		for _, p := range rm.Partitions() {
			p.maybeShrinkISR(now)
			p.markRecovered()
		}
	}
}
