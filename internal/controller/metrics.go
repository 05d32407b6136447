package controller

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmirror/kmirror/internal/metadata"
)

// Controller metrics, computed at scrape time from the quorum's image.
// As in Kafka, the cluster-wide counts are reported by the active
// controller only (the others report 0), so that summing them over the
// controllers gives the cluster's figure.
var (
	controllerActiveDesc = prometheus.NewDesc("kmirror_controller_active",
		"1 on the active controller (its quorum member leads and has caught up since its election), else 0.", nil, nil)
	controllerOffsetDesc = prometheus.NewDesc("kmirror_controller_metadata_offset",
		"The metadata log offset of the last record in the image the controller decides on.", nil, nil)
	controllerOfflineDesc = prometheus.NewDesc("kmirror_controller_offline_partitions",
		"Partitions without a leader (active controller only).", nil, nil)
	controllerTopicsDesc = prometheus.NewDesc("kmirror_controller_topics",
		"Topics in the cluster (active controller only).", nil, nil)
	controllerPartitionsDesc = prometheus.NewDesc("kmirror_controller_partitions",
		"Partitions in the cluster (active controller only).", nil, nil)
	controllerBrokersDesc = prometheus.NewDesc("kmirror_controller_brokers",
		"Registered brokers by state, fenced or unfenced (active controller only).", []string{"state"}, nil)
)

// Collector returns the controller's Prometheus collector.
func (c *Controller) Collector() prometheus.Collector { return controllerCollector{c} }

type controllerCollector struct{ c *Controller }

// Describe implements prometheus.Collector.
func (cc controllerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{controllerActiveDesc, controllerOffsetDesc, controllerOfflineDesc,
		controllerTopicsDesc, controllerPartitionsDesc, controllerBrokersDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (cc controllerCollector) Collect(ch chan<- prometheus.Metric) {
	img := cc.c.q.Image()
	active := cc.c.IsActive()
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	a := 0
	if active {
		a = 1
	}
	gauge(controllerActiveDesc, a)
	ch <- prometheus.MustNewConstMetric(controllerOffsetDesc, prometheus.GaugeValue, float64(img.Offset()))
	var s clusterCounts
	if active {
		s = countCluster(img)
	}
	gauge(controllerOfflineDesc, s.offline)
	gauge(controllerTopicsDesc, s.topics)
	gauge(controllerPartitionsDesc, s.partitions)
	gauge(controllerBrokersDesc, s.fenced, "fenced")
	gauge(controllerBrokersDesc, s.unfenced, "unfenced")
}

// clusterCounts are the cluster-wide figures of an image.
type clusterCounts struct {
	topics, partitions, offline, fenced, unfenced int
}

func countCluster(img *metadata.Image) clusterCounts {
	var s clusterCounts
	for _, t := range img.Topics() {
		s.topics++
		for _, p := range t.Partitions {
			s.partitions++
			if p.Leader < 0 {
				s.offline++
			}
		}
	}
	for _, b := range img.Brokers() {
		if b.Fenced {
			s.fenced++
		} else {
			s.unfenced++
		}
	}
	return s
}
