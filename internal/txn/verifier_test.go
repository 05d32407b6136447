package txn

import (
	"context"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator/coordinatortest"
	"github.com/kmirror/kmirror/internal/storage"
)

// checkErrs compares per-partition errors with the Kafka errors wanted.
func checkErrs(t *testing.T, what string, got []error, want ...*kerr.Error) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d errors for %d partitions", what, len(got), len(want))
	}
	for i := range got {
		if !isErr(got[i], want[i]) {
			t.Errorf("%s: partition %d: %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestVerifierLocal(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a0, a1 := tp("a", 0), tp("a", 1)
	v := e.c.Verifier()
	p := e.initProducer("t", time.Minute)
	p.mustAdd(a0)
	checkErrs(t, "ongoing", v.VerifyTransaction(ctx, "t", p.pid, p.epoch, []storage.TopicPartition{a0, a1}), nil, kerr.InvalidTxnState)
	checkErrs(t, "fenced", e.c.VerifyTransaction(ctx, "t", p.pid, p.epoch+1, []storage.TopicPartition{a1}), kerr.InvalidProducerEpoch)
	checkErrs(t, "unknown id", []error{v.Verify(ctx, "nobody", p.pid, 0, "a", 1)}, kerr.InvalidProducerIDMapping)
	checkErrs(t, "other producer", []error{v.Verify(ctx, "t", p.pid+1, 0, "a", 0)}, kerr.InvalidProducerIDMapping)

	// Positive answers are cached: with the coordinator gone, a-0 still
	// verifies, a-1 cannot be verified (retriable for the producer).
	part := e.c.CoordinatorFor("t")
	e.host.Lead(TransactionStateTopic, part, false, 1)
	waitFor(t, "unloaded", func() bool { return len(e.c.rt.Partitions()) == testPartitions-1 })
	checkErrs(t, "cached", v.VerifyTransaction(ctx, "t", p.pid, p.epoch, []storage.TopicPartition{a0, a1}), nil, kerr.NotEnoughReplicas)
	checkErrs(t, "other epoch is not cached", []error{v.Verify(ctx, "t", p.pid, p.epoch+1, "a", 0)}, kerr.NotEnoughReplicas)
	v.ForgetPartition("a", 0)
	checkErrs(t, "forgotten partition", []error{v.Verify(ctx, "t", p.pid, p.epoch, "a", 0)}, kerr.NotEnoughReplicas)

	e.host.Lead(TransactionStateTopic, part, true, 2)
	e.waitLoaded()
	checkErrs(t, "verified again", []error{v.Verify(ctx, "t", p.pid, p.epoch, "a", 0)}, nil)
	// The commit's marker ends the transaction in a-0: a late write of the
	// same producer and epoch is not verified from the cache.
	if err := p.end(3, true); err != nil {
		t.Fatal(err)
	}
	e.waitState("t", CompleteCommit, 0)
	checkErrs(t, "after the commit", []error{v.Verify(ctx, "t", p.pid, p.epoch, "a", 0)}, kerr.InvalidTxnState)

	// Entries do not outlive transaction.max.timeout.ms.
	p.mustAdd(a0)
	checkErrs(t, "next transaction", []error{v.Verify(ctx, "t", p.pid, p.epoch, "a", 0)}, nil)
	e.clock.Advance(e.cfg.MaxTimeout)
	e.host.Lead(TransactionStateTopic, part, false, 2)
	waitFor(t, "unloaded", func() bool { return len(e.c.rt.Partitions()) == testPartitions-1 })
	checkErrs(t, "expired entry", []error{v.Verify(ctx, "t", p.pid, p.epoch, "a", 0)}, kerr.NotEnoughReplicas)
}

func TestVerifierWhileCompleting(t *testing.T) {
	e := newEnv(t)
	a0 := tp("a", 0)
	p := e.initProducer("t", time.Minute)
	p.mustAdd(a0)
	e.data.failWith(a0, kerr.NotLeaderForPartition)
	if err := p.end(3, true); err != nil {
		t.Fatal(err)
	}
	checkErrs(t, "completing", []error{e.c.Verifier().Verify(context.Background(), "t", p.pid, p.epoch, "a", 0)}, kerr.NotEnoughReplicas)
}

// remoteCoordinator returns a coordinator on node 2 that leads nothing and
// reaches node 1 (serving at addr) over the network.
func remoteCoordinator(t *testing.T, addr string, topics ...topicSpec) (*Coordinator, *fixedMetadata) {
	t.Helper()
	meta := &fixedMetadata{}
	meta.set(buildImage(t, map[int32]string{1: addr, 2: "127.0.0.1:1"}, topics...))
	cfg := DefaultConfig()
	cfg.NodeID = 2
	cfg.TopicPartitions = testPartitions
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.RequestTimeout = 5 * time.Second
	host := coordinatortest.NewHost(t.TempDir(), slog.New(slog.DiscardHandler))
	t.Cleanup(func() { host.Close() })
	c := New(cfg, Deps{Host: host, Metadata: meta, ProducerIDs: &pidSeq{}})
	c.Start()
	t.Cleanup(c.Close)
	return c, meta
}

func TestVerifierRemote(t *testing.T) {
	e := newEnv(t)
	srv := serveAPIs(t, e.c.APIs()...)
	remote, meta := remoteCoordinator(t, srv.addr(), defaultTopics()...)
	ctx := context.Background()
	a0, a1 := tp("a", 0), tp("a", 1)
	p := e.initProducer("t", time.Minute)
	p.mustAdd(a0)
	v := remote.Verifier()
	checkErrs(t, "remote", v.VerifyTransaction(ctx, "t", p.pid, p.epoch, []storage.TopicPartition{a1, a0}), kerr.InvalidTxnState, nil)
	checkErrs(t, "remote fenced", []error{v.Verify(ctx, "t", p.pid, p.epoch+1, "a", 1)}, kerr.InvalidProducerEpoch)
	// The coordinator's broker is unreachable: cached answers still hold,
	// others fail with a network error the producer retries.
	srv.close()
	checkErrs(t, "cached", []error{v.Verify(ctx, "t", p.pid, p.epoch, "a", 0)}, nil)
	checkErrs(t, "unreachable", []error{v.Verify(ctx, "t", p.pid, p.epoch, "a", 1)}, kerr.NetworkException)
	// No leader for the transactional id's partition.
	meta.set(buildImage(t, map[int32]string{1: srv.addr()}, topicSpec{"a", 3, 1}))
	checkErrs(t, "no coordinator", []error{v.Verify(ctx, "t", p.pid, p.epoch, "a", 1)}, kerr.NotEnoughReplicas)
}

func TestAddPartitionsToTxnBrokerVersions(t *testing.T) {
	e := newEnv(t)
	a0, a1 := tp("a", 0), tp("a", 1)
	p := e.initProducer("t1", time.Minute)
	p.mustAdd(a0)
	q := e.initProducer("t2", time.Minute)
	for _, version := range []int16{4, 5} {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = version
		verify := kmsg.NewAddPartitionsToTxnRequestTransaction()
		verify.TransactionalID, verify.ProducerID, verify.ProducerEpoch, verify.VerifyOnly = "t1", p.pid, p.epoch, true
		verify.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "a", Partitions: []int32{1, 0}}}
		add := kmsg.NewAddPartitionsToTxnRequestTransaction()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch = "t2", q.pid, q.epoch
		add.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "a", Partitions: []int32{1}}}
		req.Transactions = []kmsg.AddPartitionsToTxnRequestTransaction{verify, add}
		resp := e.do(req).(*kmsg.AddPartitionsToTxnResponse)
		got := map[string]int16{}
		for _, tx := range resp.Transactions {
			for _, rt := range tx.Topics {
				for _, rp := range rt.Partitions {
					got[tx.TransactionalID+"/"+storage.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}.String()] = rp.ErrorCode
				}
			}
		}
		notAdded := kerr.InvalidTxnState.Code
		if version >= 5 {
			notAdded = kerr.TransactionAbortable.Code
		}
		want := map[string]int16{"t1/a-0": 0, "t1/a-1": notAdded, "t2/a-1": 0}
		if resp.ErrorCode != 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("v%d: %v (top %d), want %v", version, got, resp.ErrorCode, want)
		}
	}
	if st := e.describe("t2"); st.State != "Ongoing" || len(st.Topics) != 1 {
		t.Errorf("t2 after a broker add: %+v", st)
	}
	if st := e.describe("t1"); len(st.Topics) != 1 || len(st.Topics[0].Partitions) != 1 {
		t.Errorf("verification added partitions: %+v", st)
	}
	_ = a1
}
