package mirror

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kmirror/kmirror/internal/replication"
	"github.com/kmirror/kmirror/internal/wire"
)

// Metrics of the mirrors on this broker. Per partition (the partitions this
// broker leads, so the labels are bounded by them) they are read at scrape
// time from the drivers, as DescribeMirrors reads them; the fetchers add to
// two atomics per append. Per mirror, the fetch request totals come from
// the sources' fetchers, the sync figures from the syncs this broker runs,
// and the failover histogram is observed when a partition reaches STOPPED.
var (
	mirrorPartitionStateDesc = prometheus.NewDesc("kmirror_mirror_partition_state",
		"1 for a mirrored partition's current state (PREPARING, MIRRORING, PAUSING, PAUSED, STOPPING, STOPPED, FAILED), 0 for the others; partitions this broker leads.",
		[]string{"mirror", "topic", "partition", "state"}, nil)
	mirrorPartitionLagDesc = prometheus.NewDesc("kmirror_mirror_partition_lag_offsets",
		"Offsets of a mirrored partition not yet copied: the source's high watermark, as last learned, minus the local log end offset (absent while the source's is unknown).",
		[]string{"mirror", "topic", "partition"}, nil)
	mirrorPartitionLagSecondsDesc = prometheus.NewDesc("kmirror_mirror_partition_lag_seconds",
		"How far behind the source a mirrored partition is in time: 0 without lag, else the time since the partition was last known complete (the later of its last caught-up observation and its newest mirrored record's timestamp); absent while unknown.",
		[]string{"mirror", "topic", "partition"}, nil)
	mirrorPartitionSourceHWDesc = prometheus.NewDesc("kmirror_mirror_partition_source_high_watermark",
		"The source partition's high watermark as last learned (absent while unknown).",
		[]string{"mirror", "topic", "partition"}, nil)
	mirrorPartitionSourceHWAgeDesc = prometheus.NewDesc("kmirror_mirror_partition_source_high_watermark_age_seconds",
		"How long ago the source's high watermark of the partition was learned (from a fetch response or ListOffsets).",
		[]string{"mirror", "topic", "partition"}, nil)
	mirrorPartitionBytesDesc = prometheus.NewDesc("kmirror_mirror_partition_fetched_bytes_total",
		"Bytes of record batches mirrored into a partition since this broker began leading it.",
		[]string{"mirror", "topic", "partition"}, nil)
	mirrorPartitionRecordsDesc = prometheus.NewDesc("kmirror_mirror_partition_fetched_records_total",
		"Records mirrored into a partition since this broker began leading it.",
		[]string{"mirror", "topic", "partition"}, nil)
	mirrorPartitionStallsDesc = prometheus.NewDesc("kmirror_mirror_partition_stalls_total",
		"Stalls of a MIRRORING partition: no fetch response for mirror.stall.timeout.ms while the source's high watermark was above its log end; each restarted its fetching.",
		[]string{"mirror", "topic", "partition"}, nil)
	mirrorFetchRequestsDesc = prometheus.NewDesc("kmirror_mirror_fetch_requests_total",
		"Fetch responses this broker's fetchers received from a mirror's source cluster.",
		[]string{"mirror"}, nil)
	mirrorFetchFailuresDesc = prometheus.NewDesc("kmirror_mirror_fetch_failures_total",
		"Fetch requests to a mirror's source cluster that failed as a whole (connection, timeout).",
		[]string{"mirror"}, nil)
	mirrorFetchBytesDesc = prometheus.NewDesc("kmirror_mirror_fetch_bytes_total",
		"Record bytes in the fetch responses from a mirror's source cluster.",
		[]string{"mirror"}, nil)
	mirrorThrottleDesc = prometheus.NewDesc("kmirror_mirror_throttle_seconds_total",
		"Time this broker's mirror fetchers waited for the mirror.replication.throttled.rate limiter (summed over fetchers).",
		nil, nil)
	mirrorThrottleRateDesc = prometheus.NewDesc("kmirror_mirror_throttle_rate_bytes",
		"mirror.replication.throttled.rate in force on this broker, in bytes per second (0: unlimited).",
		nil, nil)
	mirrorSyncAgeDesc = prometheus.NewDesc("kmirror_mirror_sync_age_seconds",
		"Time since a mirror's sync of a kind (configs, partitions, group-offsets, acls) last succeeded; reported by the broker running the mirror's sync, absent before a first success.",
		[]string{"mirror", "kind"}, nil)
	mirrorSyncFailingDesc = prometheus.NewDesc("kmirror_mirror_sync_failing",
		"1 when the last attempt of a mirror's sync of a kind failed, else 0; reported by the broker running the mirror's sync.",
		[]string{"mirror", "kind"}, nil)
	mirrorSyncErrorsDesc = prometheus.NewDesc("kmirror_mirror_sync_errors_total",
		"Failed attempts of a mirror's sync, by kind, on this broker (from 0 on the broker running the sync).",
		[]string{"mirror", "kind"}, nil)
)

// failoverBuckets span one partition's failover (an epoch bump through the
// controller, a truncation, two state writes and a barrier append: tens of
// milliseconds) to a slow one retrying its steps.
var failoverBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// mirrorStates are the values of the state label, UNKNOWN excluded (a
// driver whose state is not yet read is not reported).
var mirrorStates = []wire.MirrorPartitionState{
	wire.MirrorStatePreparing, wire.MirrorStateMirroring, wire.MirrorStatePausing, wire.MirrorStatePaused,
	wire.MirrorStateStopping, wire.MirrorStateStopped, wire.MirrorStateFailed,
}

// syncKey names one mirror's sync of one kind.
type syncKey struct{ mirror, kind string }

// managerStats are the Manager's own metric state.
type managerStats struct {
	failover *prometheus.HistogramVec

	mu sync.Mutex
	// sources are the sources not closed yet; retired holds, per mirror,
	// the fetch totals of its closed sources, so that the mirror's
	// counters keep growing across a source's replacement.
	sources    map[*source]struct{}
	retired    map[string]replication.FetchStats
	syncErrors map[syncKey]uint64
}

func newManagerStats() *managerStats {
	return &managerStats{
		failover: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kmirror_mirror_failover_duration_seconds",
			Help:    "Time a mirrored partition took from entering STOPPING to STOPPED (its failover), on the broker that completed it; a failover taken over from another broker counts from the takeover.",
			Buckets: failoverBuckets,
		}, []string{"mirror"}),
		sources:    map[*source]struct{}{},
		retired:    map[string]replication.FetchStats{},
		syncErrors: map[syncKey]uint64{},
	}
}

// sourceOpened tracks a new source.
func (st *managerStats) sourceOpened(s *source) {
	st.mu.Lock()
	st.sources[s] = struct{}{}
	st.mu.Unlock()
}

// sourceClosed moves a closed source's fetch totals to its mirror's
// retired ones; f is its fetchers (nil if it never fetched).
func (st *managerStats) sourceClosed(s *source, f *replication.Manager) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.sources[s]; !ok {
		return
	}
	delete(st.sources, s)
	if f != nil {
		st.retired[s.name] = addFetchStats(st.retired[s.name], f.Stats())
	}
}

func addFetchStats(a, b replication.FetchStats) replication.FetchStats {
	return replication.FetchStats{Responses: a.Responses + b.Responses, Failures: a.Failures + b.Failures, Bytes: a.Bytes + b.Bytes}
}

// syncFailed counts a failed sync attempt.
func (st *managerStats) syncFailed(mirror, kind string) {
	st.mu.Lock()
	st.syncErrors[syncKey{mirror, kind}]++
	st.mu.Unlock()
}

// failoverProgress follows a persisted transition of d's partition for the
// failover histogram: a failover starts when STOPPING is entered (or
// written again by a new leader) and ends at STOPPED; FAILED on the way
// (a failing step) does not restart the clock.
func (d *driver) failoverProgress(from, to wire.MirrorPartitionState, now time.Time) {
	s := d.stats
	s.mu.Lock()
	defer s.mu.Unlock()
	switch to {
	case wire.MirrorStateStopping:
		if s.failoverStart.IsZero() {
			s.failoverStart = now
		}
	case wire.MirrorStateStopped:
		if from == wire.MirrorStateStopping && !s.failoverStart.IsZero() {
			d.m.stats.failover.WithLabelValues(d.key.Mirror).Observe(now.Sub(s.failoverStart).Seconds())
		}
		s.failoverStart = time.Time{}
	case wire.MirrorStateFailed:
	default:
		s.failoverStart = time.Time{}
	}
}

// Collector returns the manager's Prometheus collector.
func (m *Manager) Collector() prometheus.Collector { return managerCollector{m} }

type managerCollector struct{ m *Manager }

// Describe implements prometheus.Collector.
func (c managerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{mirrorPartitionStateDesc, mirrorPartitionLagDesc, mirrorPartitionLagSecondsDesc,
		mirrorPartitionSourceHWDesc, mirrorPartitionSourceHWAgeDesc, mirrorPartitionBytesDesc, mirrorPartitionRecordsDesc, mirrorPartitionStallsDesc,
		mirrorFetchRequestsDesc, mirrorFetchFailuresDesc, mirrorFetchBytesDesc, mirrorThrottleDesc, mirrorThrottleRateDesc,
		mirrorSyncAgeDesc, mirrorSyncFailingDesc, mirrorSyncErrorsDesc} {
		ch <- d
	}
	c.m.stats.failover.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c managerCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	now := m.cfg.Now()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	for _, v := range m.describeLocal(nil) {
		l := []string{v.mirror, v.tp.Topic, strconv.FormatInt(int64(v.tp.Partition), 10)}
		for _, s := range mirrorStates {
			x := 0.0
			if s == v.status.State {
				x = 1
			}
			gauge(mirrorPartitionStateDesc, x, append(l, s.String())...)
		}
		if hw := v.stats.SourceHW; hw >= 0 {
			gauge(mirrorPartitionSourceHWDesc, float64(hw), l...)
			if v.leo >= 0 {
				gauge(mirrorPartitionLagDesc, float64(max(0, hw-v.leo)), l...)
			}
		}
		if !v.stats.Lag.hwAt.IsZero() {
			gauge(mirrorPartitionSourceHWAgeDesc, max(0, now.Sub(v.stats.Lag.hwAt).Seconds()), l...)
		}
		if secs, ok := v.stats.Lag.seconds(v.stats.SourceHW, v.leo, now); ok {
			gauge(mirrorPartitionLagSecondsDesc, secs, l...)
		}
		counter(mirrorPartitionBytesDesc, float64(v.stats.Bytes), l...)
		counter(mirrorPartitionRecordsDesc, float64(v.stats.Records), l...)
		counter(mirrorPartitionStallsDesc, float64(v.stats.Stalls), l...)
	}

	img := m.image()
	mirrors := map[string]bool{}
	for _, name := range img.Mirrors() {
		mirrors[name] = true
	}
	totals := map[string]replication.FetchStats{}
	m.stats.mu.Lock()
	for name, st := range m.stats.retired {
		if !mirrors[name] {
			delete(m.stats.retired, name) // a deleted mirror's counters go with it
			continue
		}
		totals[name] = st
	}
	var live []*source
	for s := range m.stats.sources {
		live = append(live, s)
	}
	syncErrs := map[syncKey]uint64{}
	for k, n := range m.stats.syncErrors {
		if !mirrors[k.mirror] {
			delete(m.stats.syncErrors, k)
			continue
		}
		syncErrs[k] = n
	}
	m.stats.mu.Unlock()
	for _, s := range live {
		s.mu.Lock()
		f := s.fetchers
		s.mu.Unlock()
		if f != nil && mirrors[s.name] {
			totals[s.name] = addFetchStats(totals[s.name], f.Stats())
		}
	}
	for name, st := range totals {
		counter(mirrorFetchRequestsDesc, float64(st.Responses), name)
		counter(mirrorFetchFailuresDesc, float64(st.Failures), name)
		counter(mirrorFetchBytesDesc, float64(st.Bytes), name)
	}
	counter(mirrorThrottleDesc, m.limiter.ThrottledTime().Seconds())
	gauge(mirrorThrottleRateDesc, float64(max(0, m.limiter.Rate())))

	for name := range mirrors {
		sts, ok := m.syncs.status(name)
		if !ok {
			continue
		}
		// The sync's counters are reported from 0 on, so that the
		// broker running it shows them before a first failure.
		for _, k := range SyncKinds {
			if _, ok := syncErrs[syncKey{name, k}]; !ok {
				syncErrs[syncKey{name, k}] = 0
			}
		}
		for _, st := range sts {
			failing := 0.0
			if st.lastError != "" {
				failing = 1
			}
			gauge(mirrorSyncFailingDesc, failing, name, st.kind)
			if !st.lastSuccess.IsZero() {
				gauge(mirrorSyncAgeDesc, max(0, now.Sub(st.lastSuccess).Seconds()), name, st.kind)
			}
		}
	}
	for k, n := range syncErrs {
		counter(mirrorSyncErrorsDesc, float64(n), k.mirror, k.kind)
	}
	m.stats.failover.Collect(ch)
}
