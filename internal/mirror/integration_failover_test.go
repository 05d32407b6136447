package mirror_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestFailover fails a mirrored topic over while producers write to A and
// a transaction is open there: each of B's partitions holds A's batches up
// to the open transaction's first offset, byte for byte, followed by
// exactly one MIRROR_PID_RESET batch in a leader epoch above every
// mirrored batch's;
// an idempotent producer then writes to B from sequence 0, and a batch
// replayed with a producer id copied from A is appended as new data, not
// answered as a duplicate.
func TestFailover(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	const parts = 3
	createTopic(t, a, "pay", parts, nil)
	produceN(t, a, "pay", "seed", 30)
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "pay")
	an, bn := a.Nodes()[0], b.Nodes()[0]
	waitStates(t, b, "m", "pay", parts, wire.MirrorStateMirroring)

	// Producers keep writing to A during the failover.
	ctx, stop := context.WithCancel(ctxFor(t))
	var wg sync.WaitGroup
	bg := a.Client(t, kgo.DefaultProduceTopic("pay"))
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			_ = bg.ProduceSync(ctx, &kgo.Record{Key: []byte("live-" + itoa(i)), Value: []byte("live")}).FirstErr()
		}
	}()
	defer func() { stop(); wg.Wait() }()
	// A transaction stays open on every partition.
	tx := a.Client(t, kgo.DefaultProduceTopic("pay"), kgo.TransactionalID("open-tx"), kgo.TransactionTimeout(time.Minute))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		r := &kgo.Record{Key: []byte("open-" + itoa(int(p))), Value: []byte("uncommitted"), Partition: p}
		if err := tx.ProduceSync(ctxFor(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// B has copied the open transaction's records.
	target := leos(t, an, "pay", parts)
	waitFor(t, "B to copy the open transaction", func() bool {
		for p, end := range target {
			if leo(t, bn, "pay", int32(p)) < end {
				return false
			}
		}
		return true
	})

	mirrorTopics(t, b, opRemove, "m", "pay")
	waitStates(t, b, "m", "pay", parts, wire.MirrorStateStopped)
	stop()
	wg.Wait()
	if n := histogramCount(t, bn, "kmirror_mirror_failover_duration_seconds", map[string]string{"mirror": "m"}); n != parts {
		t.Errorf("failover duration histogram counted %d failovers, want %d", n, parts)
	}

	// B's log is A's up to the open transaction's first offset (A's last
	// stable offset), byte for byte, then one barrier: the cut removed
	// the open transaction and nothing else.
	cuts := lastStableOffsets(t, a, "pay", parts)
	barriers := make([]rawBatch, parts)
	for p := range int32(parts) {
		name := "pay-" + itoa(int(p))
		_, src := logBytes(t, an, "pay", p)
		if cuts[p] <= 0 || cuts[p] >= leo(t, an, "pay", p) {
			t.Fatalf("%s: A's last stable offset %d of log end %d: the open transaction is not where the test put it", name, cuts[p], leo(t, an, "pay", p))
		}
		_, data := logBytes(t, bn, "pay", p)
		barriers[p] = checkFailedOver(t, name, batchesBelow(t, name, src, cuts[p]), data)
		if v, err := record.ParseMirrorPIDReset(barriers[p].raw); err != nil || v != (record.MirrorPIDReset{Version: 1, SourceClusterID: a.ClusterID()}) {
			t.Fatalf("%s's barrier = %+v, %v; want version 1 naming source %s", name, v, err, a.ClusterID())
		}
	}
	// End offsets: log end = high watermark = last stable offset.
	hw, err := b.Admin(t).ListEndOffsets(ctxFor(t), "pay")
	if err != nil {
		t.Fatal(err)
	}
	lso, err := b.Admin(t).ListCommittedOffsets(ctxFor(t), "pay")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(parts) {
		h, _ := hw.Lookup("pay", p)
		l, _ := lso.Lookup("pay", p)
		if h.Err != nil || l.Err != nil || h.Offset != leo(t, bn, "pay", p) || l.Offset != h.Offset {
			t.Fatalf("pay-%d: log end %d, high watermark %d (%v), last stable offset %d (%v)", p, leo(t, bn, "pay", p), h.Offset, h.Err, l.Offset, l.Err)
		}
	}

	// A batch copied from A, replayed with its producer id and sequence,
	// is new data on B (its producer state was reset), not a duplicate.
	_, data := logBytes(t, bn, "pay", 0)
	var replay []byte
	for rest := data; len(rest) > 0; {
		bt, next, err := record.NextBatch(rest)
		if err != nil {
			t.Fatal(err)
		}
		if h, _ := record.ParseHeader(bt); h.ProducerID >= 0 && !h.IsControl() && !h.IsTransactional() && h.BaseSequence == 0 {
			replay = append([]byte(nil), bt...)
			break
		}
		rest = next
	}
	if replay == nil {
		t.Fatal("no idempotent batch at sequence 0 in pay-0")
	}
	before := leo(t, bn, "pay", 0)
	rp := rawProduce(t, b, "pay", 0, replay)
	if rp.ErrorCode != 0 || rp.BaseOffset != before {
		t.Fatalf("replayed batch: error %v, base offset %d; want appended at %d", kerr.ErrorForCode(rp.ErrorCode), rp.BaseOffset, before)
	}

	// An idempotent producer writes to B from sequence 0.
	fresh := b.Client(t, kgo.DefaultProduceTopic("pay"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	start := leo(t, bn, "pay", 1)
	if err := fresh.ProduceSync(ctxFor(t), &kgo.Record{Value: []byte("after-failover"), Partition: 1}).FirstErr(); err != nil {
		t.Fatalf("produce to the failed-over topic: %v", err)
	}
	_, data = logBytes(t, bn, "pay", 1)
	hs := batches(t, data)
	h := hs[len(hs)-1]
	if h.BaseOffset != start || h.BaseSequence != 0 || h.ProducerID < 0 {
		t.Fatalf("first produce after failover: %+v (log end was %d)", h, start)
	}
	if h.PartitionLeaderEpoch < barriers[1].PartitionLeaderEpoch {
		t.Fatalf("new data in epoch %d below the barrier's %d", h.PartitionLeaderEpoch, barriers[1].PartitionLeaderEpoch)
	}
	if err := tx.EndTransaction(ctxFor(t), kgo.TryAbort); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("abort the open transaction on A: %v", err)
	}
}

// rawProduce sends one batch as it is to a partition (acks=all).
func rawProduce(t testing.TB, c *testcluster.Cluster, topic string, partition int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	cl := c.Client(t)
	resp, err := req.RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}
