package testcluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// replicasOf returns a partition's replicas and ISR as the cluster's
// metadata reports them.
func replicasOf(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, p int32) (replicas, isr []int32, leader int32) {
	t.Helper()
	// A broker other than the one that created the topic may learn of it
	// a moment later.
	var pd kadm.PartitionDetail
	pollFor(ctx, t, fmt.Sprintf("%s-%d in the metadata", topic, p), func() (bool, string) {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		var ok bool
		pd, ok = td[topic].Partitions[p]
		return ok && pd.Leader >= 0, fmt.Sprintf("%+v", td[topic])
	})
	return pd.Replicas, pd.ISR, pd.Leader
}

// pollFor polls cond every 50 ms until it holds or ctx ends.
func pollFor(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s: %s", what, state)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestPartitionReassignment moves a partition with data from the broker
// that holds it to the two others with AlterPartitionReassignments, as
// kafka-reassign-partitions.sh does: the new replicas catch up, the
// reassignment completes by itself, leadership moves, the old replica
// deletes its log, and every record is still there. A reassignment to a
// stopped broker stays in progress (ListPartitionReassignments shows it)
// until it is cancelled, which returns the partition to its replica.
func TestPartitionReassignment(t *testing.T) {
	c := Start(t, Nodes(3))
	ctx := ctxFor(t, 2*time.Minute)
	// franz-go answers metadata requests from its cache for up to the
	// minimum age; this test reads replicas right after changing them.
	adm := kadm.NewClient(c.Client(t, kgo.MetadataMinAge(10*time.Millisecond)))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "moving"); err != nil {
		t.Fatal(err)
	}
	replicas, _, _ := replicasOf(ctx, t, adm, "moving", 0)
	owner := replicas[0]
	var targets []int32
	for _, n := range c.Nodes() {
		if n.ID != owner {
			targets = append(targets, n.ID)
		}
	}
	p := c.Client(t, kgo.DefaultProduceTopic("moving"))
	const n = 300
	for i := range n {
		p.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%d", i)}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	ownerLog := filepath.Join(c.Node(owner).Dir, "data", "moving-0")
	if _, err := os.Stat(ownerLog); err != nil {
		t.Fatalf("the owner's log: %v", err)
	}

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("moving", 0, targets)
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("reassign: %v", err)
	}
	pollFor(ctx, t, "the reassignment to complete", func() (bool, string) {
		list, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"moving": {0: {}}})
		if err != nil {
			return false, err.Error()
		}
		r, isr, leader := replicasOf(ctx, t, adm, "moving", 0)
		state := fmt.Sprintf("listed %+v, replicas %v isr %v leader %d", list.Sorted(), r, isr, leader)
		return len(list.Sorted()) == 0 && slices.Equal(r, targets) && slices.Contains(targets, leader), state
	})
	pollFor(ctx, t, "the old replica to delete its log", func() (bool, string) {
		_, err := os.Stat(ownerLog)
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	// Every record is served by the new replicas, and new ones are
	// acknowledged by both (acks=all).
	if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cons := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"moving": {0: kgo.NewOffset().AtStart()}}))
	var got []string
	for len(got) < n+1 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records after the move", len(got), n+1)
		}
		for _, r := range fs.Records() {
			got = append(got, string(r.Value))
		}
	}
	for i := range n {
		if got[i] != fmt.Sprintf("v%d", i) {
			t.Fatalf("record %d is %q after the move", i, got[i])
		}
	}
	if got[n] != "after" {
		t.Fatalf("record %d is %q", n, got[n])
	}

	// A reassignment that cannot complete, then cancelled. "control",
	// moved between live brokers after it, completes: the controller had its
	// chances to complete the first.
	for _, topic := range []string{"staying", "control"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	replicas, _, _ = replicasOf(ctx, t, adm, "staying", 0)
	home := replicas[0]
	down := home%3 + 1
	control, _, _ := replicasOf(ctx, t, adm, "control", 0)
	if control[0] == down {
		t.Fatalf("control-0 is on broker %d, which the test stops", down)
	}
	controlTo := []int32{control[0]}
	for id := int32(1); id <= 3; id++ {
		if id != down && id != control[0] {
			controlTo = append(controlTo, id)
			break
		}
	}
	c.Node(down).Stop()
	req = nil
	req.Assign("staying", 0, []int32{home, down})
	if resp, err := adm.AlterPartitionAssignments(ctx, req); err != nil || resp.Error() != nil {
		t.Fatalf("reassign to a stopped broker: %v %v", err, resp.Error())
	}
	listed := func() []kadm.ListPartitionReassignmentsResponse {
		t.Helper()
		list, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"staying": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		return list.Sorted()
	}
	inProgress := func(l []kadm.ListPartitionReassignmentsResponse) bool {
		return len(l) == 1 && slices.Equal(l[0].AddingReplicas, []int32{down}) && slices.Equal(l[0].Replicas, []int32{home, down})
	}
	if l := listed(); !inProgress(l) {
		t.Fatalf("listed: %+v", l)
	}
	req = nil
	req.Assign("control", 0, controlTo)
	if resp, err := adm.AlterPartitionAssignments(ctx, req); err != nil || resp.Error() != nil {
		t.Fatalf("reassign control-0 between live brokers: %v %v", err, resp.Error())
	}
	pollFor(ctx, t, "control-0's reassignment to complete", func() (bool, string) {
		list, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"control": {0: {}}})
		if err != nil {
			return false, err.Error()
		}
		r, isr, _ := replicasOf(ctx, t, adm, "control", 0)
		return len(list.Sorted()) == 0 && slices.Equal(r, controlTo) && len(isr) == 2, fmt.Sprintf("listed %+v, replicas %v, isr %v", list.Sorted(), r, isr)
	})
	if l := listed(); !inProgress(l) {
		t.Fatalf("listed while the target is down: %+v", l)
	}
	req = nil
	req.CancelAssign("staying", 0)
	if resp, err := adm.AlterPartitionAssignments(ctx, req); err != nil || resp.Error() != nil {
		t.Fatalf("cancel: %v %v", err, resp.Error())
	}
	pollFor(ctx, t, "the partition back on its replica", func() (bool, string) {
		r, _, _ := replicasOf(ctx, t, adm, "staying", 0)
		return slices.Equal(r, []int32{home}), fmt.Sprint(r)
	})
	resp, err = adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Error(); err != kerr.NoReassignmentInProgress {
		t.Fatalf("cancelling again: %v", err)
	}
	c.Node(down).Start()
}

// produceIncompressible writes n records of 1 KiB of random bytes to
// partition 0 of topic, uncompressed in batches of 16 KiB (so that they
// take several replica fetches), and returns the values.
func produceIncompressible(ctx context.Context, t *testing.T, c *Cluster, topic string, n int) [][]byte {
	t.Helper()
	p := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(16<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	rng := rand.New(rand.NewPCG(uint64(n), uint64(len(topic))))
	var sent [][]byte
	for range n {
		value := make([]byte, 1024)
		for i := range value {
			value[i] = byte(rng.Uint32())
		}
		sent = append(sent, value)
		p.Produce(ctx, &kgo.Record{Value: value}, nil)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return sent
}

// segmentBytes is the size of the segment files of a partition's log on
// node n (0 when it has none).
func segmentBytes(n *Node, dir string) int64 {
	var total int64
	entries, _ := os.ReadDir(filepath.Join(n.Dir, "data", dir))
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".log" {
			if fi, err := e.Info(); err == nil {
				total += fi.Size()
			}
		}
	}
	return total
}

// TestThrottledReassignment moves a partition holding more than one fetch
// of data with kafka-reassign-partitions.sh's throttle set (the topic's
// leader.replication.throttled.replicas and a cluster-wide
// leader.replication.throttled.rate of 1 byte a second): the new replica
// gets its first fetch and is then held back, so the move stays in
// progress; lifting the rate lets it complete with every record.
func TestThrottledReassignment(t *testing.T) {
	c := Start(t, Nodes(3), Config("replica.fetch.max.bytes", "65536"))
	ctx := ctxFor(t, 2*time.Minute)
	adm := kadm.NewClient(c.Client(t, kgo.MetadataMinAge(10*time.Millisecond)))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "throttled"); err != nil {
		t.Fatal(err)
	}
	replicas, _, _ := replicasOf(ctx, t, adm, "throttled", 0)
	owner := replicas[0]
	added := owner%3 + 1
	const n = 400 // 400 KiB: several fetches of 64 KiB
	produceIncompressible(ctx, t, c, "throttled", n)
	alter := func(rate *string) {
		t.Helper()
		resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "leader.replication.throttled.rate", Value: rate}})
		if rate == nil {
			resp, err = adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "leader.replication.throttled.rate"}})
		}
		if err == nil {
			for _, r := range resp {
				if r.Err != nil {
					err = r.Err
				}
			}
		}
		if err != nil {
			t.Fatalf("leader.replication.throttled.rate: %v", err)
		}
	}
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas",
		Value: kadm.StringPtr(fmt.Sprintf("0:%d", owner))}}, "throttled"); err != nil {
		t.Fatal(err)
	}
	alter(kadm.StringPtr("1"))

	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("throttled", 0, []int32{owner, added})
	if resp, err := adm.AlterPartitionAssignments(ctx, req); err != nil || resp.Error() != nil {
		t.Fatalf("reassign: %v %v", err, resp.Error())
	}
	// The new replica gets its first fetch's worth, then nothing.
	logSize := func() int64 { return segmentBytes(c.Node(added), "throttled-0") }
	pollFor(ctx, t, "the new replica's first fetch", func() (bool, string) {
		s := logSize()
		return s > 0, fmt.Sprint(s)
	})
	// Then it fetches on and gets nothing more: three more fetch
	// responses, each a chance for the next 64 KiB, leave its log as the
	// first fetch left it.
	first := logSize()
	fetchers := c.Node(added).Server().Broker().Replicas().Fetchers()
	r0 := fetchers.Stats().Responses
	pollFor(ctx, t, "three more fetch responses on the new replica's broker", func() (bool, string) {
		r := fetchers.Stats().Responses
		return r >= r0+3, fmt.Sprintf("%d responses, %d at the first fetch", r, r0)
	})
	if held := logSize(); held != first || held >= n*1024 {
		t.Fatalf("the new replica copied %d bytes under a 1 byte/s throttle (%d after its first fetch)", held, first)
	}
	list, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"throttled": {0: {}}})
	if err != nil || len(list.Sorted()) != 1 {
		t.Fatalf("the throttled move is not in progress: %+v %v", list.Sorted(), err)
	}

	alter(nil)
	pollFor(ctx, t, "the move to complete once the throttle is lifted", func() (bool, string) {
		list, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"throttled": {0: {}}})
		if err != nil {
			return false, err.Error()
		}
		r, isr, _ := replicasOf(ctx, t, adm, "throttled", 0)
		return len(list.Sorted()) == 0 && slices.Equal(r, []int32{owner, added}) && len(isr) == 2,
			fmt.Sprintf("listed %+v, replicas %v, isr %v", list.Sorted(), r, isr)
	})
	if s := logSize(); s < n*1024 {
		t.Fatalf("the new replica holds %d bytes after catching up", s)
	}
}

// TestReassignmentSurvivesLeaderLoss moves a partition off its leader while
// the move is held back by a throttle on that leader, then kills the
// leader: its follower takes over (not throttled), the new replica catches
// up from it, the move completes, no record is lost, and the killed broker,
// back, deletes the log it no longer hosts.
func TestReassignmentSurvivesLeaderLoss(t *testing.T) {
	c := Start(t, Nodes(3), Config("broker.session.timeout.ms", "3000"), Config("broker.heartbeat.interval.ms", "250"),
		Config("replica.fetch.max.bytes", "65536"), Config("auto.leader.rebalance.enable", "false"))
	ctx := ctxFor(t, 2*time.Minute)
	adm := kadm.NewClient(c.Client(t, kgo.MetadataMinAge(10*time.Millisecond)))
	if _, err := adm.CreateTopic(ctx, 1, 2, nil, "survive"); err != nil {
		t.Fatal(err)
	}
	var replicas, isr []int32
	var leader int32
	pollFor(ctx, t, "both replicas in sync", func() (bool, string) {
		replicas, isr, leader = replicasOf(ctx, t, adm, "survive", 0)
		return len(isr) == 2 && leader >= 0, fmt.Sprint(replicas, isr, leader)
	})
	follower := replicas[0]
	if follower == leader {
		follower = replicas[1]
	}
	added := int32(6) - leader - follower // the third of nodes 1, 2, 3
	const n = 400
	sent := produceIncompressible(ctx, t, c, "survive", n)
	if _, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas",
		Value: kadm.StringPtr(fmt.Sprintf("0:%d", leader))}}, "survive"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "leader.replication.throttled.rate", Value: kadm.StringPtr("1")}}); err != nil {
		t.Fatal(err)
	}
	var req kadm.AlterPartitionAssignmentsReq
	req.Assign("survive", 0, []int32{follower, added})
	if resp, err := adm.AlterPartitionAssignments(ctx, req); err != nil || resp.Error() != nil {
		t.Fatalf("reassign: %v %v", err, resp.Error())
	}
	// The new replica has its first fetch and is held back there: the
	// leader is killed in the middle of the move.
	pollFor(ctx, t, "the new replica's first fetch", func() (bool, string) {
		s := segmentBytes(c.Node(added), "survive-0")
		return s > 0, fmt.Sprint(s)
	})
	list, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"survive": {0: {}}})
	if err != nil || len(list.Sorted()) != 1 {
		t.Fatalf("the throttled move is not in progress: %+v %v", list.Sorted(), err)
	}
	if s := segmentBytes(c.Node(added), "survive-0"); s >= n*1024 {
		t.Fatalf("the new replica copied %d bytes before the leader was killed", s)
	}

	c.Node(leader).Kill()
	pollFor(ctx, t, "the move to complete without the old leader", func() (bool, string) {
		list, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"survive": {0: {}}})
		if err != nil {
			return false, err.Error()
		}
		r, isr, l := replicasOf(ctx, t, adm, "survive", 0)
		return len(list.Sorted()) == 0 && slices.Equal(r, []int32{follower, added}) && len(isr) == 2 && l != leader,
			fmt.Sprintf("listed %+v, replicas %v, isr %v, leader %d", list.Sorted(), r, isr, l)
	})
	cons := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"survive": {0: kgo.NewOffset().AtStart()}}))
	var got [][]byte
	for len(got) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records after the move", len(got), n)
		}
		for _, r := range fs.Records() {
			got = append(got, r.Value)
		}
	}
	for i := range n {
		if !slices.Equal(got[i], sent[i]) {
			t.Fatalf("record %d differs after the move", i)
		}
	}

	c.Node(leader).Start()
	oldLog := filepath.Join(c.Node(leader).Dir, "data", "survive-0")
	pollFor(ctx, t, "the old leader to delete the log it no longer hosts", func() (bool, string) {
		_, err := os.Stat(oldLog)
		return os.IsNotExist(err), fmt.Sprint(err)
	})
}
