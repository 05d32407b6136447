package server_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// groupReader is one READ_COMMITTED member of a consumer group that
// records what it read and commits its offsets after every poll.
type groupReader struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	seen map[string]int  // value -> times read
	last map[int32]int64 // partition -> offset of the last record read
}

func startGroupReader(t *testing.T, addr, group, topic string) *groupReader {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &groupReader{cl: cl, cancel: cancel, done: make(chan struct{}), seen: map[string]int{}, last: map[int32]int64{}}
	go func() {
		defer close(r.done)
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil || fs.IsClientClosed() {
				return
			}
			fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
			r.mu.Lock()
			fs.EachRecord(func(rec *kgo.Record) {
				r.seen[string(rec.Value)]++
				r.last[rec.Partition] = rec.Offset
			})
			r.mu.Unlock()
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("commit: %v", err)
			}
		}
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop ends the poll loop, commits what was read and leaves the group.
// It may be called more than once.
func (r *groupReader) stop(t *testing.T) {
	r.cancel()
	<-r.done
	if r.cl == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Errorf("final commit: %v", err)
	}
	r.cl.Close()
	r.cl = nil
}

// waitFor waits until every value of want was read at least once.
func (r *groupReader) waitFor(t *testing.T, want []string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		r.mu.Lock()
		missing := 0
		for _, v := range want {
			if r.seen[v] == 0 {
				missing++
			}
		}
		r.mu.Unlock()
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d values still unread", missing, len(want))
		}
		time.Sleep(5 * time.Millisecond) // polling the reader's progress; it has no event to wait on
	}
}

// snapshot returns copies of what the reader has read.
func (r *groupReader) snapshot() (seen map[string]int, last map[int32]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen, last = map[string]int{}, map[int32]int64{}
	for k, v := range r.seen {
		seen[k] = v
	}
	for k, v := range r.last {
		last[k] = v
	}
	return seen, last
}

// TestGroupAndTransactionsOnOneNode runs a consumer group and a
// transactional producer together against one in-process node, every
// request through the node's own client listener: the group's
// READ_COMMITTED member reads exactly the committed transactions while they
// are written, its committed offsets are fetched back, and a new member of
// the group resumes from them.
func TestGroupAndTransactionsOnOneNode(t *testing.T) {
	c := testcluster.Start(t, testcluster.Config("group.initial.rebalance.delay.ms", "0"))
	addr := c.Node(1).Addr()
	ctx := testCtx(t, 3*time.Minute)
	newClient := func(opts ...kgo.Opt) *kgo.Client {
		t.Helper()
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	admCl := newClient()
	adm := newAdmin(admCl)

	// The node advertises the coordinators' APIs on its client listener.
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, admCl)
	if err != nil {
		t.Fatal(err)
	}
	advertised := map[int16]bool{}
	for _, k := range av.ApiKeys {
		advertised[k.ApiKey] = true
	}
	for _, k := range []kmsg.Key{kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat,
		kmsg.LeaveGroup, kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.DescribeGroups, kmsg.ListGroups,
		kmsg.AddPartitionsToTxn, kmsg.AddOffsetsToTxn, kmsg.EndTxn, kmsg.TxnOffsetCommit,
		kmsg.WriteTxnMarkers, kmsg.DescribeTransactions, kmsg.ListTransactions} {
		if !advertised[int16(k)] {
			t.Errorf("ApiVersions does not list %s", k.Name())
		}
	}

	const topic, group = "events", "readers"
	createTopic(t, adm, topic, 3, nil)
	reader := startGroupReader(t, addr, group, topic)
	writer := newClient(kgo.TransactionalID("writer"), kgo.DefaultProduceTopic(topic))

	// txn writes one transaction of n records named prefix-i and commits
	// or aborts it; it returns the values.
	txn := func(prefix string, n int, commit bool) []string {
		t.Helper()
		if err := writer.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var values []string
		var recs []*kgo.Record
		for i := range n {
			v := fmt.Sprintf("%s-%02d", prefix, i)
			values = append(values, v)
			recs = append(recs, &kgo.Record{Key: []byte(v), Value: []byte(v)})
		}
		if err := writer.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce %s: %v", prefix, err)
		}
		if err := writer.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end %s (commit %v): %v", prefix, commit, err)
		}
		return values
	}

	// Transactions while the member reads: every third is aborted.
	var committed []string
	for i := range 30 {
		if i%3 == 1 {
			txn(fmt.Sprintf("aborted-%02d", i), 10, false)
		} else {
			committed = append(committed, txn(fmt.Sprintf("committed-%02d", i), 10, true)...)
		}
	}
	reader.waitFor(t, committed)

	// An open transaction holds the last stable offset back: the member
	// does not read its records until it commits.
	if err := writer.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var open []string
	for i := range 6 {
		v := fmt.Sprintf("open-%02d", i)
		open = append(open, v)
		if err := writer.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	stable, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	ends.Each(func(o kadm.ListedOffset) {
		lso, _ := stable.Lookup(topic, o.Partition)
		if lso.Offset < o.Offset {
			held++
		}
	})
	if held == 0 {
		t.Errorf("no partition's last stable offset is behind its high watermark during a transaction: ends %v, stable %v", ends, stable)
	}
	seen, _ := reader.snapshot()
	for _, v := range open {
		if seen[v] != 0 {
			t.Errorf("READ_COMMITTED member read %s of an open transaction", v)
		}
	}
	if err := writer.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	committed = append(committed, open...)
	reader.waitFor(t, committed)

	reader.stop(t)
	seen, last := reader.snapshot()
	for v, n := range seen {
		if !strings.HasPrefix(v, "committed-") && !strings.HasPrefix(v, "open-") {
			t.Errorf("READ_COMMITTED member read %s", v)
		} else if n != 1 {
			t.Errorf("member read %s %d times", v, n)
		}
	}
	if len(seen) != len(committed) {
		t.Errorf("member read %d values, want the %d committed", len(seen), len(committed))
	}

	// The group's committed offsets, fetched back, point past the last
	// record the member read in each partition.
	offsets, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if len(last) != 3 {
		t.Fatalf("member read from partitions %v, want all 3", last)
	}
	for p, off := range last {
		o, ok := offsets.Lookup(topic, p)
		if !ok || o.Err != nil || o.At != off+1 {
			t.Errorf("partition %d: committed %+v, want offset %d", p, o, off+1)
		}
	}

	// A new member of the group resumes from the committed offsets: it
	// reads only what was committed since, and no aborted record.
	txn("late-aborted", 10, false)
	late := txn("late", 10, true)
	resumed := startGroupReader(t, addr, group, topic)
	resumed.waitFor(t, late)
	resumed.stop(t)
	seen, _ = resumed.snapshot()
	for v, n := range seen {
		if !strings.HasPrefix(v, "late-") || strings.HasPrefix(v, "late-aborted") || n != 1 {
			t.Errorf("resumed member read %s %d times", v, n)
		}
	}

	// The node is the coordinator of both the group and the transactional
	// id, at the address clients bootstrapped from.
	for _, rs := range []kadm.FindCoordinatorResponses{
		adm.FindGroupCoordinators(ctx, group),
		adm.FindTxnCoordinators(ctx, "writer"),
	} {
		rs.Each(func(r kadm.FindCoordinatorResponse) {
			if r.Err != nil || r.NodeID != 1 || net.JoinHostPort(r.Host, strconv.Itoa(int(r.Port))) != addr {
				t.Errorf("coordinator of %s: %+v, want node 1 at %s", r.Name, r, addr)
			}
		})
	}
	desc, err := adm.DescribeTransactions(ctx, "writer")
	if err != nil {
		t.Fatal(err)
	}
	if d := desc["writer"]; d.State != "CompleteCommit" || d.Coordinator != 1 {
		t.Errorf("DescribeTransactions: %+v", d)
	}
}
