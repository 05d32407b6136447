package mirror_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestSourceEpochsAboveDestination mirrors, into a three-node cluster, data
// whose leader epochs are above the destination partitions' own (a source
// that failed over itself): the followers replicate it (their fetches name
// a last fetched epoch above the leader's current epoch), consumers read it,
// and the failover bumps the epoch above it: every replica then holds the
// source's log byte for byte and one barrier more.
func TestSourceEpochsAboveDestination(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "hi", 2, nil)
	produceN(t, a, "hi", "a", 20)
	createMirror(t, b, a, "ab")
	mirrorTopics(t, b, opAdd, "ab", "hi")
	waitStates(t, b, "ab", "hi", 2, wire.MirrorStateMirroring)
	waitIdentical(t, a.Nodes()[0], b.Nodes()[0], "hi", 2)
	mirrorTopics(t, b, opRemove, "ab", "hi")
	waitStates(t, b, "ab", "hi", 2, wire.MirrorStateStopped)
	produceN(t, b, "hi", "b", 20) // in B's failover epoch, above 0

	c := startCluster(t, testcluster.Nodes(3),
		testcluster.Config("mirror.state.topic.replication.factor", "3"),
		testcluster.Config("default.replication.factor", "3"))
	createMirror(t, c, b, "bc")
	mirrorTopics(t, c, opAdd, "bc", "hi")
	waitStates(t, c, "bc", "hi", 2, wire.MirrorStateMirroring)
	for _, cn := range c.Nodes() {
		waitIdentical(t, b.Nodes()[0], cn, "hi", 2)
	}
	if got := consume(t, c, "hi", true, 40); len(got[0])+len(got[1]) != 40 {
		t.Fatalf("consumed %v", got)
	}
	mirrorTopics(t, c, opRemove, "bc", "hi")
	waitStates(t, c, "bc", "hi", 2, wire.MirrorStateStopped)
	// Every replica of C holds B's log (which has no open transaction)
	// byte for byte, then one barrier above B's epochs: C's own, after
	// the one it copied from B.
	for p := range int32(2) {
		_, src := logBytes(t, b.Nodes()[0], "hi", p)
		data := replicasAgree(t, c, "hi", p)
		name := "hi-" + itoa(int(p)) + " on C"
		barrier := checkFailedOver(t, name, src, data)
		if got := barrierOffsets(t, data); len(got) != 2 || got[1] != barrier.BaseOffset {
			t.Fatalf("%s: MIRROR_PID_RESET batches at %v, want B's and C's at %d", name, got, barrier.BaseOffset)
		}
	}
	if err := produceErr(t, c, "hi"); err != nil {
		t.Fatalf("produce after failover: %v", err)
	}
}

// TestEpochFloorConsumerGroup keeps the destination's leader epoch at or
// above every mirrored epoch (KIP-1279) while the source elects new leaders:
// a consumer group on B commits offsets whose leader epochs come from the
// mirrored batches, which a KIP-320 client accepts only when they are not
// above the partition's leader epoch in the metadata (it would otherwise
// wait for newer metadata that never comes). The group resumes after a
// restart of its consumer from the committed offsets: no stall, no reset.
func TestEpochFloorConsumerGroup(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	const parts = 2
	createTopic(t, a, "ep", parts, nil)
	an, bn := a.Nodes()[0], b.Nodes()[0]
	produceN(t, a, "ep", "e0", 20)
	an.Restart() // a new leadership on A: its epochs move ahead of B's
	produceN(t, a, "ep", "e1", 20)
	if e := metadataEpochs(t, a, "ep", parts); e[0] < 1 || e[1] < 1 {
		t.Fatalf("A's leader epochs after a restart: %v; the test needs them above 0", e)
	}
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "ep")
	waitStates(t, b, "m", "ep", parts, wire.MirrorStateMirroring)
	waitIdentical(t, an, bn, "ep", parts)
	checkEpochFloor(t, b, bn, "ep", parts)

	group := groupConsumer(t, b, "g", "ep")
	seen := map[string]bool{}
	readGroup(t, group, seen, 40)
	group.Close()
	checkCommittedEpochs(t, b, "g", "ep", parts)

	// Another election on A while B mirrors, then more data in it.
	an.Restart()
	produceN(t, a, "ep", "e2", 20)
	waitIdentical(t, an, bn, "ep", parts)
	checkEpochFloor(t, b, bn, "ep", parts)

	// The group resumes where it committed: exactly the 20 new records.
	group = groupConsumer(t, b, "g", "ep")
	readGroup(t, group, seen, 20)
	group.Close()
	checkCommittedEpochs(t, b, "g", "ep", parts)
	if len(seen) != 60 {
		t.Fatalf("the group read %d distinct records, want 60", len(seen))
	}

	// Failover still puts the barrier above every epoch: B's log is A's
	// (no open transaction) byte for byte, then one barrier.
	mirrorTopics(t, b, opRemove, "m", "ep")
	waitStates(t, b, "m", "ep", parts, wire.MirrorStateStopped)
	for p := range int32(parts) {
		_, src := logBytes(t, an, "ep", p)
		_, data := logBytes(t, bn, "ep", p)
		name := "ep-" + itoa(int(p))
		barrier := checkFailedOver(t, name, src, data)
		if got := barrierOffsets(t, data); len(got) != 1 || got[0] != barrier.BaseOffset {
			t.Fatalf("%s: MIRROR_PID_RESET batches at %v, want one at %d", name, got, barrier.BaseOffset)
		}
	}
}

// metadataEpochs returns the partitions' leader epochs in c's metadata, as
// clients see them.
func metadataEpochs(t testing.TB, c *testcluster.Cluster, topic string, parts int32) []int32 {
	t.Helper()
	md, err := c.Admin(t).Metadata(ctxFor(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int32, parts)
	for p := range parts {
		out[p] = md.Topics[topic].Partitions[p].LeaderEpoch
	}
	return out
}

// checkEpochFloor waits until, for every partition, the leader epoch in the
// metadata is at least the greatest epoch in n's log.
func checkEpochFloor(t testing.TB, c *testcluster.Cluster, n *testcluster.Node, topic string, parts int32) {
	t.Helper()
	var why string
	ok := pollUntil(func() bool {
		md := metadataEpochs(t, c, topic, parts)
		for p := range parts {
			_, data := logBytes(t, n, topic, p)
			for _, h := range batches(t, data) {
				if h.PartitionLeaderEpoch > md[p] {
					why = fmt.Sprintf("%s-%d holds a batch of epoch %d above its leader epoch %d", topic, p, h.PartitionLeaderEpoch, md[p])
					return false
				}
			}
		}
		return true
	})
	if !ok {
		t.Fatal(why)
	}
}

// groupConsumer returns a consumer of group on topic that commits what it polls.
func groupConsumer(t testing.TB, c *testcluster.Cluster, group, topic string) *kgo.Client {
	t.Helper()
	return c.Client(t, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
}

// readGroup polls want new records, failing on a record seen before (a
// reset) or on no progress before the deadline (a stall), and commits each
// poll's records synchronously.
func readGroup(t testing.TB, cl *kgo.Client, seen map[string]bool, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	got := 0
	for got < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the group stalled after %d of %d records", got, want)
		}
		for _, fe := range fs.Errors() {
			t.Fatalf("fetch %s-%d: %v", fe.Topic, fe.Partition, fe.Err)
		}
		rs := fs.Records()
		for _, r := range rs {
			k := string(r.Key)
			if seen[k] {
				t.Fatalf("record %s read twice: the group's position was reset", k)
			}
			seen[k] = true
			got++
		}
		if err := cl.CommitRecords(ctx, rs...); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}
}

// checkCommittedEpochs checks that every committed offset of the group
// carries a leader epoch that is not above the partition's leader epoch in
// the metadata (what a KIP-320 consumer validates before using it).
func checkCommittedEpochs(t testing.TB, c *testcluster.Cluster, group, topic string, parts int32) {
	t.Helper()
	offs, err := c.Admin(t).FetchOffsets(ctxFor(t), group)
	if err != nil {
		t.Fatal(err)
	}
	md := metadataEpochs(t, c, topic, parts)
	n := 0
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic != topic {
			return
		}
		n++
		if o.Err != nil {
			t.Fatalf("committed offset of %s-%d: %v", o.Topic, o.Partition, o.Err)
		}
		if o.LeaderEpoch < 0 || o.LeaderEpoch > md[o.Partition] {
			t.Fatalf("%s-%d: committed leader epoch %d, metadata leader epoch %d: a KIP-320 consumer would wait for newer metadata",
				o.Topic, o.Partition, o.LeaderEpoch, md[o.Partition])
		}
	})
	if n != int(parts) {
		t.Fatalf("the group committed %d partitions of %s, want %d", n, topic, parts)
	}
}
