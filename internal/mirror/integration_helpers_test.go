package mirror_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m)) }

// waitTimeout bounds each wait of the integration tests.
const waitTimeout = 60 * time.Second

func ctxFor(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// startCluster starts a one-node cluster with small internal topics and
// quick mirror reactions.
func startCluster(t testing.TB, opts ...testcluster.Option) *testcluster.Cluster {
	t.Helper()
	base := []testcluster.Option{
		testcluster.Config("offsets.topic.replication.factor", "1"),
		testcluster.Config("offsets.topic.num.partitions", "3"),
		testcluster.Config("transaction.state.log.replication.factor", "1"),
		testcluster.Config("transaction.state.log.min.isr", "1"),
		testcluster.Config("transaction.state.log.num.partitions", "3"),
		testcluster.Config("mirror.state.topic.num.partitions", "5"),
		testcluster.Config("mirror.state.topic.replication.factor", "1"),
		testcluster.Config("group.initial.rebalance.delay.ms", "0"),
		testcluster.Config("replica.fetch.wait.max.ms", "100"),
		testcluster.Config("replica.fetch.backoff.ms", "100"),
		testcluster.Config("mirror.metadata.refresh.interval.ms", "1000"),
	}
	return testcluster.Start(t, append(base, opts...)...)
}

// admin sends a mirror admin request to a broker of the cluster, which
// forwards it to the active controller, and returns the response.
func admin(t testing.TB, c *testcluster.Cluster, req kmsg.Request) kmsg.Response {
	t.Helper()
	ctx := ctxFor(t)
	var last error
	for _, n := range c.Nodes() {
		conn, err := wire.Dial(ctx, "tcp", n.Addr(), "mirror-test")
		if err != nil {
			last = err
			continue
		}
		resp, err := conn.Request(ctx, req)
		_ = conn.Close()
		if err != nil {
			last = err
			continue
		}
		return resp
	}
	t.Fatalf("admin %s: %v", wire.APIName(req.Key()), last)
	return nil
}

func createMirror(t testing.TB, dst, src *testcluster.Cluster, name string) {
	t.Helper()
	createMirrorFrom(t, dst, name, src.Bootstrap())
}

func createMirrorFrom(t testing.TB, dst *testcluster.Cluster, name, bootstrap string) {
	t.Helper()
	bs := bootstrap
	resp := admin(t, dst, &wire.CreateMirrorRequest{MirrorName: name, Configs: []wire.CreateMirrorRequestConfig{
		{Name: "bootstrap.servers", Value: &bs},
	}, TimeoutMillis: 30000}).(*wire.CreateMirrorResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("create mirror %s: %v %v", name, kerrText(resp.ErrorCode), deref(resp.ErrorMessage))
	}
}

type topicsOp int

const (
	opAdd topicsOp = iota
	opRemove
	opPause
	opResume
)

// mirrorTopics adds, removes, pauses or resumes topics and fails the test
// on any error.
func mirrorTopics(t testing.TB, c *testcluster.Cluster, op topicsOp, mirror string, topics ...string) {
	t.Helper()
	if errs := mirrorTopicsErr(t, c, op, mirror, topics...); len(errs) > 0 {
		t.Fatalf("mirror topics op %d on %s: %v", op, mirror, errs)
	}
}

func mirrorTopicsErr(t testing.TB, c *testcluster.Cluster, op topicsOp, mirror string, topics ...string) []string {
	t.Helper()
	req := &wire.MirrorTopicsRequest{MirrorName: mirror, TimeoutMillis: 30000}
	for _, tn := range topics {
		req.Topics = append(req.Topics, wire.MirrorTopicsRequestTopic{Name: tn})
	}
	var kreq kmsg.Request
	switch op {
	case opAdd:
		kreq = (*wire.AddTopicsToMirrorRequest)(req)
	case opRemove:
		kreq = (*wire.RemoveTopicsFromMirrorRequest)(req)
	case opPause:
		kreq = (*wire.PauseMirrorTopicsRequest)(req)
	default:
		kreq = (*wire.ResumeMirrorTopicsRequest)(req)
	}
	var resp *wire.MirrorTopicsResponse
	switch r := admin(t, c, kreq).(type) {
	case *wire.AddTopicsToMirrorResponse:
		resp = (*wire.MirrorTopicsResponse)(r)
	case *wire.RemoveTopicsFromMirrorResponse:
		resp = (*wire.MirrorTopicsResponse)(r)
	case *wire.PauseMirrorTopicsResponse:
		resp = (*wire.MirrorTopicsResponse)(r)
	case *wire.ResumeMirrorTopicsResponse:
		resp = (*wire.MirrorTopicsResponse)(r)
	}
	var errs []string
	if resp.ErrorCode != 0 {
		errs = append(errs, fmt.Sprintf("%v: %s", kerrText(resp.ErrorCode), deref(resp.ErrorMessage)))
	}
	for _, tr := range resp.Topics {
		if tr.ErrorCode != 0 {
			errs = append(errs, fmt.Sprintf("%s: %v: %s", tr.Name, kerrText(tr.ErrorCode), deref(tr.ErrorMessage)))
		}
	}
	return errs
}

func deleteMirror(t testing.TB, c *testcluster.Cluster, name string) (int16, string) {
	t.Helper()
	resp := admin(t, c, &wire.DeleteMirrorRequest{MirrorName: name, TimeoutMillis: 30000}).(*wire.DeleteMirrorResponse)
	return resp.ErrorCode, deref(resp.ErrorMessage)
}

// describe asks a broker of c for DescribeMirrors with partitions.
func describe(t testing.TB, c *testcluster.Cluster, names ...string) *wire.DescribeMirrorsResponse {
	t.Helper()
	ctx := ctxFor(t)
	conn, err := wire.Dial(ctx, "tcp", c.Nodes()[0].Addr(), "mirror-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := conn.Request(ctx, &wire.DescribeMirrorsRequest{MirrorNames: names, IncludePartitions: true})
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*wire.DescribeMirrorsResponse)
}

// partitionStates returns the state of each partition of a mirrored topic
// as DescribeMirrors reports it.
func partitionStates(t testing.TB, c *testcluster.Cluster, mirror, topic string) map[int32]wire.MirrorPartitionState {
	t.Helper()
	out := map[int32]wire.MirrorPartitionState{}
	for _, m := range describe(t, c, mirror).Mirrors {
		for _, tp := range m.Topics {
			if tp.Name == topic {
				for _, p := range tp.Partitions {
					out[p.Partition] = p.State
				}
			}
		}
	}
	return out
}

// waitStates polls until every partition of topic is in state.
func waitStates(t testing.TB, c *testcluster.Cluster, mirror, topic string, partitions int, state wire.MirrorPartitionState) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s partitions of %s in %v", mirror, topic, state), func() bool {
		st := partitionStates(t, c, mirror, topic)
		if len(st) != partitions {
			return false
		}
		for _, s := range st {
			if s != state {
				return false
			}
		}
		return true
	})
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logBytes returns the batches of a node's replica of a partition, as
// stored (offsets and leader epochs included), and its log start.
func logBytes(t testing.TB, n *testcluster.Node, topic string, partition int32) (int64, []byte) {
	t.Helper()
	p, ok := n.Server().Broker().Replicas().Partition(storage.TopicPartition{Topic: topic, Partition: partition})
	if !ok || p.Log() == nil {
		t.Fatalf("node %d has no replica of %s-%d", n.ID, topic, partition)
	}
	l := p.Log()
	start, end := l.LogStartOffset(), l.LogEndOffset()
	var buf bytes.Buffer
	for off := start; off < end; {
		r, err := l.Read(off, 1<<20, storage.FetchLogEnd, true)
		if err != nil {
			t.Fatalf("read %s-%d at %d: %v", topic, partition, off, err)
		}
		b, err := r.Bytes()
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) == 0 {
			break
		}
		next := off
		for rest := b; len(rest) > 0; {
			batch, tail, err := record.NextBatch(rest)
			if err != nil {
				t.Fatalf("%s-%d: %v", topic, partition, err)
			}
			h, _ := record.ParseHeader(batch)
			if h.NextOffset() > off {
				buf.Write(batch)
				next = h.NextOffset()
			}
			rest = tail
		}
		off = next
	}
	return start, buf.Bytes()
}

// batches splits a log's bytes into batch headers.
func batches(t testing.TB, b []byte) []record.Header {
	t.Helper()
	var out []record.Header
	for len(b) > 0 {
		batch, rest, err := record.NextBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		h, err := record.ParseHeader(batch)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h)
		b = rest
	}
	return out
}

// leo returns the log end offset of a node's replica.
func leo(t testing.TB, n *testcluster.Node, topic string, partition int32) int64 {
	t.Helper()
	p, ok := n.Server().Broker().Replicas().Partition(storage.TopicPartition{Topic: topic, Partition: partition})
	if !ok || p.Log() == nil {
		return -1
	}
	return p.Log().LogEndOffset()
}

// waitIdentical polls until every partition of topic holds the same bytes
// on both nodes.
func waitIdentical(t testing.TB, src, dst *testcluster.Node, topic string, partitions int32) {
	t.Helper()
	for p := range partitions {
		var why string
		ok := pollUntil(func() bool {
			s0, sb := logBytes(t, src, topic, p)
			d0, db := logBytes(t, dst, topic, p)
			if s0 == d0 && bytes.Equal(sb, db) {
				return true
			}
			why = fmt.Sprintf("log start %d vs %d, %d vs %d bytes, end %d vs %d", s0, d0, len(sb), len(db), leo(t, src, topic, p), leo(t, dst, topic, p))
			return false
		})
		if !ok {
			t.Fatalf("%s-%d never became byte-identical: %s", topic, p, why)
		}
	}
}

func pollUntil(cond func() bool) bool {
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

func createTopic(t testing.TB, c *testcluster.Cluster, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := c.Admin(t).CreateTopic(ctxFor(t), partitions, 1, configs, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
}

// consume reads want records of topic from the start with the isolation
// level, per partition in order.
func consume(t testing.TB, c *testcluster.Cluster, topic string, committed bool, want int) map[int32][]string {
	t.Helper()
	ctx := ctxFor(t)
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl := c.Client(t, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond))
	defer cl.Close()
	out := map[int32][]string{}
	n := 0
	for n < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s: %v", n, want, topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], string(r.Key)+"="+string(r.Value))
			n++
		})
	}
	if n != want {
		t.Fatalf("consumed %d records of %s, want %d", n, topic, want)
	}
	return out
}

func kerrText(code int16) string { return fmt.Sprint(kerr.ErrorForCode(code)) }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func itoa(i int) string { return strconv.Itoa(i) }

// storedState reads a partition's persisted state from the mirror
// coordinator of a one-node cluster.
func storedState(t testing.TB, c *testcluster.Cluster, mirror, topic string, partition int32) wire.ReadMirrorStatesResponsePartition {
	t.Helper()
	id := topicIDBytes(t, c, topic)
	ctx := ctxFor(t)
	conn, err := wire.Dial(ctx, "tcp", c.Nodes()[0].Addr(), "mirror-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := conn.Request(ctx, &wire.ReadMirrorStatesRequest{Partitions: []wire.ReadMirrorStatesRequestPartition{
		{MirrorName: mirror, TopicID: id, Partition: partition},
	}})
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*wire.ReadMirrorStatesResponse)
	if len(r.Partitions) != 1 || r.Partitions[0].ErrorCode != 0 {
		t.Fatalf("read state of %s-%d: %+v", topic, partition, r)
	}
	return r.Partitions[0]
}

func topicIDBytes(t testing.TB, c *testcluster.Cluster, topic string) [16]byte {
	t.Helper()
	md, err := c.Admin(t).Metadata(ctxFor(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	td, ok := md.Topics[topic]
	if !ok {
		t.Fatalf("no topic %s", topic)
	}
	return td.ID
}

// produceN writes n idempotent records with key prefix to topic.
func produceN(t testing.TB, c *testcluster.Cluster, topic, prefix string, n int) {
	t.Helper()
	ctx := ctxFor(t)
	cl := c.Client(t, kgo.DefaultProduceTopic(topic))
	defer cl.Close()
	for i := range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(prefix + "-" + itoa(i)), Value: []byte(prefix)}).FirstErr(); err != nil {
			t.Fatalf("produce %s %d: %v", prefix, i, err)
		}
	}
}

// leos returns the log end offsets of every partition of topic on n.
func leos(t testing.TB, n *testcluster.Node, topic string, partitions int32) []int64 {
	t.Helper()
	out := make([]int64, partitions)
	for p := range partitions {
		out[p] = leo(t, n, topic, p)
	}
	return out
}

// produceErr tries one produce to topic (few retries) and returns its
// error.
func produceErr(t testing.TB, c *testcluster.Cluster, topic string) error {
	t.Helper()
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordRetries(2), kgo.RecordDeliveryTimeout(5*time.Second))
	defer cl.Close()
	return cl.ProduceSync(ctxFor(t), &kgo.Record{Value: []byte("x")}).FirstErr()
}

func tpOf(topic string, p int32) storage.TopicPartition {
	return storage.TopicPartition{Topic: topic, Partition: p}
}

// mirrorNameOf returns a topic's mirror.name as DescribeConfigs shows it
// ("" when unset).
func mirrorNameOf(t testing.TB, c *testcluster.Cluster, topic string) string {
	t.Helper()
	rcs, err := c.Admin(t).DescribeTopicConfigs(ctxFor(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range rc.Configs {
		if cfg.Key == "mirror.name" && cfg.Value != nil {
			return *cfg.Value
		}
	}
	return ""
}

// waitMirrorName waits until a topic's mirror.name is want.
func waitMirrorName(t testing.TB, c *testcluster.Cluster, topic, want string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s's mirror.name to be %q", topic, want), func() bool { return mirrorNameOf(t, c, topic) == want })
}
