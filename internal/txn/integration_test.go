package txn_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// integrationTimeout bounds each wait of the integration tests.
const integrationTimeout = 90 * time.Second

// txnCluster is a one-node kmirror cluster for the integration tests. The
// node serves the group and transaction coordinators' APIs and
// WriteTxnMarkers on its own client listener.
type txnCluster struct {
	t       *testing.T
	cluster *testcluster.Cluster
}

func startTxnCluster(t *testing.T, opts ...testcluster.Option) *txnCluster {
	t.Helper()
	opts = append([]testcluster.Option{
		testcluster.Config("offsets.topic.replication.factor", "1"),
		testcluster.Config("offsets.topic.num.partitions", "3"),
		testcluster.Config("group.initial.rebalance.delay.ms", "0"),
		testcluster.Config("transaction.state.log.replication.factor", "1"),
		testcluster.Config("transaction.state.log.min.isr", "1"),
		testcluster.Config("transaction.state.log.num.partitions", "3"),
	}, opts...)
	return &txnCluster{t: t, cluster: testcluster.Start(t, opts...)}
}

// restart stops the node cleanly and starts it again on the same ports and
// directories (testcluster keeps a node's ports across restarts, so
// clients reconnect to the address they bootstrapped from). Each of
// whileDown runs while the node is stopped: clients' connections are
// closed and new ones refused.
func (c *txnCluster) restart(whileDown ...func()) {
	c.t.Helper()
	node := c.cluster.Node(1)
	addr := node.Addr()
	node.Stop()
	for _, f := range whileDown {
		f()
	}
	node.Start()
	if got := node.Addr(); got != addr {
		c.t.Fatalf("node restarted on %s, clients know %s", got, addr)
	}
}

// bootstrap is the address clients use: the node's client listener.
func (c *txnCluster) bootstrap() string { return c.cluster.Node(1).Addr() }

func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), integrationTimeout)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
}

func newClient(t *testing.T, bootstrap string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// consumeAll reads topic from the start with the isolation level until
// want records arrived (or, for want < 0, until the topic's end) and
// returns the values.
func consumeAll(t *testing.T, bootstrap, topic string, committed bool, want int) []string {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl := newClient(t, bootstrap, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), integrationTimeout)
	defer cancel()
	var out []string
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s: %v", len(out), want, topic, out)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

// endOffsets returns the high watermark and the last stable offset of each
// partition of topic.
func endOffsets(t *testing.T, adm *kadm.Client, topic string) (hw, lso map[int32]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), integrationTimeout)
	defer cancel()
	hw, lso = map[int32]int64{}, map[int32]int64{}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) { hw[o.Partition] = o.Offset })
	stable, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	stable.Each(func(o kadm.ListedOffset) { lso[o.Partition] = o.Offset })
	return hw, lso
}

func TestIntegrationAbortedInvisibleToReadCommitted(t *testing.T) {
	c := startTxnCluster(t)
	adm := kadm.NewClient(newClient(t, c.bootstrap()))
	createTopic(t, adm, "out", 2)
	p := newClient(t, c.bootstrap(), kgo.TransactionalID("writer"), kgo.DefaultProduceTopic("out"))
	ctx, cancel := context.WithTimeout(context.Background(), integrationTimeout)
	defer cancel()
	txn := func(prefix string, n int, commit bool) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			r := &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
			if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", r.Value, err)
			}
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end %s: %v", prefix, err)
		}
	}
	txn("committed", 10, true)
	txn("aborted", 10, false)
	txn("again", 5, true)

	committed := consumeAll(t, c.bootstrap(), "out", true, 15)
	for _, v := range committed {
		if strings.HasPrefix(v, "aborted") {
			t.Errorf("READ_COMMITTED consumer saw %s", v)
		}
	}
	all := consumeAll(t, c.bootstrap(), "out", false, 25)
	aborted := 0
	for _, v := range all {
		if strings.HasPrefix(v, "aborted") {
			aborted++
		}
	}
	if aborted != 10 {
		t.Errorf("READ_UNCOMMITTED consumer saw %d aborted records, want 10: %v", aborted, all)
	}
	hw, lso := endOffsets(t, adm, "out")
	for p, h := range hw {
		if lso[p] != h {
			t.Errorf("partition %d: LSO %d, high watermark %d", p, lso[p], h)
		}
	}
	desc, err := adm.DescribeTransactions(ctx, "writer")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := desc["writer"]; !ok || d.State != "CompleteCommit" {
		t.Errorf("DescribeTransactions: %+v", desc)
	}
}

func TestIntegrationDeadProducerIsAbortedAfterTimeout(t *testing.T) {
	c := startTxnCluster(t, testcluster.Config("transaction.abort.timed.out.transaction.cleanup.interval.ms", "200"))
	adm := kadm.NewClient(newClient(t, c.bootstrap()))
	createTopic(t, adm, "out", 1)
	ctx, cancel := context.WithTimeout(context.Background(), integrationTimeout)
	defer cancel()
	// The producer writes in a transaction and then dies: it never ends
	// the transaction and never talks to the cluster again.
	dead := newClient(t, c.bootstrap(), kgo.TransactionalID("doomed"), kgo.DefaultProduceTopic("out"),
		kgo.TransactionTimeout(2*time.Second))
	if err := dead.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := dead.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint("lost-", i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	hw, lso := endOffsets(t, adm, "out")
	if hw[0] != 5 || lso[0] != 0 {
		t.Fatalf("open transaction: high watermark %d, LSO %d", hw[0], lso[0])
	}
	// When the coordinator started the transaction, by its own clock.
	open, err := adm.DescribeTransactions(ctx, "doomed")
	if err != nil {
		t.Fatal(err)
	}
	if d := open["doomed"]; d.State != "Ongoing" || d.StartTimestamp <= 0 || d.TimeoutMillis != 2000 {
		t.Fatalf("the open transaction: %+v", d)
	}
	started := open["doomed"].StartTimestamp
	start := time.Now()
	deadline := start.Add(integrationTimeout)
	for {
		hw, lso = endOffsets(t, adm, "out")
		if lso[0] == hw[0] && hw[0] > 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("LSO stuck at %d (high watermark %d)", lso[0], hw[0])
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The abort came after the transaction's timeout by the broker's own
	// clock: its ABORT marker's timestamp against the start the coordinator
	// reported. (A time measured here would include however late this loop
	// looked, and let an early abort pass on a loaded machine.)
	if aborted := abortMarkerTime(t, c, "out", 0); aborted-started < 2000 {
		t.Errorf("aborted %d ms after the transaction started, before its 2000 ms timeout", aborted-started)
	}
	desc, err := adm.DescribeTransactions(ctx, "doomed")
	if err != nil {
		t.Fatal(err)
	}
	if d := desc["doomed"]; d.State != "CompleteAbort" || d.ProducerEpoch != 1 {
		t.Errorf("after the timeout: %+v", d)
	}
	// A READ_COMMITTED consumer sees only what follows.
	p := newClient(t, c.bootstrap(), kgo.DefaultProduceTopic("out"))
	if err := p.ProduceSync(ctx, kgo.StringRecord("after")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := consumeAll(t, c.bootstrap(), "out", true, 1); !slices.Equal(got, []string{"after"}) {
		t.Errorf("READ_COMMITTED: %v", got)
	}
	// The zombie is fenced.
	if err := dead.ProduceSync(ctx, kgo.StringRecord("zombie")).FirstErr(); err == nil {
		if err := dead.EndTransaction(ctx, kgo.TryCommit); err == nil {
			t.Error("the timed-out producer committed")
		}
	}
}

// abortMarkerTime returns the timestamp of the first ABORT marker in a
// partition's log on node 1 (set by the broker that wrote it).
func abortMarkerTime(t *testing.T, c *txnCluster, topic string, partition int32) int64 {
	t.Helper()
	p, ok := c.cluster.Node(1).Server().Broker().Replicas().Partition(storage.TopicPartition{Topic: topic, Partition: partition})
	if !ok || p.Log() == nil {
		t.Fatalf("no replica of %s-%d", topic, partition)
	}
	r, err := p.Log().Read(p.Log().LogStartOffset(), 1<<20, storage.FetchLogEnd, true)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	b, err := r.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	for len(b) > 0 {
		batch, rest, err := record.NextBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		if h, err := record.ParseHeader(batch); err == nil && h.IsControl() {
			if ct, err := record.ControlTypeOf(batch); err == nil && ct == record.ControlAbort {
				return h.MaxTimestamp
			}
		}
		b = rest
	}
	t.Fatalf("no ABORT marker in %s-%d", topic, partition)
	return 0
}

// TestIntegrationConsumeTransformProduceAcrossRestart runs a
// consume-transform-produce job with a GroupTransactSession while its node
// restarts, in the middle of a transaction whose records are written but
// not yet committed; every input record must be in the output exactly once
// for a READ_COMMITTED reader.
func TestIntegrationConsumeTransformProduceAcrossRestart(t *testing.T) {
	const n = 600
	c := startTxnCluster(t)
	adm := kadm.NewClient(newClient(t, c.bootstrap()))
	createTopic(t, adm, "in", 3)
	createTopic(t, adm, "out", 2)
	in := newClient(t, c.bootstrap(), kgo.DefaultProduceTopic("in"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*integrationTimeout)
	defer cancel()
	for i := range n {
		in.Produce(ctx, kgo.StringRecord(strconv.Itoa(i)), func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce input: %v", err)
			}
		})
	}
	if err := in.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(c.bootstrap()),
		kgo.TransactionalID("ctp"),
		kgo.DefaultProduceTopic("out"),
		kgo.ConsumerGroup("ctp-group"),
		kgo.ConsumeTopics("in"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.TransactionTimeout(20*time.Second),
		kgo.SessionTimeout(10*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	committedInputs := map[string]bool{}
	var mu sync.Mutex // guards batches for the log lines below
	var batches, aborts int
	done := make(chan struct{})
	restartAt := make(chan struct{}) // the job has an open transaction with written records
	nodeDown := make(chan struct{})  // clients cannot reach the node
	var once sync.Once
	go func() {
		defer close(done)
		defer sess.Close()
		for ctx.Err() == nil {
			fs := sess.PollRecords(ctx, 50)
			if fs.IsClientClosed() || ctx.Err() != nil {
				return
			}
			if err := sess.Begin(); err != nil {
				t.Errorf("begin: %v", err)
				return
			}
			var values []string
			fs.EachRecord(func(r *kgo.Record) {
				values = append(values, string(r.Value))
				sess.Produce(ctx, kgo.StringRecord("out-"+string(r.Value)), nil)
			})
			if batches == 3 && len(values) > 0 {
				once.Do(func() {
					if err := sess.Client().Flush(ctx); err != nil {
						t.Errorf("flush: %v", err)
					}
					close(restartAt)
					<-nodeDown
				})
			}
			committed, err := sess.End(ctx, kgo.TryCommit)
			switch {
			case err == nil && committed:
				mu.Lock()
				batches++
				mu.Unlock()
				for _, v := range values {
					committedInputs[v] = true
				}
			default:
				aborts++
				t.Logf("transaction not committed (committed=%v): %v", committed, err)
			}
			if len(committedInputs) == n {
				return
			}
		}
	}()
	select {
	case <-restartAt:
	case <-done:
		t.Fatal("the job stopped before the restart")
	}
	mu.Lock()
	before := batches
	mu.Unlock()
	c.restart(func() { close(nodeDown) })
	mu.Lock()
	t.Logf("restart from batch %d to batch %d", before, batches)
	mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the job did not finish")
	}
	got := consumeAll(t, c.bootstrap(), "out", true, n)
	seen := map[string]int{}
	for _, v := range got {
		seen[v]++
	}
	for i := range n {
		if k := seen["out-"+strconv.Itoa(i)]; k != 1 {
			t.Errorf("input %d is %d times in the output", i, k)
		}
	}
	t.Logf("%d committed batches, %d aborted or failed", batches, aborts)
}
