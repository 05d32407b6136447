package mirror_test

import (
	"testing"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// mirrorLag returns the lag DescribeMirrors reports for a partition, -2 if
// it is not listed.
func mirrorLag(t testing.TB, c *testcluster.Cluster, mirror, topic string, partition int32) int64 {
	t.Helper()
	for _, m := range describe(t, c, mirror).Mirrors {
		for _, tp := range m.Topics {
			if tp.Name != topic {
				continue
			}
			for _, p := range tp.Partitions {
				if p.Partition == partition {
					return p.Lag
				}
			}
		}
	}
	return -2
}

// TestLagGrowsWhilePaused: a paused partition is in no fetch response, yet
// its lag follows the source (the source's high watermark is asked for
// with ListOffsets once the last one is older than the refresh interval),
// in DescribeMirrors; after resume it falls to 0.
func TestLagGrowsWhilePaused(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t, testcluster.Config("metrics.listener", ""))
	createTopic(t, a, "lagging", 1, nil)
	produceN(t, a, "lagging", "before", 10)
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "lagging")
	waitStates(t, b, "m", "lagging", 1, wire.MirrorStateMirroring)
	waitIdentical(t, a.Nodes()[0], b.Nodes()[0], "lagging", 1)
	waitFor(t, "lag 0 while mirroring", func() bool { return mirrorLag(t, b, "m", "lagging", 0) == 0 })

	mirrorTopics(t, b, opPause, "m", "lagging")
	waitStates(t, b, "m", "lagging", 1, wire.MirrorStatePaused)
	produceN(t, a, "lagging", "paused", 25)
	waitFor(t, "DescribeMirrors lag 25 while paused", func() bool { return mirrorLag(t, b, "m", "lagging", 0) == 25 })

	mirrorTopics(t, b, opResume, "m", "lagging")
	waitFor(t, "lag 0 after resume", func() bool { return mirrorLag(t, b, "m", "lagging", 0) == 0 })
	waitIdentical(t, a.Nodes()[0], b.Nodes()[0], "lagging", 1)
}
