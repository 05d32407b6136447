package storage

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the log directories, read at scrape time from the logs the
// manager holds (nothing is counted on the append path). The dir label is
// bounded by log.dirs.
var (
	logDirPartitionsDesc = prometheus.NewDesc("kmirror_log_dir_partitions",
		"Partition logs in a log directory.", []string{"dir"}, nil)
	logDirSizeDesc = prometheus.NewDesc("kmirror_log_dir_size_bytes",
		"Bytes of the segments of the partition logs in a log directory.", []string{"dir"}, nil)
	logDirSegmentsDesc = prometheus.NewDesc("kmirror_log_dir_segments",
		"Segments of the partition logs in a log directory.", []string{"dir"}, nil)
)

// Collector returns the manager's Prometheus collector.
func (m *Manager) Collector() prometheus.Collector { return managerCollector{m} }

type managerCollector struct{ m *Manager }

// Describe implements prometheus.Collector.
func (c managerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- logDirPartitionsDesc
	ch <- logDirSizeDesc
	ch <- logDirSegmentsDesc
}

// dirFigures are the scrape-time totals of one log directory.
type dirFigures struct {
	partitions, segments int
	size                 int64
}

// Collect implements prometheus.Collector.
func (c managerCollector) Collect(ch chan<- prometheus.Metric) {
	byDir := make(map[string]*dirFigures, len(c.m.dirs))
	for _, d := range c.m.dirs {
		byDir[d.path] = &dirFigures{}
	}
	for _, l := range c.m.Logs() {
		d := c.m.dirOfLog(l)
		if d == nil {
			continue // being deleted
		}
		f := byDir[d.path]
		f.partitions++
		f.segments += l.NumSegments()
		f.size += l.Size()
	}
	for path, f := range byDir {
		ch <- prometheus.MustNewConstMetric(logDirPartitionsDesc, prometheus.GaugeValue, float64(f.partitions), path)
		ch <- prometheus.MustNewConstMetric(logDirSizeDesc, prometheus.GaugeValue, float64(f.size), path)
		ch <- prometheus.MustNewConstMetric(logDirSegmentsDesc, prometheus.GaugeValue, float64(f.segments), path)
	}
}
