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

// gauge returns the value of a gauge of n's registry with the given
// labels, and whether it is there.
func gauge(t testing.TB, n *testcluster.Node, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	v, _, ok := sample(t, n, name, labels)
	return v, ok
}

// histogramCount returns the observation count of a histogram of n's
// registry with the given labels (0 if absent).
func histogramCount(t testing.TB, n *testcluster.Node, name string, labels map[string]string) int {
	t.Helper()
	_, c, _ := sample(t, n, name, labels)
	return int(c)
}

// sample finds a sample of n's registry by name and labels: its value (a
// gauge's or a counter's: a sample is one or the other) and its histogram
// count.
func sample(t testing.TB, n *testcluster.Node, name string, labels map[string]string) (float64, uint64, bool) {
	t.Helper()
	mfs, err := n.Server().Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			n := 0
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok {
					if v != lp.GetValue() {
						continue metrics
					}
					n++
				}
			}
			if n == len(labels) {
				return m.GetGauge().GetValue() + m.GetCounter().GetValue(), m.GetHistogram().GetSampleCount(), true
			}
		}
	}
	return 0, 0, false
}

// TestLagGrowsWhilePaused: a paused partition is in no fetch response, yet
// its lag follows the source (the source's high watermark is asked for
// with ListOffsets once the last one is older than the refresh interval),
// in DescribeMirrors and in the metrics; after resume it falls to 0.
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
	bn := b.Nodes()[0]
	labels := map[string]string{"mirror": "m", "topic": "lagging", "partition": "0"}
	if v, ok := gauge(t, bn, "kmirror_mirror_partition_lag_offsets", labels); !ok || v != 25 {
		t.Fatalf("kmirror_mirror_partition_lag_offsets = %v (present %t), want 25", v, ok)
	}
	waitFor(t, "a lag in seconds while paused", func() bool {
		v, ok := gauge(t, bn, "kmirror_mirror_partition_lag_seconds", labels)
		return ok && v > 0
	})
	if v, ok := gauge(t, bn, "kmirror_mirror_partition_state", map[string]string{"mirror": "m", "topic": "lagging", "partition": "0", "state": "PAUSED"}); !ok || v != 1 {
		t.Fatalf("PAUSED state gauge = %v (present %t), want 1", v, ok)
	}

	mirrorTopics(t, b, opResume, "m", "lagging")
	waitFor(t, "lag 0 after resume", func() bool {
		secs, ok := gauge(t, bn, "kmirror_mirror_partition_lag_seconds", labels)
		return mirrorLag(t, b, "m", "lagging", 0) == 0 && ok && secs == 0
	})
	waitIdentical(t, a.Nodes()[0], bn, "lagging", 1)
}
