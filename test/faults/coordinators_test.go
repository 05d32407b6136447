package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Coordinator key types of FindCoordinator.
const (
	groupKey int8 = 0
	txnKey   int8 = 1
)

// groupMembers runs consumers of one group, each in its own goroutine,
// recording every record any of them polled.
type groupMembers struct {
	c     *procCluster
	group string
	topic string

	mu      sync.Mutex
	seen    map[string]int
	members map[int]*groupMember
	nextID  int
}

type groupMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// join starts a new member; it returns its index.
func (g *groupMembers) join() int {
	g.c.t.Helper()
	cl := g.c.client(kgo.ConsumerGroup(g.group), kgo.ConsumeTopics(g.topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(300*time.Millisecond),
		kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	m := &groupMember{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			g.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) { g.seen[string(r.Value)]++ })
			g.mu.Unlock()
		}
	}()
	g.mu.Lock()
	defer g.mu.Unlock()
	id := g.nextID
	g.nextID++
	g.members[id] = m
	return id
}

// leave stops member id; closing the client commits what it polled and
// leaves the group.
func (g *groupMembers) leave(id int) {
	g.mu.Lock()
	m := g.members[id]
	delete(g.members, id)
	g.mu.Unlock()
	m.cancel()
	<-m.done
	m.cl.Close()
}

func (g *groupMembers) leaveAll() {
	g.mu.Lock()
	var ids []int
	for id := range g.members {
		ids = append(ids, id)
	}
	g.mu.Unlock()
	for _, id := range ids {
		g.leave(id)
	}
}

// polled returns how many records the members polled, duplicates included.
func (g *groupMembers) polled() (total, distinct int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range g.seen {
		total += n
	}
	return total, len(g.seen)
}

// waitPolled waits until the members polled at least n distinct records.
func (g *groupMembers) waitPolled(n int) {
	g.c.t.Helper()
	waitFor(g.c.t, fmt.Sprintf("%d records consumed by the group", n), func() (bool, string) {
		_, d := g.polled()
		return d >= n, fmt.Sprintf("%d distinct", d)
	})
}

// waitStable waits until the group is Stable with n members, as its
// coordinator describes it.
func (c *procCluster) waitStable(group string, n int) {
	c.t.Helper()
	waitFor(c.t, fmt.Sprintf("%s stable with %d members", group, n), func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ds, err := c.admin().DescribeGroups(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		d := ds[group]
		if d.Err != nil {
			return false, d.Err.Error()
		}
		return d.State == "Stable" && len(d.Members) == n, fmt.Sprintf("%s with %d members", d.State, len(d.Members))
	})
}

// waitCommittedToEnd waits until group's committed offsets on every
// partition of topic are the partitions' end offsets.
func (c *procCluster) waitCommittedToEnd(group, topic string, parts int32) {
	c.t.Helper()
	waitFor(c.t, group+" committed up to the end of "+topic, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		adm := c.admin()
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		for p := range parts {
			e, _ := ends.Lookup(topic, p)
			o, ok := committed.Lookup(topic, p)
			if !ok || o.At != e.Offset {
				return false, fmt.Sprintf("partition %d: committed %d, end %d", p, o.At, e.Offset)
			}
		}
		return true, ""
	})
}

// TestGroupCoordinatorKill: three consumers of one group consume and
// commit while records are produced; the group coordinator's node is
// SIGKILLed. Another node loads the group from __consumer_offsets and
// coordinates it: the members carry on, a member that leaves is replaced
// through a rebalance on the new coordinator, and in the end the group has
// polled every acknowledged record (none skipped) and committed up to the
// end of every partition.
func TestGroupCoordinatorKill(t *testing.T) {
	c := threeNodes(t, nil)
	const topic, parts, group = "orders", 6, "orders-group"
	c.createTopic(topic, parts, nil)
	prod := c.startProducer(topic, parts)
	g := &groupMembers{c: c, group: group, topic: topic, seen: map[string]int{}, members: map[int]*groupMember{}}
	defer g.leaveAll()
	first := g.join()
	g.join()
	g.join()
	c.waitStable(group, 3)
	g.waitPolled(1000)

	old := c.waitCoordinator(group, groupKey, func(int32) bool { return true })
	c.node(old).kill()
	now := c.waitCoordinator(group, groupKey, func(id int32) bool { return id != old })
	t.Logf("group coordinator %d killed; node %d coordinates %s", old, now, group)
	_, d := g.polled()
	g.waitPolled(d + 1000)
	c.waitStable(group, 3)

	// A member leaves and another joins: a rebalance on the new
	// coordinator, which must hand the partitions over at the committed
	// offsets.
	g.leave(first)
	g.join()
	c.waitStable(group, 3)
	_, d = g.polled()
	g.waitPolled(d + 1000)

	prod.stop()
	acked := prod.ackedValues()
	waitFor(t, "the group to poll every acknowledged record", func() (bool, string) {
		g.mu.Lock()
		defer g.mu.Unlock()
		missing := 0
		for _, v := range acked {
			if g.seen[v] == 0 {
				missing++
			}
		}
		return missing == 0, fmt.Sprintf("%d of %d not polled", missing, len(acked))
	})
	c.waitCommittedToEnd(group, topic, parts)
	total, distinct := g.polled()
	t.Logf("%d acknowledged records; the group polled %d distinct, %d re-polled (at-least-once after the rebalance)", len(acked), distinct, total-distinct)
}

// TestTxnCoordinatorKill: a transactional consume-transform-produce job
// (GroupTransactSession, READ_COMMITTED input, offsets committed in the
// transactions) runs while input is produced; in the middle of a
// transaction whose records are already written, the transaction
// coordinator's node is SIGKILLed. Another node loads the transaction from
// __transaction_state and the job goes on. The output, read
// READ_COMMITTED, holds each input record exactly once.
func TestTxnCoordinatorKill(t *testing.T) {
	c := threeNodes(t, nil)
	const in, out, parts, txnID, group = "txn-in", "txn-out", 3, "ctp-job", "ctp-group"
	c.createTopic(in, parts, nil)
	c.createTopic(out, parts, nil)
	prod := c.startProducer(in, parts)
	prod.waitAcks(300)

	newSession := func() *kgo.GroupTransactSession {
		opts := append([]kgo.Opt{kgo.SeedBrokers(c.seeds()...)}, clientOpts()...)
		opts = append(opts,
			kgo.TransactionalID(txnID),
			kgo.DefaultProduceTopic(out),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(in),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(200*time.Millisecond),
			kgo.TransactionTimeout(20*time.Second),
			kgo.SessionTimeout(10*time.Second),
			// Retry for longer than a failover takes (the dead node is
			// fenced after broker.session.timeout.ms), so that the
			// transaction open at the kill can end on the new
			// coordinator. franz-go still gives up now and then (a failed
			// dial of the dead node while it looks the coordinator up is
			// final for it); the job then starts a new session, whose
			// InitProducerId fences the old one and aborts its
			// transaction. Both outcomes keep exactly-once; the log says
			// which happened.
			kgo.RequestRetries(300),
		)
		s, err := kgo.NewGroupTransactSession(opts...)
		if err != nil {
			t.Errorf("new session: %v", err)
			return nil
		}
		return s
	}

	ctx, cancel := context.WithCancel(context.Background())
	killNow := make(chan struct{}) // the job has written records of an open transaction
	killed := make(chan struct{})  // the coordinator is dead
	var (
		mu              sync.Mutex
		commits, aborts int
		endErrs         []string
		killOnce        sync.Once
		committedAtKill int
		atKill          string // how the transaction open at the kill ended
		jobDone         = make(chan struct{})
	)
	defer func() { cancel(); <-jobDone }() // the job reports to t: it must end before the test
	go func() {
		defer close(jobDone)
		sess := newSession()
		defer func() {
			if sess != nil {
				sess.Close()
			}
		}()
		for sess != nil && ctx.Err() == nil {
			fs := sess.PollRecords(ctx, 100)
			if fs.IsClientClosed() || ctx.Err() != nil {
				return
			}
			if err := sess.Begin(); err != nil {
				t.Errorf("begin: %v", err)
				return
			}
			n := 0
			fs.EachRecord(func(r *kgo.Record) {
				n++
				sess.Produce(ctx, &kgo.Record{Partition: r.Partition, Value: append([]byte("out:"), r.Value...)}, nil)
			})
			mu.Lock()
			due := n > 0 && commits >= 5
			mu.Unlock()
			if due {
				killOnce.Do(func() {
					// Written but not committed: the new coordinator must
					// finish or abort exactly this transaction.
					if err := sess.Client().Flush(ctx); err != nil {
						t.Errorf("flush: %v", err)
					}
					mu.Lock()
					committedAtKill = commits
					mu.Unlock()
					close(killNow)
					select {
					case <-killed:
					case <-ctx.Done():
					}
				})
			}
			committed, err := sess.End(ctx, kgo.TryCommit)
			mu.Lock()
			if due && atKill == "" {
				atKill = fmt.Sprintf("committed=%v err=%v", committed, err)
			}
			if committed {
				commits++
			} else {
				aborts++
			}
			if err != nil && len(endErrs) < 10 {
				endErrs = append(endErrs, err.Error())
			}
			mu.Unlock()
			if err != nil && ctx.Err() == nil {
				// End's errors are not retryable: start a new session with
				// the same transactional id, which fences the old one.
				sess.Close()
				sess = newSession()
			}
		}
	}()

	select {
	case <-killNow:
	case <-jobDone:
		t.Fatal("the job stopped before the kill")
	case <-time.After(waitTimeout):
		t.Fatal("the job committed no five transactions")
	}
	old := c.waitCoordinator(txnID, txnKey, func(int32) bool { return true })
	c.node(old).kill()
	close(killed)
	now := c.waitCoordinator(txnID, txnKey, func(id int32) bool { return id != old })
	t.Logf("transaction coordinator %d killed with a transaction open; node %d coordinates %s", old, now, txnID)
	waitFor(t, "transactions committed after the kill", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return commits > committedAtKill+5, fmt.Sprintf("%d commits, %d at the kill", commits, committedAtKill)
	})
	c.node(old).start()

	prod.stop()
	c.waitCommittedToEnd(group, in, parts) // the job consumed every input
	cancel()
	<-jobDone
	mu.Lock()
	t.Logf("%d transactions committed, %d aborted; the one open at the kill ended with %s; End errors %v", commits, aborts, atKill, endErrs)
	mu.Unlock()

	// The output, READ_COMMITTED: a non-transactional marker at the end of
	// each partition tells the reader it has seen everything before it.
	marker := c.client(kgo.DefaultProduceTopic(out), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	mctx, mcancel := context.WithTimeout(context.Background(), waitTimeout)
	defer mcancel()
	for p := range int32(parts) {
		if err := marker.ProduceSync(mctx, &kgo.Record{Partition: p, Value: []byte("end")}).FirstErr(); err != nil {
			t.Fatalf("end marker: %v", err)
		}
	}
	reader := c.client(kgo.ConsumeTopics(out), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	seen := map[string]int{}
	ended := map[int32]bool{}
	for len(ended) < parts {
		fs := reader.PollFetches(mctx)
		if mctx.Err() != nil {
			t.Fatalf("reading %s: %d of %d partitions read to their end marker", out, len(ended), parts)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) == "end" {
				ended[r.Partition] = true
				return
			}
			seen[string(r.Value)]++
		})
	}
	acked := prod.ackedValues()
	for _, v := range acked {
		if n := seen["out:"+v]; n != 1 {
			t.Errorf("input %.20q is %d times in the committed output", v, n)
		}
	}
	for v := range seen {
		if !strings.HasPrefix(v, "out:"+in+"/") {
			t.Errorf("foreign output record %.30q", v)
		}
	}
	if len(seen) != len(acked) {
		t.Errorf("%d distinct output records for %d inputs", len(seen), len(acked))
	}
	t.Logf("%d inputs, each exactly once in the committed output", len(acked))
}
