package faults

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// offlineWindow is how long a partition must stay offline to count as
// staying offline: several controller ticks and broker heartbeats after the
// last thing that could have elected a leader.
const offlineWindow = 3 * time.Second

// holdFor checks cond again and again for d and fails the test the first
// time it does not hold. It observes that nothing happens, which no event
// can signal.
func holdFor(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if ok, why := cond(); !ok {
			t.Fatalf("%s stopped holding: %s", what, why)
		}
		time.Sleep(50 * time.Millisecond) // observing other processes for a while
	}
}

// createAssigned creates a one-partition topic on the given replicas (the
// first is the preferred leader).
func (c *procCluster) createAssigned(topic string, replicas ...int32) {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, c.client())
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		c.t.Fatalf("create %s on %v: %v", topic, replicas, err)
	}
	c.waitPartition(topic, 0, "the first replica leading with a full ISR", func(s partState) bool {
		return s.Leader == replicas[0] && len(s.ISR) == len(replicas)
	})
}

// produceRange produces seqs [from, to) to partition 0 of topic with
// acks=-1 and fails unless all are acknowledged.
func (c *procCluster) produceRange(topic string, from, to int) {
	c.t.Helper()
	cl := c.client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var rs []*kgo.Record
	for seq := from; seq < to; seq++ {
		rs = append(rs, &kgo.Record{Value: []byte(value(topic, 0, seq))})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		c.t.Fatalf("produce %d..%d to %s: %v", from, to, topic, err)
	}
}

// wantSeqs checks that partition 0 of topic holds exactly the seqs
// [0, n) in order.
func (c *procCluster) wantSeqs(topic string, n int) {
	c.t.Helper()
	rs := c.readAll(topic, 1)[0]
	for i, r := range rs {
		if _, seq, ok := parseValue(topic, string(r.Value)); !ok || seq != i {
			c.t.Fatalf("%s offset %d: %.30q, want seq %d", topic, r.Offset, r.Value, i)
		}
	}
	if len(rs) != n {
		c.t.Fatalf("%s holds %d records, want %d", topic, len(rs), n)
	}
}

// TestUncleanLeaderElection: every in-sync replica of a partition goes
// down and only an out-of-sync one comes back. With
// unclean.leader.election.enable=false (Kafka's default) the partition
// stays offline rather than lose acknowledged records, and once an in-sync
// replica returns it leads with every record. Turned on with
// IncrementalAlterConfigs, the out-of-sync replica is elected and the
// records acknowledged after it left the ISR are lost — Kafka's documented
// price — and the returning replicas truncate their divergent tails to it.
//
// The brokers are broker-only nodes under one controller-only node, so
// that killing two of three brokers leaves the controller quorum whole.
func TestUncleanLeaderElection(t *testing.T) {
	c := startCluster(t, []string{controllerOnly, brokerOnly, brokerOnly, brokerOnly}, nil)
	const a, b = 100, 100 // records acknowledged by all three, then by two
	for _, topic := range []string{"off", "on"} {
		c.createAssigned(topic, 2, 3, 4)
		c.produceRange(topic, 0, a)
	}

	// Broker 4 dies: out of the ISR, it misses the next records.
	c.node(4).kill()
	for _, topic := range []string{"off", "on"} {
		c.waitPartition(topic, 0, "broker 4 out of the ISR", func(s partState) bool { return len(s.ISR) == 2 })
		c.produceRange(topic, a, a+b)
	}
	// Every in-sync replica dies; the out-of-sync one comes back.
	c.node(2).kill()
	c.node(3).kill()
	c.node(4).start()
	offline := func(topic string) func() (bool, string) {
		return func() (bool, string) {
			st, why := c.partition(topic, 0)
			if why != "" {
				return false, why
			}
			return st.Leader < 0, st.String()
		}
	}
	for _, topic := range []string{"off", "on"} {
		waitFor(t, topic+" offline", offline(topic))
	}
	c.waitBrokersUnfenced() // broker 4 is eligible, were unclean elections allowed
	holdFor(t, offlineWindow, "off and on offline with unclean elections off", func() (bool, string) {
		if ok, why := offline("off")(); !ok {
			return false, "off: " + why
		}
		return offline("on")()
	})

	// Unclean elections on for "on": broker 4 leads it, without the b
	// records it never had. "off" stays offline.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	res, err := c.admin().AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: kmsg.StringPtr("true")},
	}, "on")
	if err == nil {
		_, err = res.On("on", nil)
	}
	if err != nil {
		t.Fatalf("turn unclean elections on: %v", err)
	}
	st := c.waitPartition("on", 0, "broker 4 elected uncleanly", func(s partState) bool { return s.Leader == 4 })
	t.Logf("on: %v", st)
	if ok, why := offline("off")(); !ok {
		t.Fatalf("off came online with unclean elections off: %s", why)
	}
	c.wantSeqs("on", a) // the documented loss: the b records acknowledged after broker 4 left the ISR

	// The in-sync replicas return: "off" comes back with every record,
	// and on "on" they drop their divergent tail and follow broker 4.
	c.node(2).start()
	c.node(3).start()
	st = c.waitPartition("off", 0, "a leader from the last ISR", func(s partState) bool { return s.Leader == 2 || s.Leader == 3 })
	t.Logf("off: %v", st)
	c.waitFullISR("off", 1)
	c.waitFullISR("on", 1)
	c.wantSeqs("off", a+b)
	c.produceRange("on", a, a+10) // writable again (min.insync.replicas=2)
	c.wantSeqs("on", a+10)
	total := c.stopAndCompare(map[string]int32{"off": 1, "on": 1})
	if total == 0 {
		t.Fatal("nothing compared")
	}
}
