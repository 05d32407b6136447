package broker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/record"
)

type leadershipEvent struct {
	partition int32
	leader    bool
	epoch     int32
}

type eventLog struct {
	mu     sync.Mutex
	events []leadershipEvent
}

func (l *eventLog) fn(p int32, leader bool, epoch int32) {
	l.mu.Lock()
	l.events = append(l.events, leadershipEvent{p, leader, epoch})
	l.mu.Unlock()
}

func (l *eventLog) take() []leadershipEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.events
	l.events = nil
	return out
}

func TestCoordinatorHostLeadershipAndLogs(t *testing.T) {
	e := newEnv(t, nil)
	h := e.b.CoordinatorHost()
	ctx := context.Background()

	// EnsureTopic creates the topic through the controller and returns
	// once this broker serves it.
	spec := coordinator.TopicSpec{Name: offsetsTopic, Partitions: 3, ReplicationFactor: 1, Configs: map[string]string{"cleanup.policy": "compact"}}
	if err := h.EnsureTopic(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.b.rm.Partition(tpOf(offsetsTopic, 2)); !ok {
		t.Fatal("EnsureTopic returned before the partitions existed")
	}
	if lc := e.partition(offsetsTopic, 0).Log().Config(); !lc.CleanupPolicy.Compact || lc.CleanupPolicy.Delete {
		t.Fatalf("internal topic cleanup policy %v", lc.CleanupPolicy)
	}
	if err := h.EnsureTopic(ctx, spec); err != nil {
		t.Fatalf("existing topic: %v", err)
	}

	// The watcher learns the current leadership at once, then changes.
	var ev eventLog
	stop := h.WatchLeadership(offsetsTopic, ev.fn)
	got := ev.take()
	if len(got) != 3 {
		t.Fatalf("initial leadership: %+v", got)
	}
	id := e.topicID(offsetsTopic)
	leader := int32(testNode)
	e.meta.mustApply(t, &metadata.PartitionChangeRecord{TopicID: id, Partition: 1, Leader: &leader})
	other := int32(2)
	e.meta.mustApply(t, &metadata.PartitionChangeRecord{TopicID: id, Partition: 2, Leader: &other, Replicas: []int32{1, 2}, ISR: []int32{1, 2}})
	got = ev.take()
	want := []leadershipEvent{{1, true, 1}, {2, false, 1}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("changes: %+v, want %+v", got, want)
	}
	// Unrelated changes say nothing.
	e.createTopic("unrelated", 1, nil)
	if got := ev.take(); len(got) != 0 {
		t.Fatalf("unrelated topic: %+v", got)
	}

	// Append at the current epoch, read back from below the log start.
	plog, err := h.PartitionLog(offsetsTopic, 1)
	if err != nil {
		t.Fatal(err)
	}
	batch := makeBatch(t, plainBatch(), "group-record")
	base, err := plog.Append(ctx, batch, 1)
	if err != nil || base != 0 {
		t.Fatalf("append: %d %v", base, err)
	}
	marker := record.BuildEndTxnMarker(42, 0, record.EndTxnMarker{Commit: false}, time.Now().UnixMilli(), 0)
	if _, err := plog.Append(ctx, makeBatch(t, batchOpts{pid: 42, epoch: 0, seq: 0, txn: true}, "txn-offset"), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := plog.Append(ctx, marker, 1); err != nil {
		t.Fatalf("coordinator marker: %v", err)
	}
	bs, end, err := plog.Read(ctx, -5, 1<<20)
	if err != nil || end != 3 {
		t.Fatalf("read: end %d %v", end, err)
	}
	if vals, _ := fetchedValues(t, bs); len(vals) != 2 || vals[0] != "group-record" {
		t.Fatalf("read back %q", vals)
	}
	if bs, end, err := plog.Read(ctx, 3, 1<<20); err != nil || len(bs) != 0 || end != 3 {
		t.Fatalf("read at the end: %d bytes, end %d, %v", len(bs), end, err)
	}
	// A stale epoch writes nothing.
	if _, err := plog.Append(ctx, batch, 0); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("stale epoch: %v", err)
	}
	// A partition led elsewhere.
	plog2, err := h.PartitionLog(offsetsTopic, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plog2.Append(ctx, batch, 1); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("not leader: %v", err)
	}
	if _, _, err := plog2.Read(ctx, 0, 100); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("read as follower: %v", err)
	}
	if _, err := h.PartitionLog("missing", 0); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("missing partition: %v", err)
	}
	stop()
	e.meta.mustApply(t, &metadata.PartitionChangeRecord{TopicID: id, Partition: 0, Leader: &leader})
	if got := ev.take(); len(got) != 0 {
		t.Fatalf("events after stop: %+v", got)
	}
}

func TestCoordinatorAppendWaitsForCommit(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopicWith(transactionStateTopic, 1, 1, []int32{1, 2}, []int32{1, 2}, nil)
	plog, err := e.b.CoordinatorHost().PartitionLog(transactionStateTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := plog.Append(ctx, makeBatch(t, plainBatch(), "x"), 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("append without the follower: %v", err)
	}
	// The follower catches up while a second append waits.
	done := make(chan error, 1)
	go func() {
		_, err := plog.Append(context.Background(), makeBatch(t, plainBatch(), "y"), 0)
		done <- err
	}()
	part := e.partition(transactionStateTopic, 0)
	pollUntil(t, "the second append", func() bool { return part.Log().LogEndOffset() == 2 })
	follower := fetchReq(15, fetchPart{id: e.topicID(transactionStateTopic), offset: 2, maxBytes: 1 << 20, curEpoch: -1, lastEpoch: 0})
	follower.ReplicaState.ID = 2
	decodeFetch(t, e.call(follower))
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("append not committed after the follower caught up")
	}
	// Losing leadership while waiting fails the wait.
	go func() {
		_, err := plog.Append(context.Background(), makeBatch(t, plainBatch(), "z"), 0)
		done <- err
	}()
	pollUntil(t, "the third append", func() bool { return part.Log().LogEndOffset() == 3 })
	other := int32(2)
	e.meta.mustApply(t, &metadata.PartitionChangeRecord{TopicID: e.topicID(transactionStateTopic), Partition: 0, Leader: &other})
	select {
	case err := <-done:
		if !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatalf("after losing leadership: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("leadership loss did not end the wait")
	}
}
