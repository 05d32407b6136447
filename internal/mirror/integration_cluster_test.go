package mirror_test

import (
	"bytes"
	"testing"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestThreeNodeDestination mirrors into a three-node cluster whose
// __mirror_state and mirrored topic have three replicas: partitions are
// driven by different leaders, which reach the coordinators of their keys
// on other brokers; followers hold byte-identical copies of the mirrored
// data; failover works across the cluster and DescribeMirrors gathers
// every leader's figures.
func TestThreeNodeDestination(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t, testcluster.Nodes(3),
		testcluster.Config("mirror.state.topic.replication.factor", "3"),
		testcluster.Config("default.replication.factor", "3"),
		testcluster.Config("min.insync.replicas", "2"))
	const parts = 6
	createTopic(t, a, "wide", parts, nil)
	produceN(t, a, "wide", "w", 60)
	createMirror(t, b, a, "tri")
	mirrorTopics(t, b, opAdd, "tri", "wide")
	waitStates(t, b, "tri", "wide", parts, wire.MirrorStateMirroring)
	leaders := map[int32]bool{}
	for _, m := range describe(t, b, "tri").Mirrors {
		for _, tp := range m.Topics {
			for _, p := range tp.Partitions {
				leaders[p.LeaderID] = true
			}
		}
	}
	if len(leaders) < 2 {
		t.Fatalf("the mirrored partitions are led by %v; the test wants several leaders", leaders)
	}
	an := a.Nodes()[0]
	produceN(t, a, "wide", "w2", 30)
	for _, bn := range b.Nodes() {
		waitIdentical(t, an, bn, "wide", parts)
	}

	mirrorTopics(t, b, opRemove, "tri", "wide")
	waitStates(t, b, "tri", "wide", parts, wire.MirrorStateStopped)
	for p := range int32(parts) {
		var ref []byte
		ok := pollUntil(func() bool {
			_, ref = logBytes(t, b.Nodes()[0], "wide", p)
			for _, bn := range b.Nodes()[1:] {
				if _, d := logBytes(t, bn, "wide", p); !bytes.Equal(d, ref) {
					return false
				}
			}
			return true
		})
		if !ok {
			t.Fatalf("wide-%d: replicas differ after the failover", p)
		}
		hs := batches(t, ref)
		if last := hs[len(hs)-1]; !last.IsControl() || last.ProducerID >= 0 {
			t.Fatalf("wide-%d does not end with the barrier: %+v", p, last)
		}
	}
	if err := produceErr(t, b, "wide"); err != nil {
		t.Fatalf("produce after failover: %v", err)
	}
}
