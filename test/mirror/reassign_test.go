package mirror_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// TestReassignMirroredPartition moves the replicas of a mirrored partition
// on a three-node destination while a producer writes to the source: a
// shrink that takes the replicas (and leadership) away from the leader, a
// move back onto the broker that left (its log rebuilt from nothing by
// replicating the mirrored log), and a shrink onto that broker and one
// other, leaving out the leader, so that the rebuilt broker leads. The partition keeps mirroring throughout, the broker that
// rebuilt its log serves a log byte-identical with the source's (offsets
// and leader epochs included), and the topic fails over afterwards.
func TestReassignMirroredPartition(t *testing.T) {
	a, b := inProcess(t, 1), inProcess(t, 3)
	as, bs := seedsOf(a), seedsOf(b)
	const parts = 2
	createTopicOn(t, as, "moved", parts)
	prod := startProducer(t, as, "moved", "a")
	prod.waitAcked(t, 200)
	madm := newMirrorAdmin(t, bs)
	mirrorFrom(t, madm, "east", as, "moved")
	waitStates(t, madm, "east", "moved", parts, mirroradmin.StateMirroring)

	// franz-go answers metadata from its cache for its minimum age.
	adm := kadm.NewClient(newClient(t, bs, kgo.MetadataMinAge(10*time.Millisecond)))
	ctx := testCtx(t)
	replicas := func() ([]int32, int32) {
		md, err := adm.Metadata(ctx, "moved")
		if err != nil {
			return nil, -1
		}
		p := md.Topics["moved"].Partitions[0]
		return p.Replicas, p.Leader
	}
	moveTo := func(what string, target []int32) {
		t.Helper()
		var req kadm.AlterPartitionAssignmentsReq
		req.Assign("moved", 0, target)
		resp, err := adm.AlterPartitionAssignments(ctx, req)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		waitUntil(t, what, func() (bool, string) {
			list, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{"moved": {0: {}}})
			if err != nil {
				return false, err.Error()
			}
			r, leader := replicas()
			return len(list.Sorted()) == 0 && slices.Equal(r, target) && slices.Contains(target, leader),
				fmt.Sprintf("listed %+v, replicas %v, leader %d", list.Sorted(), r, leader)
		})
		prod.waitAcked(t, prod.acked.Load()+100) // written after the move
		waitStates(t, madm, "east", "moved", parts, mirroradmin.StateMirroring)
	}

	// agreedLeader waits until every broker reports the same leader and
	// leader epoch for moved-0 (a broker's metadata may lag a moment
	// behind the controller's) and returns that leader.
	var each []*kadm.Client
	for _, seed := range bs {
		each = append(each, kadm.NewClient(newClient(t, []string{seed}, kgo.MetadataMinAge(10*time.Millisecond))))
	}
	agreedLeader := func() int32 {
		t.Helper()
		var leader int32
		waitUntil(t, "the brokers to agree on moved-0's leader", func() (bool, string) {
			var seen []string
			for _, one := range each {
				md, err := one.Metadata(ctx, "moved")
				if err != nil {
					return false, err.Error()
				}
				p := md.Topics["moved"].Partitions[0]
				seen = append(seen, fmt.Sprintf("%d@%d", p.Leader, p.LeaderEpoch))
				leader = p.Leader
			}
			return len(slices.Compact(slices.Clone(seen))) == 1 && leader >= 0, fmt.Sprint(seen)
		})
		return leader
	}

	var first int32
	waitUntil(t, "moved-0's leader", func() (bool, string) {
		_, first = replicas()
		return first > 0, fmt.Sprint(first)
	})
	var others []int32
	for id := int32(1); id <= 3; id++ {
		if id != first {
			others = append(others, id)
		}
	}
	moveTo("the replicas taken from the leader", others)
	moveTo("the replicas back onto the broker that left", append([]int32{first}, others...))
	// Onto that broker and the one that does not lead: leadership must
	// move, and goes to the target's first replica.
	leader := agreedLeader()
	rest := others[0]
	if rest == leader {
		rest = others[1]
	}
	moveTo("the partition onto that broker and another", []int32{first, rest})
	prod.stop()
	if err := prod.failed(); err != nil {
		t.Fatal(err)
	}
	// moved-0 is now served by the broker whose log was rebuilt.
	waitSameLogs(t, as, bs, "moved", parts)

	source := map[int32][]byte{}
	for p := range int32(parts) {
		var err error
		if _, source[p], err = rawLog(t, as, "moved", p); err != nil {
			t.Fatal(err)
		}
	}
	failover(t, madm, "east", "moved")
	waitStates(t, madm, "east", "moved", parts, mirroradmin.StateStopped)
	for p := range int32(parts) {
		_, got, err := rawLog(t, bs, "moved", p)
		if err != nil {
			t.Fatal(err)
		}
		checkFailedOver(t, fmt.Sprintf("moved-%d", p), source[p], got)
	}
	produceSome(t, bs, "moved", "b", 50)
}
