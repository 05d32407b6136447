package faults

import (
	"slices"
	"testing"
	"time"
)

// TestPausedFollowerLeavesAndRejoinsISR: a follower paused with SIGSTOP
// for longer than replica.lag.time.max.ms (2 s here) is removed from the
// ISR by its leader (an AlterPartition to the controller) while the
// producer carries on with the two replicas left; resumed with SIGCONT it
// catches up and is added back. Its broker session (10 s) outlasts the
// pause, so the shrink is the leader's lag check, not the controller
// fencing a silent broker.
func TestPausedFollowerLeavesAndRejoinsISR(t *testing.T) {
	const lag = 2 * time.Second
	c := threeNodes(t, map[string]string{
		"replica.lag.time.max.ms":      "2000",
		"broker.session.timeout.ms":    "10000",
		"broker.heartbeat.interval.ms": "500",
	})
	const topic, parts = "lag", 1
	c.createTopic(topic, parts, nil)
	prod := c.startProducer(topic, parts)
	prod.waitAcks(300)

	before := c.waitPartition(topic, 0, "all three in the ISR", func(s partState) bool { return len(s.ISR) == 3 })
	var ctrl int32
	waitFor(t, "an agreed controller", func() (bool, string) {
		var why string
		ctrl, why = c.controller()
		return why == "" && ctrl >= 0, why
	})
	// A follower that is not the controller: pausing the controller would
	// test a controller failover as well.
	var follower *procNode
	for _, id := range before.Replicas {
		if id != before.Leader && id != ctrl {
			follower = c.node(id)
			break
		}
	}
	follower.pause()
	paused := time.Now()
	shrunk := c.waitPartition(topic, 0, "the paused follower out of the ISR", func(s partState) bool {
		return !slices.Contains(s.ISR, follower.id)
	})
	took := time.Since(paused)
	if shrunk.Leader != before.Leader || len(shrunk.ISR) != 2 {
		t.Fatalf("after the pause: %v (before: %v)", shrunk, before)
	}
	if took < lag/2 {
		t.Fatalf("the ISR shrank %v after the pause, well before replica.lag.time.max.ms", took)
	}
	if v, err := c.node(before.Leader).view(); err != nil || !slices.Contains(v.brokers, follower.id) {
		t.Fatalf("the paused follower %d was fenced (brokers %v, %v): the shrink was not the lag check", follower.id, v.brokers, err)
	}
	t.Logf("follower %d paused; ISR %v after %v", follower.id, shrunk.ISR, took.Round(time.Millisecond))
	prod.waitProgress(500) // acks=-1 with two in-sync replicas

	follower.resume()
	resumed := time.Now()
	back := c.waitPartition(topic, 0, "the resumed follower back in the ISR", func(s partState) bool {
		return slices.Contains(s.ISR, follower.id)
	})
	t.Logf("follower %d resumed; ISR %v after %v", follower.id, back.ISR, time.Since(resumed).Round(time.Millisecond))
	prod.waitProgress(300)
	prod.stop()
	prod.checkLog(c.readAll(topic, parts))
	c.stopAndCompare(map[string]int32{topic: parts})
}
