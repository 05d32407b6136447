package testcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/metadata"
)

// replicatedCluster starts three combined nodes with timings short enough
// for tests: a broker is fenced 3 s after its last heartbeat, a follower
// leaves the ISR after 3 s behind, fetchers back off 100 ms.
func replicatedCluster(t *testing.T, opts ...Option) *Cluster {
	t.Helper()
	base := []Option{
		Nodes(3),
		Config("broker.heartbeat.interval.ms", "250"),
		Config("broker.session.timeout.ms", "3000"),
		Config("replica.lag.time.max.ms", "3000"),
		Config("replica.fetch.wait.max.ms", "200"),
		Config("replica.fetch.backoff.ms", "100"),
		Config("default.replication.factor", "3"),
		Config("min.insync.replicas", "2"),
	}
	return Start(t, append(base, opts...)...)
}

// createReplicated creates a one-partition topic with three replicas and
// waits until every node knows it with all replicas in sync.
func createReplicated(t *testing.T, c *Cluster, topic string, configs map[string]*string) metadata.PartitionState {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	resp, err := c.Admin(t).CreateTopic(ctx, 1, 3, configs, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", topic, err, resp.Err)
	}
	return c.WaitPartition(t, topic, 0, "three replicas in sync", func(st metadata.PartitionState) bool {
		return st.Leader >= 0 && len(st.ISR) == 3
	})
}

// ackLog records the values whose produce was acknowledged, in order.
type ackLog struct {
	mu    sync.Mutex
	acked []string
}

func (a *ackLog) add(v string) {
	a.mu.Lock()
	a.acked = append(a.acked, v)
	a.mu.Unlock()
}

func (a *ackLog) snapshot() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.acked)
}

func (a *ackLog) waitFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for len(a.snapshot()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d records acknowledged in %v", len(a.snapshot()), n, WaitTimeout)
		}
		time.Sleep(5 * time.Millisecond) // polling the producer's progress
	}
}

// produceUntil runs an idempotent acks=all producer of values "v-<n>" to
// topic until stop is closed; acknowledged values go to the log. The
// returned channel closes when the producer has stopped.
func produceUntil(t *testing.T, c *Cluster, topic string, stop <-chan struct{}, acks *ackLog) <-chan struct{} {
	t.Helper()
	cl := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProduceRequestTimeout(10*time.Second), kgo.RetryTimeout(time.Minute), kgo.RecordDeliveryTimeout(time.Minute),
		kgo.MetadataMinAge(50*time.Millisecond))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := "v-" + strconv.Itoa(i)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr()
			cancel()
			if err != nil {
				t.Errorf("produce %s: %v", v, err)
				return
			}
			acks.add(v)
		}
	}()
	return done
}

// consumeAll reads topic-0 from the start up to its high watermark.
func consumeAll(t *testing.T, c *Cluster, topic string) []string {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	end, err := c.Admin(t).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := end.Lookup(topic, 0)
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	cl := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var out []string
	var last int64 = -1
	for last+1 < o.Offset {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed up to %d of %d", last, o.Offset)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("consume: %v", err) })
		for _, r := range fs.Records() {
			out = append(out, string(r.Value))
			last = r.Offset
		}
	}
	return out
}

// checkAcked verifies that every acknowledged value is in the log exactly
// once, in acknowledgement order, and that no value appears twice.
func checkAcked(t *testing.T, acked, logged []string) {
	t.Helper()
	seen := map[string]int{}
	for i, v := range logged {
		if j, dup := seen[v]; dup {
			t.Fatalf("%s is in the log twice, at %d and %d", v, j, i)
		}
		seen[v] = i
	}
	prev := -1
	for _, v := range acked {
		i, ok := seen[v]
		if !ok {
			t.Fatalf("acknowledged %s is not in the log (%d acknowledged, %d logged)", v, len(acked), len(logged))
		}
		if i <= prev {
			t.Fatalf("acknowledged %s is out of order in the log", v)
		}
		prev = i
	}
}

// TestReplicatedProduceSurvivesLeaderLoss: an idempotent acks=all producer
// keeps going while the partition's leader stops cleanly, and then while
// the new leader is killed (no controlled shutdown: the controller fences
// it when its session expires); both old leaders come back as followers.
// No acknowledged record is lost or duplicated, and the three replicas end
// byte-identical.
func TestReplicatedProduceSurvivesLeaderLoss(t *testing.T) {
	c := replicatedCluster(t)
	first := createReplicated(t, c, "r", nil)
	acks := &ackLog{}
	stop := make(chan struct{})
	done := produceUntil(t, c, "r", stop, acks)
	defer func() { close(stop); <-done }()
	acks.waitFor(t, 100)

	// A clean stop: the controlled shutdown moves leadership first.
	c.Node(first.Leader).Stop()
	second := c.WaitPartition(t, "r", 0, "a new leader", func(st metadata.PartitionState) bool {
		return st.Leader >= 0 && st.Leader != first.Leader
	})
	if second.LeaderEpoch <= first.LeaderEpoch {
		t.Fatalf("leader epoch %d after %d", second.LeaderEpoch, first.LeaderEpoch)
	}
	n := len(acks.snapshot())
	acks.waitFor(t, n+100)
	c.Node(first.Leader).Start()
	c.WaitPartition(t, "r", 0, "the old leader back in the ISR", func(st metadata.PartitionState) bool { return len(st.ISR) == 3 })

	// A crash: the leader stays leader until its session expires.
	n = len(acks.snapshot())
	c.Node(second.Leader).Kill()
	third := c.WaitPartition(t, "r", 0, "a leader after the crash", func(st metadata.PartitionState) bool {
		return st.Leader >= 0 && st.Leader != second.Leader
	})
	acks.waitFor(t, n+100)
	c.Node(second.Leader).Start()
	c.WaitPartition(t, "r", 0, "all three in the ISR", func(st metadata.PartitionState) bool { return len(st.ISR) == 3 })
	acks.waitFor(t, len(acks.snapshot())+50)
	close(stop)
	<-done
	stop = make(chan struct{}) // for the deferred close

	c.WaitReplicasIdentical(t, "r", 0)
	checkAcked(t, acks.snapshot(), consumeAll(t, c, "r"))
	t.Logf("leaders %d -> %d -> %d, %d records acknowledged", first.Leader, second.Leader, third.Leader, len(acks.snapshot()))
}

// TestUncleanElectionAndDivergentTail: the leader keeps accepting acks=1
// writes after both followers stopped, then dies. With unclean elections
// off the partition stays offline rather than lose those writes; turned
// on, a follower leads (losing them, as documented), and the old leader,
// back, truncates its unreplicated tail and replicates the new leader's
// log byte for byte.
func TestUncleanElectionAndDivergentTail(t *testing.T) {
	c := replicatedCluster(t)
	one := "1"
	st := createReplicated(t, c, "u", map[string]*string{"min.insync.replicas": &one})
	leader := st.Leader
	var followers []*Node
	for _, id := range st.Replicas {
		if id != leader {
			followers = append(followers, c.Node(id))
		}
	}
	ctx := ctxFor(t, 3*time.Minute)
	produce := func(cl *kgo.Client, vs ...string) {
		t.Helper()
		for _, v := range vs {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "u", Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
		}
	}
	all := c.Client(t, kgo.RequiredAcks(kgo.AllISRAcks()))
	produce(all, "a", "b", "c")
	replicated := c.WaitReplicasIdentical(t, "u", 0)

	for _, f := range followers {
		f.Stop()
	}
	leaderOnly := c.Client(t, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	produce(leaderOnly, "lost-1", "lost-2")
	if _, withTail := c.Node(leader).ReplicaLog(t, "u", 0); len(withTail) <= len(replicated) {
		t.Fatalf("the leader did not write the acks=1 records (%d bytes, %d replicated)", len(withTail), len(replicated))
	}
	c.Node(leader).Kill()

	// The followers come back (a quorum again); the leader's session
	// expires and the partition goes offline: nobody in the ISR is left.
	c.StartAll(followers...)
	off := c.WaitPartition(t, "u", 0, "the partition offline", func(st metadata.PartitionState) bool { return st.Leader == metadata.NoLeader })
	if !slices.Equal(off.ISR, []int32{leader}) {
		t.Fatalf("offline partition's ISR %v, want the dead leader alone", off.ISR)
	}

	// Unclean election on: a follower leads, recovers and takes the other
	// follower into the ISR.
	set := "true"
	if _, err := c.Admin(t).AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "unclean.leader.election.enable", Value: &set}}, "u"); err != nil {
		t.Fatal(err)
	}
	back := c.WaitPartition(t, "u", 0, "an unclean leader", func(st metadata.PartitionState) bool {
		return st.Leader >= 0 && st.Leader != leader && st.LeaderRecoveryState == metadata.Recovered && len(st.ISR) == 2
	})
	if back.LeaderEpoch <= off.LeaderEpoch {
		t.Fatalf("leader epoch %d after %d", back.LeaderEpoch, off.LeaderEpoch)
	}
	produce(all, "d", "e")

	// The old leader returns: it truncates "lost-1" and "lost-2".
	c.Node(leader).Start()
	c.WaitReplicasIdentical(t, "u", 0)
	got := consumeAll(t, c, "u")
	if !slices.Equal(got, []string{"a", "b", "c", "d", "e"}) {
		t.Fatalf("log after the unclean election: %v", got)
	}
}

// TestWipedFollowerCatchesUp: a follower whose disk was replaced starts
// with an empty log below the leader's log start (moved by DeleteRecords
// to the middle of a batch); it restarts its log at the leader's log
// start and catches up to a byte-identical copy.
func TestWipedFollowerCatchesUp(t *testing.T) {
	c := replicatedCluster(t)
	st := createReplicated(t, c, "w", nil)
	ctx := ctxFor(t, 2*time.Minute)
	cl := c.Client(t, kgo.DefaultProduceTopic("w"))
	for i := 0; i < 10; i++ {
		// Five records per batch.
		rs := make([]*kgo.Record, 5)
		for j := range rs {
			rs[j] = &kgo.Record{Value: []byte(fmt.Sprintf("w-%d-%d", i, j))}
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitReplicasIdentical(t, "w", 0)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "w", Partition: 0, At: 22})
	dr, err := c.Admin(t).DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := dr.Lookup("w", 0); r.Err != nil || r.LowWatermark != 22 {
		t.Fatalf("delete records: %+v", r)
	}
	var follower *Node
	for _, id := range st.Replicas {
		if id != st.Leader {
			follower = c.Node(id)
			break
		}
	}
	follower.Stop()
	follower.WipePartition(t, "w", 0)
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	follower.Start()
	c.WaitReplicasIdentical(t, "w", 0)
	if s, _ := follower.ReplicaLog(t, "w", 0); s != 22 {
		t.Fatalf("wiped follower's log start %d, want the leader's 22", s)
	}
}

// TestPreferredLeaderElection: after its preferred leader stopped and came
// back, a partition is led by another replica until ElectLeaders moves it
// home; a second election is not needed.
func TestPreferredLeaderElection(t *testing.T) {
	c := replicatedCluster(t)
	st := createReplicated(t, c, "p", nil)
	preferred := st.Replicas[0]
	if st.Leader != preferred {
		t.Fatalf("new partition led by %d, not its preferred replica %d", st.Leader, preferred)
	}
	c.Node(preferred).Stop()
	moved := c.WaitPartition(t, "p", 0, "leadership moved", func(st metadata.PartitionState) bool { return st.Leader >= 0 && st.Leader != preferred })
	c.Node(preferred).Start()
	c.WaitPartition(t, "p", 0, "the preferred replica back in the ISR", func(st metadata.PartitionState) bool { return len(st.ISR) == 3 })
	ctx := ctxFor(t, time.Minute)
	set := kadm.TopicsSet{}
	set.Add("p", 0)
	res, err := c.Admin(t).ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		t.Fatal(err)
	}
	if r := res["p"][0]; r.Err != nil {
		t.Fatalf("preferred election: %v %s", r.Err, r.ErrMessage)
	}
	home := c.WaitPartition(t, "p", 0, "the preferred leader", func(st metadata.PartitionState) bool { return st.Leader == preferred })
	if home.LeaderEpoch <= moved.LeaderEpoch {
		t.Fatalf("leader epoch %d after %d", home.LeaderEpoch, moved.LeaderEpoch)
	}
	res, err = c.Admin(t).ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
	if err != nil {
		t.Fatal(err)
	}
	if r := res["p"][0]; !errors.Is(r.Err, kerr.ElectionNotNeeded) {
		t.Fatalf("second election: %v", r.Err)
	}
	// Clients follow the move.
	roundTrip(t, c, "p", "after the election")
	c.WaitReplicasIdentical(t, "p", 0)
}

// TestInternalTopicsSurviveABrokerLoss: with Kafka's internal topic
// settings (replication factor 3), __consumer_offsets gets three replicas
// on a three-node cluster, and a group's offsets stay readable and
// writable when its coordinator's node stops.
func TestInternalTopicsSurviveABrokerLoss(t *testing.T) {
	c := replicatedCluster(t,
		Config("offsets.topic.replication.factor", "3"),
		Config("offsets.topic.num.partitions", "3"),
		Config("transaction.state.log.replication.factor", "3"),
		Config("transaction.state.log.min.isr", "2"))
	createReplicated(t, c, "g", nil)
	ctx := ctxFor(t, 2*time.Minute)
	// admin is a client of the running nodes; requests retry until the
	// group's coordinator has moved and loaded the group.
	admin := func() *kadm.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.BootstrapAddrs()...))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return kadm.NewClient(cl)
	}
	retry := func(what string, f func(adm *kadm.Client) error) {
		t.Helper()
		adm := admin()
		for {
			err := f(adm)
			if err == nil {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(20 * time.Millisecond) // polling until the coordinator answers
		}
	}
	commit := func(at int64) {
		t.Helper()
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "g", Partition: 0, At: at, LeaderEpoch: -1})
		retry(fmt.Sprintf("commit %d", at), func(adm *kadm.Client) error {
			resp, err := adm.CommitOffsets(ctx, "group", offs)
			if err == nil {
				err = resp.Error()
			}
			return err
		})
	}
	fetched := func() int64 {
		t.Helper()
		var at int64
		retry("fetch offsets", func(adm *kadm.Client) error {
			resp, err := adm.FetchOffsets(ctx, "group")
			if err == nil {
				err = resp.Error()
			}
			o, _ := resp.Lookup("g", 0)
			at = o.At
			return err
		})
		return at
	}
	commit(0)
	topics, err := c.Admin(t).ListTopicsWithInternal(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range topics["__consumer_offsets"].Partitions {
		if len(p.Replicas) != 3 {
			t.Fatalf("__consumer_offsets-%d has replicas %v", p.Partition, p.Replicas)
		}
	}
	for p := int32(0); p < 3; p++ {
		c.WaitPartition(t, "__consumer_offsets", p, "three replicas in sync", func(st metadata.PartitionState) bool { return len(st.ISR) == 3 })
	}
	commit(7)
	// The group's coordinator (the leader of its __consumer_offsets
	// partition) stops: another replica takes over with the offsets.
	coord := c.Admin(t).FindGroupCoordinators(ctx, "group")["group"]
	if coord.Err != nil {
		t.Fatal(coord.Err)
	}
	c.Node(coord.NodeID).Stop()
	if at := fetched(); at != 7 {
		t.Fatalf("committed offset %d after a node stopped, want 7", at)
	}
	commit(9)
	if at := fetched(); at != 9 {
		t.Fatalf("committed offset %d, want 9", at)
	}
}
