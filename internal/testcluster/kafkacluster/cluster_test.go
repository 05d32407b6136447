package kafkacluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster/kafkacluster"
)

// TestThreeNodes runs a 3-node Apache Kafka cluster (RF=3,
// min.insync.replicas=2) once and checks the helper on it; each subtest
// uses its own topic. The leader kill comes last: it changes leadership.
func TestThreeNodes(t *testing.T) {
	start := time.Now()
	c := kafkacluster.Start(t, kafkacluster.Nodes(3),
		kafkacluster.BrokerConfig("default.replication.factor", "3"),
		kafkacluster.BrokerConfig("min.insync.replicas", "2"))
	t.Logf("3 nodes serving after %v", time.Since(start).Round(time.Millisecond))

	t.Run("ProduceConsume", func(t *testing.T) {
		topic := createTopic(t, c, "produce-consume", 3)
		cl := c.Client(t)
		want := produce(t, cl, topic, "a", 30)
		if got := consume(t, c, topic, len(want)); !slices.Equal(sorted(got), sorted(want)) {
			t.Fatalf("consumed %v, want %v", got, want)
		}
	})

	t.Run("GetOffsetShell", func(t *testing.T) {
		topic := createTopic(t, c, "get-offsets", 2)
		cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		for p, n := range []int{3, 5} {
			for i := range n {
				r := &kgo.Record{Topic: topic, Partition: int32(p), Value: fmt.Appendf(nil, "%d", i)}
				if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
		}
		res := kafkacluster.RunTool(t, "org.apache.kafka.tools.GetOffsetShell",
			"--bootstrap-server", c.Bootstrap(), "--topic", topic)
		if res.ExitCode != 0 {
			t.Fatalf("GetOffsetShell exited %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.Stdout, res.Stderr)
		}
		lines := strings.Fields(res.Stdout)
		slices.Sort(lines)
		if want := []string{topic + ":0:3", topic + ":1:5"}; !slices.Equal(lines, want) {
			t.Fatalf("GetOffsetShell printed %q, want %q (stderr: %s)", lines, want, res.Stderr)
		}
	})

	t.Run("PauseResume", func(t *testing.T) {
		id := int32(2)
		c.Pause(id)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := apiVersions(ctx, t, c, id)
		cancel()
		if err == nil {
			t.Fatalf("paused node %d answered ApiVersions", id)
		}
		c.Resume(id)
		ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := apiVersions(ctx, t, c, id); err != nil {
			t.Fatalf("resumed node %d: %v", id, err)
		}
	})

	t.Run("StopStart", func(t *testing.T) {
		// A clean stop (SIGTERM) of a paused node, writes with the other two
		// (min.insync.replicas=2), and a restart that serves again.
		topic := createTopic(t, c, "stop-start", 1)
		cl := c.Client(t)
		id := int32(3)
		c.Pause(id)
		c.Stop(id)
		if c.Running(id) {
			t.Fatalf("node %d runs after Stop", id)
		}
		want := produce(t, cl, topic, "two-up", 5)
		c.Start(id)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := apiVersions(ctx, t, c, id); err != nil {
			t.Fatalf("restarted node %d: %v", id, err)
		}
		if got := consume(t, c, topic, len(want)); !slices.Equal(got, want) {
			t.Fatalf("consumed %v, want %v", got, want)
		}
	})

	t.Run("LeaderKill", func(t *testing.T) {
		topic := createTopic(t, c, "leader-kill", 1)
		cl := c.Client(t)
		want := produce(t, cl, topic, "before", 10)

		adm := kadm.NewClient(cl)
		old := leader(t, adm, topic, -1)
		killed := time.Now()
		c.Kill(old)
		if c.Running(old) {
			t.Fatalf("node %d runs after Kill", old)
		}
		// acks=all with two of three replicas left: produce blocks until a
		// new leader is elected, then continues.
		want = append(want, produce(t, cl, topic, "after", 10)...)
		t.Logf("produce continued %v after killing leader %d", time.Since(killed).Round(time.Millisecond), old)
		if now := leader(t, adm, topic, old); now == old {
			t.Fatalf("leader is still the killed node %d", old)
		}
		if got := consume(t, c, topic, len(want)); !slices.Equal(got, want) {
			t.Fatalf("consumed %v, want %v", got, want)
		}

		// The killed node comes back with its data and rejoins the ISR.
		c.Start(old)
		deadline := time.Now().Add(kafkacluster.StartTimeout)
		for {
			isr := partition(t, adm, topic).ISR
			if len(isr) == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("ISR %v after restarting node %d", isr, old)
			}
			time.Sleep(100 * time.Millisecond) // polling the controller's view; no event to wait on
		}
	})
}

// createTopic creates topic prefix-<n> with partitions partitions and the
// cluster's default replication factor, and waits until every partition
// has a leader.
func createTopic(t *testing.T, c *kafkacluster.Cluster, name string, partitions int32) string {
	t.Helper()
	adm := c.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, -1, nil, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	return name
}

// produce produces n records with values prefix-i (acks=all, idempotent)
// and returns the values.
func produce(t *testing.T, cl *kgo.Client, topic, prefix string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var vals []string
	for i := range n {
		v := fmt.Sprintf("%s-%d", prefix, i)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %s to %s: %v", v, topic, err)
		}
		vals = append(vals, v)
	}
	return vals
}

// consume reads n records of topic from the start, in partition order.
func consume(t *testing.T, c *kafkacluster.Cluster, topic string, n int) []string {
	t.Helper()
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records of %s: %v", len(got), n, topic, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// partition returns partition 0 of topic as the cluster's metadata has it.
func partition(t *testing.T, adm *kadm.Client, topic string) kadm.PartitionDetail {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		t.Fatalf("metadata of %s: %v", topic, td.Err)
	}
	return td.Partitions[0]
}

// leader waits for partition 0 of topic to have a leader other than not
// (-1: any) and returns it.
func leader(t *testing.T, adm *kadm.Client, topic string, not int32) int32 {
	t.Helper()
	deadline := time.Now().Add(kafkacluster.StartTimeout)
	for {
		p := partition(t, adm, topic)
		if p.Leader >= 0 && p.Leader != not {
			return p.Leader
		}
		if time.Now().After(deadline) {
			t.Fatalf("partition 0 of %s: leader %d", topic, p.Leader)
		}
		time.Sleep(100 * time.Millisecond) // polling the controller's view; no event to wait on
	}
}

// apiVersions sends ApiVersions to node id alone.
func apiVersions(ctx context.Context, t *testing.T, c *kafkacluster.Cluster, id int32) error {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addr(id)), kgo.DialTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, err = cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrApiVersionsRequest())
	return err
}
