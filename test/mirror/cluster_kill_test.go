package mirror_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// TestThreeNodeDestinationLeaderKills mirrors a three-node source into a
// three-node destination of kmirror binaries (every topic on every node)
// and kills the leader of a mirrored partition twice: while it mirrors
// under a running producer, and while its failover is held after the Last
// Mirrored Epoch was persisted, before the barrier. Each time another
// broker takes the partition over from its state in __mirror_state
// (whose coordinator is wherever its partition leads) and carries on; in
// the end every replica of every partition, on disk, holds the source's
// batches followed by exactly one MIRROR_PID_RESET barrier.
func TestThreeNodeDestinationLeaderKills(t *testing.T) {
	hold := filepath.Join(t.TempDir(), "hold")
	t.Setenv("KMIRROR_TEST_MIRROR_PAUSE", "stopping-lme-persisted:"+hold)
	a := inProcess(t, 3)
	as := seedsOf(a)
	b := startProcs(t, 3, nil)
	bs := b.seeds()
	const parts = 3
	createTopicOn(t, as, "tri", parts)
	prod := startProducer(t, as, "tri", "x")
	prod.waitAcked(t, 300)
	adm := newMirrorAdmin(t, bs)
	mirrorFrom(t, adm, "m", as, "tri")
	waitStates(t, adm, "m", "tri", parts, mirroradmin.StateMirroring)

	// A leader dies while it mirrors.
	victim := b.node(leaderOn(t, bs, "tri", 0, -1))
	victim.kill()
	next := leaderOn(t, bs, "tri", 0, victim.id)
	t.Logf("tri-0 moved from node %d to node %d", victim.id, next)
	prod.waitAcked(t, prod.acked.Load()+300)
	waitStates(t, adm, "m", "tri", parts, mirroradmin.StateMirroring)
	victim.start()
	prod.waitAcked(t, prod.acked.Load()+200)
	prod.stop()
	if err := prod.failed(); err != nil {
		t.Fatal(err)
	}
	waitSameLogs(t, as, bs, "tri", parts)
	source := map[int32][]byte{}
	for p := range int32(parts) {
		_, source[p], _ = rawLog(t, as, "tri", p)
	}

	// A leader dies in the middle of its failover.
	victim = b.node(leaderOn(t, bs, "tri", 0, -1))
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	failover(t, adm, "m", "tri")
	line := waitOutputLine(t, victim.process(), "mirror test pause point reached", "topic=tri", "partition=0 ")
	t.Logf("node %d holds: %s", victim.id, line)
	victim.kill()
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	waitStates(t, adm, "m", "tri", parts, mirroradmin.StateStopped)
	t.Logf("tri-0 failed over on node %d", leaderOn(t, bs, "tri", 0, victim.id))
	victim.start()
	waitFullISR(t, bs, "tri", parts)

	b.stopAll()
	for p := range int32(parts) {
		var first []byte
		for _, n := range b.nodes {
			start, data := testcluster.ReadStoppedReplica(t, n.logDir(), "tri", p)
			if start != 0 {
				t.Fatalf("tri-%d on node %d starts at %d", p, n.id, start)
			}
			if first == nil {
				first = data
				checkFailedOver(t, fmt.Sprintf("tri-%d", p), source[p], data)
				continue
			}
			if !bytes.Equal(data, first) {
				t.Fatalf("tri-%d: node %d's replica (%d bytes) differs from node 1's (%d bytes)", p, n.id, len(data), len(first))
			}
		}
	}
}

// leaderOn waits until topic-partition has a leader other than not (-1:
// any) and returns it.
func leaderOn(t testing.TB, seeds []string, topic string, partition, not int32) int32 {
	t.Helper()
	var leader int32 = -1
	waitUntil(t, fmt.Sprintf("a leader of %s-%d other than %d", topic, partition, not), func() (bool, string) {
		md, err := kadm.NewClient(newClient(t, seeds)).Metadata(testCtx(t), topic)
		if err != nil {
			return false, err.Error()
		}
		p, ok := md.Topics[topic].Partitions[partition]
		if !ok {
			return false, "no such partition"
		}
		leader = p.Leader
		return leader >= 0 && leader != not, fmt.Sprintf("leader %d", leader)
	})
	return leader
}

// waitFullISR waits until every partition of topic has all its replicas
// in sync.
func waitFullISR(t testing.TB, seeds []string, topic string, parts int32) {
	t.Helper()
	waitUntil(t, topic+" fully in sync", func() (bool, string) {
		md, err := kadm.NewClient(newClient(t, seeds)).Metadata(testCtx(t), topic)
		if err != nil {
			return false, err.Error()
		}
		for p := range parts {
			pd := md.Topics[topic].Partitions[p]
			isr := slices.Clone(pd.ISR)
			slices.Sort(isr)
			reps := slices.Clone(pd.Replicas)
			slices.Sort(reps)
			if len(reps) == 0 || !slices.Equal(isr, reps) {
				return false, fmt.Sprintf("%s-%d: isr %v of %v", topic, p, pd.ISR, pd.Replicas)
			}
		}
		return true, ""
	})
}
