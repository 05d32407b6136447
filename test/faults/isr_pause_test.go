package faults

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPausedFollowerLeavesAndRejoinsISR: a follower paused with SIGSTOP
// for longer than replica.lag.time.max.ms (2 s here) is removed from the
// ISR by its leader (an AlterPartition to the controller) while the
// producer carries on with the two replicas left; resumed with SIGCONT it
// catches up and is added back. Its broker session (10 s) outlasts the
// pause, so the shrink is the leader's lag check, not the controller
// fencing a silent broker, and the leader says it removed the follower
// after it was behind for longer than replica.lag.time.max.ms.
func TestPausedFollowerLeavesAndRejoinsISR(t *testing.T) {
	const lag = 2 * time.Second
	t.Setenv("KMIRROR_TEST_LOG", "info") // the leader's ISR shrink line
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
	if v, err := c.node(before.Leader).view(); err != nil || !slices.Contains(v.brokers, follower.id) {
		t.Fatalf("the paused follower %d was fenced (brokers %v, %v): the shrink was not the lag check", follower.id, v.brokers, err)
	}
	// The leader's lag check removed it, after it had been behind for
	// longer than replica.lag.time.max.ms by the leader's own account
	// (its log line), not by a window measured here, which a loaded
	// machine stretches.
	behind, maxLag := shrinkLine(t, c.node(before.Leader), topic, follower.id)
	if maxLag != lag {
		t.Fatalf("the leader's lag check used a maximum of %v, want replica.lag.time.max.ms %v", maxLag, lag)
	}
	if behind <= lag {
		t.Fatalf("the leader removed follower %d after it was behind for %v, not more than replica.lag.time.max.ms %v", follower.id, behind, lag)
	}
	t.Logf("follower %d paused; ISR %v after %v (behind for %v by the leader's account)", follower.id, shrunk.ISR, took.Round(time.Millisecond), behind)
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

// shrinkLine waits for the line in which n, a partition's leader, removes
// follower from topic's ISR ("shrinking the ISR: followers out of sync")
// and returns how long the follower had been behind by the leader's
// account (behind_for) and the maximum lag it applied (lag_max).
func shrinkLine(t *testing.T, n *procNode, topic string, follower int32) (behind, maxLag time.Duration) {
	t.Helper()
	re := regexp.MustCompile(`behind_for=\[([^\] ]+)\].* lag_max=(\S+)`)
	var line string
	waitFor(t, "the leader's ISR shrink line", func() (bool, string) {
		for l := range strings.SplitSeq(n.process().Output(), "\n") {
			if strings.Contains(l, `msg="shrinking the ISR: followers out of sync"`) && strings.Contains(l, "topic="+topic+" ") &&
				strings.Contains(l, fmt.Sprintf("removing=[%d]", follower)) {
				line = l
				return true, ""
			}
		}
		return false, "no such line yet"
	})
	m := re.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("the ISR shrink line names no single follower's delay and maximum lag: %s", line)
	}
	var err error
	if behind, err = time.ParseDuration(m[1]); err != nil {
		t.Fatalf("behind_for in %q: %v", line, err)
	}
	if maxLag, err = time.ParseDuration(m[2]); err != nil {
		t.Fatalf("lag_max in %q: %v", line, err)
	}
	return behind, maxLag
}
