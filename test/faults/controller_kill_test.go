package faults

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// waitController waits until every broker that is up names the same
// controller and ok accepts it; it returns the controller's id.
func (c *procCluster) waitController(what string, ok func(int32) bool) int32 {
	c.t.Helper()
	var id int32
	waitFor(c.t, what, func() (bool, string) {
		var why string
		id, why = c.controller()
		if why != "" {
			return false, why
		}
		return ok(id), fmt.Sprintf("controller %d", id)
	})
	return id
}

// produceSome produces n records to every partition of topic with acks=-1
// and fails the test unless all are acknowledged.
func (c *procCluster) produceSome(topic string, parts int32, n int) {
	c.t.Helper()
	cl := c.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var rs []*kgo.Record
	for p := range parts {
		for i := range n {
			rs = append(rs, &kgo.Record{Partition: p, Value: []byte(value(topic, p, i))})
		}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		c.t.Fatalf("produce to %s: %v", topic, err)
	}
}

// TestControllerKill: SIGKILL the active controller (with combined nodes,
// the metadata quorum's Raft leader) twice. Each time the two nodes left
// elect a new one, which fences the dead broker and elects new leaders
// for the partitions it led, and creates topics; the killed node restarts
// and rejoins — as a broker that learns what changed while it was down and
// returns to its partitions' ISRs, and as a voter: the second kill leaves
// the first victim and one other node, which can only elect a controller
// if the first victim votes again.
func TestControllerKill(t *testing.T) {
	c := threeNodes(t, nil)
	const parts = 3
	c.createTopic("before", parts, nil)
	c.produceSome("before", parts, 10)

	for round := range 2 {
		old := c.waitController("an agreed controller", func(id int32) bool { return id >= 0 })
		led := map[int32]bool{}
		for p := range int32(parts) {
			if st, why := c.partition("before", p); why == "" && st.Leader == old {
				led[p] = true
			}
		}
		c.node(old).kill()
		elected := c.waitController("a new controller", func(id int32) bool { return id >= 0 && id != old })
		t.Logf("round %d: controller %d killed (leading partitions %v); node %d is the controller", round, old, led, elected)

		// The new controller fences the dead broker and moves its
		// partitions' leadership to the replicas left in their ISRs.
		for p := range int32(parts) {
			st := c.waitPartition("before", p, "a live leader and the dead broker out of the ISR", func(s partState) bool {
				return s.Leader >= 0 && s.Leader != old && !slices.Contains(s.ISR, old)
			})
			if led[p] {
				t.Logf("round %d: before-%d now led by %d in epoch %d", round, p, st.Leader, st.Epoch)
			}
		}
		// Topic creation goes on (two live brokers: two replicas).
		topic := fmt.Sprintf("created-%d", round)
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		res, err := c.admin().CreateTopic(ctx, parts, 2, nil, topic)
		cancel()
		if err == nil {
			err = res.Err
		}
		if err != nil {
			t.Fatalf("round %d: create %s without the old controller: %v", round, topic, err)
		}
		for p := range int32(parts) {
			st := c.waitPartition(topic, p, "a leader", func(s partState) bool { return s.Leader >= 0 })
			if slices.Contains(st.Replicas, old) {
				t.Fatalf("round %d: %s-%d placed on the dead broker %d: %v", round, topic, p, old, st)
			}
		}
		c.produceSome(topic, parts, 10)
		c.produceSome("before", parts, 10)

		// The old controller comes back: unfenced, aware of the topic
		// created without it, and back in its partitions' ISRs.
		c.node(old).start()
		c.waitBrokersUnfenced()
		c.waitFullISR("before", parts)
		v, err := c.node(old).view(topic)
		if err != nil || len(v.parts[topic]) != parts {
			t.Fatalf("round %d: the restarted node %d does not know %s: %v %v", round, old, topic, v.parts, err)
		}
	}
	prodCheck := c.readAll("before", parts)
	for p := range int32(parts) {
		if n := len(prodCheck[p]); n != 30 {
			t.Fatalf("before-%d holds %d records, want 30", p, n)
		}
	}
	c.stopAndCompare(map[string]int32{"before": parts})
}
