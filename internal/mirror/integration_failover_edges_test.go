package mirror_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// producerCount is how many producers DescribeProducers lists on a
// partition of c.
func producerCount(t testing.TB, c *testcluster.Cluster, topic string, partition int32) int {
	t.Helper()
	d, err := c.Admin(t).DescribeProducers(ctxFor(t), kadm.TopicsSet{topic: {partition: {}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	d.EachPartition(func(p kadm.DescribedProducersPartition) {
		if p.Err != nil {
			t.Fatalf("describe producers of %s-%d: %v", topic, partition, p.Err)
		}
		n += len(p.ActiveProducers)
	})
	return n
}

// TestFailoverOfLostState fails over a partition whose persisted state was
// lost (UNKNOWN) while its log holds mirrored data: it still gets the
// failover's steps — its barrier, and no producer of the source left —
// instead of going straight to STOPPED as a partition that never mirrored.
func TestFailoverOfLostState(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "lost", 1, nil)
	produceN(t, a, "lost", "idem", 10) // an idempotent producer
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "lost")
	waitStates(t, b, "m", "lost", 1, wire.MirrorStateMirroring)
	an, bn := a.Nodes()[0], b.Nodes()[0]
	waitIdentical(t, an, bn, "lost", 1)
	if producerCount(t, b, "lost", 0) == 0 {
		t.Fatal("no producer of the source on the mirrored partition")
	}
	mirrorTopics(t, b, opPause, "m", "lost")
	waitStates(t, b, "m", "lost", 1, wire.MirrorStatePaused)

	// The state record now says UNKNOWN (as if it were lost).
	st := storedState(t, b, "m", "lost", 0)
	conn, err := wire.Dial(ctxFor(t), "tcp", bn.Addr(), "mirror-test")
	if err != nil {
		t.Fatal(err)
	}
	w := wire.WriteMirrorStatesRequestPartition{MirrorName: "m", TopicID: topicIDBytes(t, b, "lost"), Partition: 0,
		State: wire.MirrorStateUnknown, StateEpoch: st.StateEpoch + 1, LeaderEpoch: st.LeaderEpoch}
	resp, err := conn.Request(ctxFor(t), &wire.WriteMirrorStatesRequest{Partitions: []wire.WriteMirrorStatesRequestPartition{w}})
	conn.Close()
	if err != nil || resp.(*wire.WriteMirrorStatesResponse).Partitions[0].ErrorCode != 0 {
		t.Fatalf("write UNKNOWN: %v %+v", err, resp)
	}

	mirrorTopics(t, b, opRemove, "m", "lost")
	waitStates(t, b, "m", "lost", 1, wire.MirrorStateStopped)
	_, src := logBytes(t, an, "lost", 0)
	_, data := logBytes(t, bn, "lost", 0)
	checkFailedOver(t, "lost-0", src, data) // A has no open transaction: all of its log, then one barrier
	if n := producerCount(t, b, "lost", 0); n != 0 {
		t.Errorf("DescribeProducers lists %d producers of the source after the failover", n)
	}
}

// TestFailoverCutClampedToLogStart fails over a partition whose open
// transaction began below its log start (the source's log start lies
// inside the transaction's first batch): the cut at the last stable offset
// stops at the log start instead of emptying the log below it.
func TestFailoverCutClampedToLogStart(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "clamp", 1, nil)
	tx := a.Client(t, kgo.DefaultProduceTopic("clamp"), kgo.TransactionalID("clamp-tx"), kgo.TransactionTimeout(time.Minute),
		kgo.ProducerLinger(200*time.Millisecond))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Value: []byte("open-" + itoa(i))})
	}
	if err := tx.ProduceSync(ctxFor(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	an, bn := a.Nodes()[0], b.Nodes()[0]
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "clamp", Partition: 0, At: 5})
	if resp, err := a.Admin(t).DeleteRecords(ctxFor(t), os); err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resp.Error())
	}
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "clamp")
	waitStates(t, b, "m", "clamp", 1, wire.MirrorStateMirroring)
	waitIdentical(t, an, bn, "clamp", 1)

	mirrorTopics(t, b, opRemove, "m", "clamp")
	waitStates(t, b, "m", "clamp", 1, wire.MirrorStateStopped)
	start, data := logBytes(t, bn, "clamp", 0)
	if start != 5 {
		t.Fatalf("after the failover: log start %d, want 5", start)
	}
	if b := checkFailedOver(t, "clamp-0", nil, data); b.BaseOffset != 5 {
		t.Fatalf("the barrier is at %d, want the log start 5", b.BaseOffset)
	}
}
