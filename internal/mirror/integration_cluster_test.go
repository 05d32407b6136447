package mirror_test

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

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
	// Every replica holds A's log (no open transaction) byte for byte,
	// then one barrier.
	for p := range int32(parts) {
		_, src := logBytes(t, an, "wide", p)
		data := replicasAgree(t, b, "wide", p)
		name := "wide-" + itoa(int(p))
		barrier := checkFailedOver(t, name, src, data)
		if got := barrierOffsets(t, data); len(got) != 1 || got[0] != barrier.BaseOffset {
			t.Fatalf("%s: MIRROR_PID_RESET batches at %v, want one at %d", name, got, barrier.BaseOffset)
		}
	}
	if err := produceErr(t, b, "wide"); err != nil {
		t.Fatalf("produce after failover: %v", err)
	}

	// Every broker of B answers A's ReadLastMirroredEpochs the same way,
	// forwarding the keys it does not coordinate.
	id := topicIDBytes(t, b, "wide")
	var answers []string
	for _, bn := range b.Nodes() {
		conn, err := wire.Dial(ctxFor(t), "tcp", bn.Addr(), "mirror-test")
		if err != nil {
			t.Fatal(err)
		}
		req := &wire.ReadLastMirroredEpochsRequest{ClusterID: a.ClusterID(), Topics: []wire.ReadLastMirroredEpochsRequestTopic{
			{TopicID: id, Name: "wide", Partitions: []int32{0, 1, 2, 3, 4, 5}},
		}}
		resp, err := conn.Request(ctxFor(t), req)
		conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*wire.ReadLastMirroredEpochsResponse)
		var got string
		for _, p := range r.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.LastMirroredEpoch < 0 || p.EndOffset <= 0 {
				t.Fatalf("broker %d: LME of wide-%d: %+v", bn.ID, p.Partition, p)
			}
			got += fmt.Sprintf("%d:%d@%d ", p.Partition, p.LastMirroredEpoch, p.EndOffset)
		}
		answers = append(answers, got)
	}
	if answers[0] != answers[1] || answers[1] != answers[2] {
		t.Fatalf("brokers answer differently: %q", answers)
	}
	// Another cluster's id gets no LME.
	conn, err := wire.Dial(ctxFor(t), "tcp", b.Nodes()[0].Addr(), "mirror-test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	resp, err := conn.Request(ctxFor(t), &wire.ReadLastMirroredEpochsRequest{ClusterID: "someone-else", Topics: []wire.ReadLastMirroredEpochsRequestTopic{
		{TopicID: id, Name: "wide", Partitions: []int32{0}},
		{TopicID: [16]byte{9}, Name: "nope", Partitions: []int32{0}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*wire.ReadLastMirroredEpochsResponse)
	if p := r.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.LastMirroredEpoch != -1 {
		t.Fatalf("LME for another cluster: %+v", p)
	}
	if p := r.Topics[1].Partitions[0]; p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("LME of an unknown topic id: %+v", p)
	}
}
