package faults

import (
	"context"
	"testing"
	"time"
)

// createTopic creates topic with parts partitions and the cluster's
// default replication factor (3), and waits until every broker that is up
// knows every partition's leader.
func (c *procCluster) createTopic(topic string, parts int32, configs map[string]*string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	res, err := c.admin().CreateTopic(ctx, parts, -1, configs, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		c.t.Fatalf("create topic %s: %v", topic, err)
	}
	for p := range parts {
		c.waitPartition(topic, p, "a leader", func(s partState) bool { return s.Leader >= 0 })
	}
}

// TestLeaderKillsKeepAcknowledgedRecords: an idempotent acks=-1 producer
// writes to three partitions (RF=3, min.insync.replicas=2) while the test
// SIGKILLs the leader of one partition after another and restarts it once
// a new leader took over. Afterwards every acknowledged record is in its
// partition exactly once and in order, and the three replicas of every
// partition are byte-identical on disk. KMIRROR_LONG=1 kills 15 times.
func TestLeaderKillsKeepAcknowledgedRecords(t *testing.T) {
	c := threeNodes(t, nil)
	const topic, parts = "kills", 3
	c.createTopic(topic, parts, nil)
	prod := c.startProducer(topic, parts)
	prod.waitAcks(500)

	kills := 3
	if long() {
		kills = 15
	}
	for round := range kills {
		p := int32(round % parts)
		before := c.waitPartition(topic, p, "a leader", func(s partState) bool { return s.Leader >= 0 && len(s.ISR) >= 2 })
		victim := c.node(before.Leader)
		start := time.Now()
		victim.kill()
		after := c.waitPartition(topic, p, "a new leader", func(s partState) bool {
			return s.Leader >= 0 && s.Leader != victim.id
		})
		if after.Epoch <= before.Epoch {
			t.Fatalf("round %d: leader epoch %d after %d", round, after.Epoch, before.Epoch)
		}
		// The producer carries on with the two nodes left (min.insync.replicas=2).
		prod.waitProgress(300)
		t.Logf("round %d: killed leader %d of %s-%d (epoch %d); node %d leads in epoch %d after %v",
			round, victim.id, topic, p, before.Epoch, after.Leader, after.Epoch, time.Since(start).Round(time.Millisecond))
		victim.start()
		c.waitFullISR(topic, parts)
		prod.waitProgress(300)
	}
	prod.stop()
	n := prod.checkLog(c.readAll(topic, parts))
	t.Logf("%d records read back, every acknowledged one exactly once and in order", n)
	c.stopAndCompare(map[string]int32{topic: parts})
}
