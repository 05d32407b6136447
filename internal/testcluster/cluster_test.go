package testcluster

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestMain(m *testing.M) { Main(m) }

// roundTrip produces one record to topic and reads it back.
func roundTrip(t *testing.T, c *Cluster, topic, v string) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	p := c.Client(t, kgo.DefaultProduceTopic(topic))
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cons := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	for {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%q never came back", v)
		}
		for _, r := range fs.Records() {
			if string(r.Value) == v {
				return
			}
		}
	}
}

func TestSingleNodeCluster(t *testing.T) {
	c := Start(t)
	if len(c.Nodes()) != 1 || c.Bootstrap() != c.Node(1).Addr() {
		t.Fatalf("nodes %v, bootstrap %s", c.Nodes(), c.Bootstrap())
	}
	if c.Node(1).Server().ClusterID() != c.ClusterID() {
		t.Fatal("the node runs another cluster id")
	}
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Admin(t).CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, "t", "before")
	c.Node(1).Restart()
	roundTrip(t, c, "t", "after")
	c.Node(1).Stop()
	if c.Node(1).Running() || c.Bootstrap() != "" {
		t.Fatal("a stopped node is still listed")
	}
	c.Node(1).Start()
	roundTrip(t, c, "t", "restarted")
}

// TestThreeNodeCluster starts three combined nodes voting in one quorum;
// every node serves metadata that lists all three brokers, and the
// cluster survives a node's restart.
func TestThreeNodeCluster(t *testing.T) {
	c := Start(t, Nodes(3))
	ctx := ctxFor(t, time.Minute)
	brokers, err := c.Admin(t).ListBrokers(ctx)
	if err != nil || len(brokers) != 3 {
		t.Fatalf("brokers %v, %v", brokers, err)
	}
	if _, err := c.Admin(t).CreateTopic(ctx, 1, 1, nil, "t3"); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, "t3", "one")
	c.Node(2).Restart()
	roundTrip(t, c, "t3", "two")
}
