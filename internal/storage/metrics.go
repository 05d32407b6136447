package storage

import (
	"time"

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

// flushMetric is the latency of the flushes of the manager's logs (Kafka's
// LogFlushRateAndTimeMs): each flush that synced segments or the directory
// is one observation, timed around its fsyncs (a flush with nothing to sync
// is not counted).
type flushMetric struct{ h prometheus.Histogram }

// flushBuckets span an fsync of a page-cache-warm segment on an SSD to a
// slow disk's stall.
var flushBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

func newFlushMetric() flushMetric {
	return flushMetric{prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kmirror_log_flush_duration_seconds",
		Help:    "Time a flush of a partition log took (fsync of its segments, indexes and directory); the count is the number of flushes.",
		Buckets: flushBuckets,
	})}
}

func (f *flushMetric) observe(took time.Duration) { f.h.Observe(took.Seconds()) }

// Collector returns the manager's Prometheus collector.
func (m *Manager) Collector() prometheus.Collector { return managerCollector{m} }

type managerCollector struct{ m *Manager }

// Describe implements prometheus.Collector.
func (c managerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- logDirPartitionsDesc
	ch <- logDirSizeDesc
	ch <- logDirSegmentsDesc
	c.m.flushes.h.Describe(ch)
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
	c.m.flushes.h.Collect(ch)
}
