package broker

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmirror/kmirror/internal/storage"
)

// brokerStats are the broker's counters (Kafka's BrokerTopicStats and
// ReplicaManager meters). The hot paths add to atomics of a topic's
// counters, found in a sync.Map; everything else is read at scrape time
// from the partitions.
type brokerStats struct {
	topics      sync.Map // topic name -> *topicStats
	fetchErrors sync.Map // error code (int16) -> *atomic.Uint64
	isrShrinks  atomic.Uint64
	isrExpands  atomic.Uint64
}

// topicStats are one topic's traffic on this broker.
type topicStats struct {
	bytesIn, messagesIn, bytesOut atomic.Uint64
}

func (s *brokerStats) topic(name string) *topicStats {
	if v, ok := s.topics.Load(name); ok {
		return v.(*topicStats)
	}
	v, _ := s.topics.LoadOrStore(name, new(topicStats))
	return v.(*topicStats)
}

// produced counts a client's batches appended by the leader (not
// replication, mirroring or coordinator writes: Kafka's BytesInPerSec).
func (s *brokerStats) produced(topic string, info storage.AppendInfo) {
	t := s.topic(topic)
	t.bytesIn.Add(uint64(info.Bytes))
	t.messagesIn.Add(uint64(info.NumRecords))
}

// fetched counts record bytes a consumer's Fetch response carries (not a
// follower's: Kafka's BytesOutPerSec).
func (s *brokerStats) fetched(topic string, bytes int64) {
	if bytes > 0 {
		s.topic(topic).bytesOut.Add(uint64(bytes))
	}
}

// fetchError counts one partition of a Fetch response that carries an
// error code.
func (s *brokerStats) fetchError(code int16) {
	if code == 0 {
		return
	}
	v, ok := s.fetchErrors.Load(code)
	if !ok {
		v, _ = s.fetchErrors.LoadOrStore(code, new(atomic.Uint64))
	}
	v.(*atomic.Uint64).Add(1)
}

// isrChanged counts an ISR change the controller accepted.
func (s *brokerStats) isrChanged(before, after int) {
	switch {
	case after < before:
		s.isrShrinks.Add(1)
	case after > before:
		s.isrExpands.Add(1)
	}
}

// FetchErrorCounts returns how many partitions of Fetch responses carried
// each error code since the broker started. The node's request metrics
// report them (Fetch responses are streamed, not kmsg structs).
func (b *Broker) FetchErrorCounts() map[int16]uint64 {
	out := map[int16]uint64{}
	b.rm.stats.fetchErrors.Range(func(k, v any) bool {
		out[k.(int16)] = v.(*atomic.Uint64).Load()
		return true
	})
	return out
}

// partitionView is what the metrics read of a partition, under its lock.
type partitionView struct {
	leader, offline     bool
	isr, replicas, minI int
}

func (p *Partition) metricsView() partitionView {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return partitionView{
		leader: p.leader, offline: p.offline != nil,
		isr: len(p.state.ISR), replicas: len(p.state.Replicas), minI: int(p.settings.minISR),
	}
}

var (
	brokerPartitionsDesc = prometheus.NewDesc("kmirror_broker_partitions",
		"Partition replicas hosted by this broker.", nil, nil)
	brokerLeadersDesc = prometheus.NewDesc("kmirror_broker_leader_partitions",
		"Partitions this broker leads.", nil, nil)
	brokerURPDesc = prometheus.NewDesc("kmirror_broker_under_replicated_partitions",
		"Partitions this broker leads whose ISR is smaller than their replica set.", nil, nil)
	brokerUnderMinISRDesc = prometheus.NewDesc("kmirror_broker_under_min_isr_partitions",
		"Partitions this broker leads whose ISR is smaller than min.insync.replicas (acks=all produces fail).", nil, nil)
	brokerOfflineDesc = prometheus.NewDesc("kmirror_broker_offline_replicas",
		"Replicas on this broker whose log could not be opened.", nil, nil)
	isrShrinksDesc = prometheus.NewDesc("kmirror_isr_shrinks_total",
		"ISR shrinks of partitions this broker leads, accepted by the controller.", nil, nil)
	isrExpandsDesc = prometheus.NewDesc("kmirror_isr_expands_total",
		"ISR expansions of partitions this broker leads, accepted by the controller.", nil, nil)
	topicBytesInDesc = prometheus.NewDesc("kmirror_topic_bytes_in_total",
		"Bytes of producer batches appended by this broker as leader, by topic (replication and mirroring excluded).", []string{"topic"}, nil)
	topicMessagesInDesc = prometheus.NewDesc("kmirror_topic_messages_in_total",
		"Records of producer batches appended by this broker as leader, by topic.", []string{"topic"}, nil)
	topicBytesOutDesc = prometheus.NewDesc("kmirror_topic_bytes_out_total",
		"Record bytes sent to consumers in Fetch responses, by topic (followers excluded).", []string{"topic"}, nil)
	replicaFetchBytesDesc = prometheus.NewDesc("kmirror_replica_fetch_bytes_total",
		"Record bytes this broker's follower fetchers received from partition leaders.", nil, nil)
	replicaFetchFailuresDesc = prometheus.NewDesc("kmirror_replica_fetch_failures_total",
		"Follower fetch requests that failed as a whole (connection, timeout).", nil, nil)
	replicaMaxLagDesc = prometheus.NewDesc("kmirror_replica_max_lag",
		"The largest lag, in offsets, of a partition this broker follows behind its leader's high watermark.", nil, nil)
)

// Collector returns the broker's Prometheus collector.
func (b *Broker) Collector() prometheus.Collector { return brokerCollector{b} }

type brokerCollector struct{ b *Broker }

// Describe implements prometheus.Collector.
func (c brokerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{brokerPartitionsDesc, brokerLeadersDesc, brokerURPDesc, brokerUnderMinISRDesc,
		brokerOfflineDesc, isrShrinksDesc, isrExpandsDesc, topicBytesInDesc, topicMessagesInDesc, topicBytesOutDesc,
		replicaFetchBytesDesc, replicaFetchFailuresDesc, replicaMaxLagDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c brokerCollector) Collect(ch chan<- prometheus.Metric) {
	rm := c.b.rm
	var parts, leaders, urp, underMin, offline int
	for _, p := range rm.Partitions() {
		v := p.metricsView()
		parts++
		if v.offline {
			offline++
		}
		if !v.leader {
			continue
		}
		leaders++
		if v.isr < v.replicas {
			urp++
		}
		if v.isr < v.minI {
			underMin++
		}
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(brokerPartitionsDesc, float64(parts))
	gauge(brokerLeadersDesc, float64(leaders))
	gauge(brokerURPDesc, float64(urp))
	gauge(brokerUnderMinISRDesc, float64(underMin))
	gauge(brokerOfflineDesc, float64(offline))
	counter(isrShrinksDesc, rm.stats.isrShrinks.Load())
	counter(isrExpandsDesc, rm.stats.isrExpands.Load())

	// A deleted topic's counters go with it (a topic of the same name
	// created later starts from zero, which Prometheus reads as a reset).
	img := rm.Image()
	rm.stats.topics.Range(func(k, v any) bool {
		name, t := k.(string), v.(*topicStats)
		if _, ok := img.Topic(name); !ok {
			rm.stats.topics.Delete(name)
			return true
		}
		counter(topicBytesInDesc, t.bytesIn.Load(), name)
		counter(topicMessagesInDesc, t.messagesIn.Load(), name)
		counter(topicBytesOutDesc, t.bytesOut.Load(), name)
		return true
	})

	if f := rm.fetchers; f != nil {
		st := f.Stats()
		counter(replicaFetchBytesDesc, st.Bytes)
		counter(replicaFetchFailuresDesc, st.Failures)
		gauge(replicaMaxLagDesc, float64(f.MaxLag()))
	}
}
