package txn

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/storage"
)

// twoBrokers sets the env's image to a cluster where topic "a" is led by
// broker 2, whose MarkerService (over its own logs) serves at a loopback
// address, and the rest by the local broker 1. It returns broker 2's logs
// and server.
func twoBrokers(t *testing.T, e *env) (*dataLogs, *testServer) {
	t.Helper()
	remote := newDataLogs(t)
	srv := serveAPIs(t, NewMarkerService(remote, remote).APIs()...)
	e.meta.set(buildImage(t, map[int32]string{localNode: "127.0.0.1:1", 2: srv.addr()},
		topicSpec{TransactionStateTopic, testPartitions, localNode},
		topicSpec{OffsetsTopic, 3, localNode},
		topicSpec{"a", 3, 2},
		topicSpec{"b", 2, localNode},
	))
	return remote, srv
}

func TestMarkersToRemoteLeader(t *testing.T) {
	e := newEnv(t)
	remote, _ := twoBrokers(t, e)
	a0, a2, b1 := tp("a", 0), tp("a", 2), tp("b", 1)
	p := e.initProducer("t", time.Minute)
	p.mustAdd(a0, a2, b1)
	if err := remote.produce(a0, p.pid, p.epoch, 0, "remote"); err != nil {
		t.Fatal(err)
	}
	p.send(b1, "local")
	if err := p.addOffsets(3, "g"); err != nil {
		t.Fatal(err)
	}
	if err := p.end(3, true); err != nil {
		t.Fatal(err)
	}
	e.waitState("t", CompleteCommit, 0)
	for _, tp := range []storage.TopicPartition{a0, a2} {
		if ms := remote.markers(tp); len(ms) != 1 || !ms[0].commit || ms[0].pid != p.pid || ms[0].coordinatorEpoch != 1 {
			t.Errorf("remote %s markers: %+v", tp, ms)
		}
		if ms := e.data.markers(tp); len(ms) != 0 {
			t.Errorf("local %s has markers: %+v", tp, ms)
		}
	}
	if ms := e.data.markers(b1); len(ms) != 1 || !ms[0].commit {
		t.Errorf("local b-1 markers: %+v", ms)
	}
	if len(e.data.groupCalls()) != 1 {
		t.Errorf("group completions: %+v", e.data.groupCalls())
	}
	if got := remote.values(a0, true); !slices.Equal(got, []string{"remote"}) {
		t.Errorf("remote READ_COMMITTED: %v", got)
	}
}

func TestMarkersFollowLeaderMoves(t *testing.T) {
	e := newEnv(t)
	remote, srv := twoBrokers(t, e)
	a0, a1 := tp("a", 0), tp("a", 1)
	p := e.initProducer("t", time.Minute)
	p.mustAdd(a0, a1)
	// Broker 2 no longer leads a-0 (its metadata is ahead of ours), then
	// goes away entirely.
	remote.failWith(a0, kerr.NotLeaderForPartition)
	if err := p.end(3, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a-1 marker", func() bool { return len(remote.markers(a1)) == 1 })
	srv.close()
	e.clock.Advance(time.Second) // a retry that meets a closed connection
	if st := e.describe("t"); st.State != "PrepareAbort" {
		t.Fatalf("state %s with a-0 unmarked", st.State)
	}
	// The metadata catches up: this node leads "a" now.
	e.meta.set(buildImage(t, map[int32]string{localNode: "127.0.0.1:1"}, defaultTopics()...))
	e.waitState("t", CompleteAbort, time.Second)
	if ms := e.data.markers(a0); len(ms) != 1 || ms[0].commit {
		t.Errorf("a-0 markers on the new leader: %+v", ms)
	}
	if ms := remote.markers(a0); len(ms) != 0 {
		t.Errorf("a-0 markers on the old leader: %+v", ms)
	}
}

func TestMarkersForDeletedTopicsComplete(t *testing.T) {
	e := newEnv(t)
	a0, b0, b1 := tp("a", 0), tp("b", 0), tp("b", 1)
	p := e.initProducer("t", time.Minute)
	p.mustAdd(a0, b0, b1)
	// b is being deleted: its partitions answer UNKNOWN_TOPIC_OR_PARTITION
	// while the metadata still lists it; the markers are retried until the
	// topic is gone from the metadata.
	e.data.failWith(b0, kerr.UnknownTopicOrPartition)
	e.data.failWith(b1, kerr.UnknownTopicOrPartition)
	if err := p.end(3, true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a-0 marker", func() bool { return len(e.data.markers(a0)) == 1 })
	e.clock.Advance(time.Second)
	if st := e.describe("t"); st.State != "PrepareCommit" {
		t.Fatalf("completed while b still exists: %s", st.State)
	}
	e.meta.set(buildImage(t, map[int32]string{localNode: "127.0.0.1:1"},
		topicSpec{TransactionStateTopic, testPartitions, localNode}, topicSpec{OffsetsTopic, 3, localNode}, topicSpec{"a", 3, localNode}))
	e.waitState("t", CompleteCommit, time.Second)
	if ms := e.data.markers(a0); len(ms) != 1 {
		t.Errorf("a-0 markers: %+v", ms)
	}

	// A transaction whose topic is already gone needs no marker there.
	p.mustAdd(a0)
	e.meta.set(buildImage(t, map[int32]string{localNode: "127.0.0.1:1"},
		topicSpec{TransactionStateTopic, testPartitions, localNode}, topicSpec{OffsetsTopic, 3, localNode}))
	if err := p.end(3, true); err != nil {
		t.Fatal(err)
	}
	e.waitState("t", CompleteCommit, 0)
	if ms := e.data.markers(a0); len(ms) != 1 {
		t.Errorf("marker written to a deleted topic: %+v", ms)
	}
}

func TestStaleMarkersAreAbandoned(t *testing.T) {
	e := newEnv(t)
	a0 := tp("a", 0)
	p := e.initProducer("t", time.Minute)
	p.mustAdd(a0)
	// The partition saw a newer coordinator: this one is a zombie for the
	// transaction and must not complete it.
	e.data.failWith(a0, kerr.TransactionCoordinatorFenced)
	if err := p.end(3, true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the marker refused", func() bool { return e.data.refused(a0) > 0 })
	for range 5 {
		e.clock.Advance(time.Second)
	}
	if st := e.describe("t"); st.State != "PrepareCommit" {
		t.Errorf("a fenced coordinator completed the transaction: %s", st.State)
	}
	if ms := e.data.markers(a0); len(ms) != 0 {
		t.Errorf("markers: %+v", ms)
	}
	// It gave up rather than retrying: nothing is written even once the
	// partition would take the marker. The next leader of the coordinator
	// partition completes the transaction after loading it.
	e.data.failWith(a0, nil)
	for range 10 {
		e.clock.Advance(time.Second)
	}
	if ms := e.data.markers(a0); len(ms) != 0 {
		t.Errorf("the abandoned job retried: %+v", ms)
	}
	e.restart()
	e.waitState("t", CompleteCommit, 0)
	if ms := e.data.markers(a0); len(ms) != 1 {
		t.Errorf("markers after the reload: %+v, want only the new coordinator's", ms)
	}
}
