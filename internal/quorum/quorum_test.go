package quorum

import (
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/metadata"
)

// openOwnListener opens a single voter that listens on its own address.
// The address must be known before Open (it is the voter's address), so a
// free port is found first; another process may take it in between, so a
// failed listen is retried.
func openOwnListener(t *testing.T, dir string, tune func(*Config)) *Quorum {
	t.Helper()
	log := newTestLogger(t)
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		addr := freeAddr(t)
		cfg := Config{NodeID: 1, Dir: dir, Voters: []Voter{{ID: 1, Addr: addr}}, ListenAddr: addr, Logger: log}
		testTiming(&cfg)
		if tune != nil {
			tune(&cfg)
		}
		q, err := Open(cfg)
		if err == nil {
			return q
		}
		lastErr = err
	}
	t.Fatalf("open: %v", lastErr)
	return nil
}

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitLeading(t *testing.T, q *Quorum) {
	t.Helper()
	waitFor(t, 20*time.Second, "the single voter to lead", q.IsLeader)
}

func TestSingleVoterProposesAndApplies(t *testing.T) {
	q := openOwnListener(t, t.TempDir(), nil)
	defer q.Close()
	waitLeading(t, q)
	if id, addr, ok := q.Leader(); !ok || id != 1 || addr != q.Addr() {
		t.Fatalf("Leader() = %d %q %v", id, addr, ok)
	}
	ctx := ctxT(t)
	off, err := q.Propose(ctx, topicRecords("orders", 1))
	if err != nil {
		t.Fatal(err)
	}
	img := q.Image()
	if img.Offset() != off || q.AppliedOffset() < off {
		t.Fatalf("image offset %d, applied %d, proposal at %d", img.Offset(), q.AppliedOffset(), off)
	}
	tp, ok := img.Topic("orders")
	if !ok || len(tp.Partitions) != 1 {
		t.Fatalf("topic not applied: %+v", tp)
	}

	// An invalid entry is rejected as a whole: the first record would be
	// fine, the second is not.
	_, err = q.Propose(ctx, []metadata.Record{
		&metadata.TopicRecord{Name: "other", ID: metadata.RandomUuid()},
		&metadata.RemoveTopicRecord{ID: metadata.RandomUuid()},
	})
	var re *metadata.ReplayError
	if !errors.As(err, &re) || !errors.Is(err, kerr.UnknownTopicID) {
		t.Fatalf("invalid proposal: %v", err)
	}
	if _, ok := q.Image().Topic("other"); ok || q.Image() != img {
		t.Fatal("a rejected entry changed the image")
	}
	if _, err := q.Propose(ctx, nil); err == nil {
		t.Fatal("empty proposal accepted")
	}
	// The rejected entry still advanced the applied offset.
	if q.AppliedOffset() <= off {
		t.Fatalf("applied offset %d did not move past %d", q.AppliedOffset(), off)
	}
	if err := q.WaitForOffset(ctx, q.AppliedOffset()); err != nil {
		t.Fatal(err)
	}
	if err := q.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	servers, err := q.Servers()
	if err != nil || !slices.Equal(servers, []Server{{ID: 1, Addr: q.Addr(), Voter: true}}) {
		t.Fatalf("Servers() = %v, %v", servers, err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Propose(ctx, topicRecords("late", 1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("propose after close: %v", err)
	}
	if err := q.WaitForOffset(ctx, off+100); !errors.Is(err, ErrClosed) {
		t.Fatalf("wait after close: %v", err)
	}
}

func TestThreeVotersSurviveLeaderLoss(t *testing.T) {
	c := newCluster(t, 3, 0)
	subs := map[int32]<-chan struct{}{}
	for id := int32(1); id <= 3; id++ {
		subs[id] = c.start(id).LeaderChanges()
	}
	var last uint64
	for _, name := range []string{"t1", "t2", "t3", "t4", "t5"} {
		last = c.proposeTopic(name)
	}
	for _, n := range c.nodes {
		if err := n.q.WaitForOffset(ctxT(t), last); err != nil {
			t.Fatalf("node %d: %v", n.id, err)
		}
	}
	old := c.waitLeader()
	want := imageBytes(old.q.Image())
	for _, n := range c.nodes {
		if got := imageBytes(n.q.Image()); got != want {
			t.Fatalf("node %d's image differs from the leader's", n.id)
		}
	}

	// A follower refuses writes and names the leader.
	var follower *testNode
	for _, n := range c.nodes {
		if n != old {
			follower = n
			break
		}
	}
	_, err := follower.q.Propose(ctxT(t), topicRecords("x", 1))
	var nl *NotLeaderError
	if !errors.As(err, &nl) || nl.LeaderID != old.id || nl.LeaderAddr != old.addr() || !errors.Is(err, kerr.NotController) {
		t.Fatalf("propose on a follower: %v", err)
	}

	// Stop the leader: another node takes over with every committed record.
	for id, ch := range subs {
		if id != old.id {
			drain(ch)
		}
	}
	c.stop(old.id)
	leader := c.waitLeader()
	if leader == old {
		t.Fatal("the stopped node still leads")
	}
	select {
	case <-subs[leader.id]:
	default:
		t.Fatal("the new leader got no leadership change signal")
	}
	if err := leader.q.Barrier(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"t1", "t2", "t3", "t4", "t5"} {
		if _, ok := leader.q.Image().Topic(name); !ok {
			t.Fatalf("committed topic %s lost in failover", name)
		}
	}
	last = c.proposeTopic("t6")
	last = max(last, c.proposeTopic("t7"))

	// The old leader comes back as a follower and catches up.
	q := c.start(old.id)
	if err := q.WaitForOffset(ctxT(t), last); err != nil {
		t.Fatal(err)
	}
	if _, ok := q.Image().Topic("t7"); !ok {
		t.Fatal("restarted node did not catch up")
	}
	c.waitLeader()
	for _, n := range c.nodes {
		if n.kafkaConns.Load() != 0 {
			t.Fatalf("node %d saw raft connections without the preamble", n.id)
		}
	}
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func TestNonVoterReplicates(t *testing.T) {
	c := newCluster(t, 1, 1)
	leaderQ := c.start(1)
	c.waitLeader()
	nv := c.start(2)
	if err := leaderQ.AddNonVoter(2, c.nodes[2].addr()); err != nil {
		t.Fatal(err)
	}
	off := c.proposeTopic("replicated")
	if err := nv.WaitForOffset(ctxT(t), off); err != nil {
		t.Fatal(err)
	}
	if imageBytes(nv.Image()) != imageBytes(leaderQ.Image()) {
		t.Fatal("the non-voter's image differs")
	}
	servers, err := leaderQ.Servers()
	if err != nil {
		t.Fatal(err)
	}
	want := []Server{{ID: 1, Addr: c.nodes[1].addr(), Voter: true}, {ID: 2, Addr: c.nodes[2].addr(), Voter: false}}
	if !slices.Equal(servers, want) {
		t.Fatalf("Servers() = %v, want %v", servers, want)
	}
	waitFor(t, 10*time.Second, "the non-voter to know the leader", func() bool {
		id, _, ok := nv.Leader()
		return ok && id == 1
	})
	var nl *NotLeaderError
	if _, err := nv.Propose(ctxT(t), topicRecords("x", 2)); !errors.As(err, &nl) || nl.LeaderID != 1 {
		t.Fatalf("propose on the non-voter: %v", err)
	}
	if nv.IsLeader() {
		t.Fatal("a non-voter leads")
	}

	// The non-voter restarts from its own state and keeps up.
	c.stop(2)
	off = c.proposeTopic("while-down")
	nv = c.start(2)
	if err := nv.WaitForOffset(ctxT(t), off); err != nil {
		t.Fatal(err)
	}
	if _, ok := nv.Image().Topic("while-down"); !ok {
		t.Fatal("restarted non-voter missed a record")
	}
	if err := leaderQ.RemoveServer(2); err != nil {
		t.Fatal(err)
	}
	if servers, _ := leaderQ.Servers(); len(servers) != 1 {
		t.Fatalf("after RemoveServer: %v", servers)
	}
}

func TestRestartRestoresImageFromLog(t *testing.T) {
	dir := t.TempDir()
	q := openOwnListener(t, dir, nil)
	waitLeading(t, q)
	var off uint64
	for _, name := range []string{"a", "b", "c"} {
		var err error
		if off, err = q.Propose(ctxT(t), topicRecords(name, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Propose(ctxT(t), []metadata.Record{metadata.SetConfig(metadata.ConfigResource{Type: metadata.ResourceMirror, Name: "m"}, "k", "v")}); err != nil {
		t.Fatal(err)
	}
	want := imageBytes(q.Image())
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	q = openOwnListener(t, dir, nil)
	defer q.Close()
	if err := q.WaitForOffset(ctxT(t), off+1); err != nil {
		t.Fatal(err)
	}
	if got := imageBytes(q.Image()); got != want {
		t.Fatal("image after restart differs")
	}
}

func TestSnapshotTruncatesLogAndRestores(t *testing.T) {
	dir := t.TempDir()
	noTrailing := func(cfg *Config) { cfg.NoTrailingLogs = true }
	q := openOwnListener(t, dir, noTrailing)
	waitLeading(t, q)
	for _, name := range []string{"a", "b", "c", "d"} {
		if _, err := q.Propose(ctxT(t), topicRecords(name, 1)); err != nil {
			t.Fatal(err)
		}
	}
	// Deleting a topic leaves records that the snapshot need not carry.
	b, _ := q.Image().Topic("b")
	if _, err := q.Propose(ctxT(t), []metadata.Record{&metadata.RemoveTopicRecord{ID: b.ID}}); err != nil {
		t.Fatal(err)
	}
	want := imageBytes(q.Image())
	if err := q.Snapshot(); err != nil {
		t.Fatal(err)
	}
	first, err := q.store.FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	// The bootstrap configuration is entry 1; with no trailing logs the
	// snapshot removes everything up to itself (an empty store reports 0).
	if first == 1 {
		t.Fatal("log not truncated by the snapshot")
	}
	if err := q.Snapshot(); err != nil {
		t.Fatalf("a second snapshot with nothing new: %v", err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}

	q = openOwnListener(t, dir, noTrailing)
	defer q.Close()
	// The snapshot is restored before Open returns, ahead of any log replay.
	if got := imageBytes(q.Image()); got != want {
		t.Fatal("image restored from the snapshot differs")
	}
	pub := newRecorder("late")
	q.AddPublisher(pub)
	first0 := pub.next(t)
	if first0.img != q.Image() || len(first0.delta.CreatedTopics()) != 3 {
		t.Fatalf("publisher's first update after restore: %d topics", len(first0.delta.CreatedTopics()))
	}
	waitLeading(t, q)
	if _, err := q.Propose(ctxT(t), topicRecords("e", 1)); err != nil {
		t.Fatal(err)
	}
	if q.Image().NumTopics() != 4 {
		t.Fatalf("%d topics after restore and a new proposal", q.Image().NumTopics())
	}
}
