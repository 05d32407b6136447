package mirror_test

import (
	"testing"

	"github.com/kmirror/kmirror/internal/mirror"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestStalledPartitionRestarts takes a MIRRORING partition away from its
// fetcher behind its driver's back (a lost fetcher: nothing a client can
// cause, hence the hook): while the source grows, the partition stays
// MIRRORING with nothing copying it. After mirror.stall.timeout.ms the
// stall shows in DescribeMirrors' last error and in
// kmirror_mirror_partition_stalls_total, and the partition's fetching
// restarts, so that it catches up with the source. (Before, it stayed
// MIRRORING, ten records behind, for good.)
func TestStalledPartitionRestarts(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t, testcluster.Config("mirror.stall.timeout.ms", "2000"))
	createTopic(t, a, "st", 1, nil)
	produceN(t, a, "st", "before", 10)
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "st")
	waitStates(t, b, "m", "st", 1, wire.MirrorStateMirroring)
	an, bn := a.Nodes()[0], b.Nodes()[0]
	waitIdentical(t, an, bn, "st", 1)

	waitFor(t, "the partition taken from its fetcher", func() bool {
		return mirror.LoseFetching(bn.Server().MirrorManager(), "st", 0)
	})
	produceN(t, a, "st", "after", 10)
	// The stall's message is the partition's last error until a fetch
	// response clears it, which the restart brings at once; the counter
	// stays.
	waitFor(t, "the stall counted", func() bool {
		return counterValue(t, bn, "kmirror_mirror_partition_stalls_total", map[string]string{"mirror": "m", "topic": "st", "partition": "0"}) >= 1
	})
	waitIdentical(t, an, bn, "st", 1)
	if st := partitionStates(t, b, "m", "st"); st[0] != wire.MirrorStateMirroring {
		t.Fatalf("st-0 is %v after the restart", st[0])
	}
}

// counterValue returns a counter's value in n's registry (0 when absent).
func counterValue(t testing.TB, n *testcluster.Node, name string, labels map[string]string) float64 {
	t.Helper()
	v, _, _ := sample(t, n, name, labels)
	return v
}
