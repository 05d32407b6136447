package mirror

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmirror/kmirror/internal/wire"
)

// Metrics of the mirrored partitions this broker leads, read at scrape time
// from the drivers (what DescribeMirrors answers locally). The partition
// labels are bounded by the partitions the broker leads.
var (
	mirrorPartitionStateDesc = prometheus.NewDesc("kmirror_mirror_partition_state",
		"1 for a mirrored partition's current state (PREPARING, MIRRORING, PAUSING, PAUSED, STOPPING, STOPPED, FAILED), 0 for the others; partitions this broker leads.",
		[]string{"mirror", "topic", "partition", "state"}, nil)
	mirrorPartitionLagDesc = prometheus.NewDesc("kmirror_mirror_partition_lag_offsets",
		"Offsets of a mirrored partition not yet copied: the source's high watermark, as last seen, minus the local log end offset (absent while the source's is unknown).",
		[]string{"mirror", "topic", "partition"}, nil)
)

// mirrorStates are the values of the state label, UNKNOWN excluded (a
// driver whose state is not yet read is not reported).
var mirrorStates = []wire.MirrorPartitionState{
	wire.MirrorStatePreparing, wire.MirrorStateMirroring, wire.MirrorStatePausing, wire.MirrorStatePaused,
	wire.MirrorStateStopping, wire.MirrorStateStopped, wire.MirrorStateFailed,
}

// Collector returns the manager's Prometheus collector.
func (m *Manager) Collector() prometheus.Collector { return managerCollector{m} }

type managerCollector struct{ m *Manager }

// Describe implements prometheus.Collector.
func (c managerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- mirrorPartitionStateDesc
	ch <- mirrorPartitionLagDesc
}

// Collect implements prometheus.Collector.
func (c managerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, v := range c.m.describeLocal(nil) {
		part := strconv.FormatInt(int64(v.tp.Partition), 10)
		for _, s := range mirrorStates {
			x := 0.0
			if s == v.status.State {
				x = 1
			}
			ch <- prometheus.MustNewConstMetric(mirrorPartitionStateDesc, prometheus.GaugeValue, x, v.mirror, v.tp.Topic, part, s.String())
		}
		if v.stats.SourceHW >= 0 && v.leo >= 0 {
			ch <- prometheus.MustNewConstMetric(mirrorPartitionLagDesc, prometheus.GaugeValue,
				float64(max(0, v.stats.SourceHW-v.leo)), v.mirror, v.tp.Topic, part)
		}
	}
}
