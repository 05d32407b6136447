package mirror_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestSyncOnThreeNodeDestination: on a three-node destination exactly one
// broker runs the mirror's sync, reaching the group coordinators of every
// broker; each broker reports the sync's status in DescribeMirrors.
func TestSyncOnThreeNodeDestination(t *testing.T) {
	a := syncCluster(t, nil)
	logs := &syncLogs{}
	b := syncCluster(t, logs, testcluster.Nodes(3), testcluster.Config("default.replication.factor", "1"))
	aCl := syncClient(t, a, syncManualProducer()...)
	aAdm, bAdm := kadm.NewClient(aCl), kadm.NewClient(syncClient(t, b))
	ctx := syncCtx(t)
	if _, err := aAdm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		syncProduce(t, aCl, "orders", p, 0, 20)
	}
	madm := syncMirrorAdmin(t, b)
	if err := madm.CreateMirror(ctx, "east", map[string]string{"bootstrap.servers": a.Bootstrap()}); err != nil {
		t.Fatal(err)
	}
	if res, err := madm.AddTopics(ctx, "east", "orders"); err != nil || res.Error() != nil {
		t.Fatalf("add topics: %v %v", err, res.Error())
	}
	syncAllMirroring(t, madm, "east")

	// Groups whose coordinators spread over the destination's brokers.
	groups := []string{"g1", "g2", "g3", "g4", "g5", "g6"}
	for i, g := range groups {
		os := kadm.Offsets{}
		for p := int32(0); p < 3; p++ {
			os.Add(kadm.Offset{Topic: "orders", Partition: p, At: int64(i + 1), LeaderEpoch: -1})
		}
		if err := aAdm.CommitAllOffsets(ctx, g, os); err != nil {
			t.Fatal(err)
		}
	}
	syncPoll(t, "every group's offsets on the destination", func() (bool, string) {
		for i, g := range groups {
			for p := int32(0); p < 3; p++ {
				if at, _ := syncCommitted(t, bAdm, g, "orders", p); at != int64(i+1) {
					return false, fmt.Sprintf("%s orders-%d at %d", g, p, at)
				}
			}
		}
		return true, ""
	})
	coords := map[int32]bool{}
	described, err := bAdm.DescribeGroups(ctx, groups...)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range described {
		coords[g.Coordinator.NodeID] = true
	}
	if len(coords) < 2 {
		// The groups hash to different __consumer_offsets partitions,
		// which the controller spreads over the brokers.
		t.Fatalf("the groups' coordinators are on brokers %v only: the test would not cross brokers", coords)
	}
	if n := strings.Count(logs.String(), `msg="mirror sync started"`); n != 1 {
		t.Errorf("the mirror's sync started %d times on the destination, want once", n)
	}
	// Each broker answers DescribeMirrors itself (a wire connection to it:
	// a client would route the admin request to the controller).
	for _, n := range b.Nodes() {
		conn, err := wire.Dial(ctx, "tcp", n.Addr(), "sync-test")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&wire.DescribeMirrorsRequest{MirrorNames: []string{"east"}}).RequestWith(ctx, conn)
		conn.Close()
		if err != nil || len(resp.Mirrors) != 1 {
			t.Fatalf("DescribeMirrors through node %d: %v %+v", n.ID, err, resp)
		}
		syncs := resp.Mirrors[0].Syncs
		if len(syncs) != 4 {
			t.Fatalf("DescribeMirrors through node %d: syncs %+v", n.ID, syncs)
		}
		for _, s := range syncs {
			if s.LastSuccessMillis <= 0 || s.LastError != nil {
				t.Errorf("DescribeMirrors through node %d: sync %s last success %d error %v", n.ID, s.Kind, s.LastSuccessMillis, syncStr(s.LastError))
			}
		}
	}
}
