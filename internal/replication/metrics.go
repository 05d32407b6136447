package replication

import (
	"sync/atomic"
	"time"
)

// FetchStats are a Manager's running totals since it was created, for the
// metrics of its owner (the broker's replica fetchers, a mirror's source
// fetchers). They only grow.
type FetchStats struct {
	// Responses counts fetch responses received (and applied).
	Responses uint64
	// Failures counts requests that failed as a whole: no connection, a
	// transport error or timeout (partition errors inside a response are
	// not failures of the request).
	Failures uint64
	// Bytes counts the record bytes of the responses.
	Bytes uint64
}

// fetchCounters are the atomics behind FetchStats: the fetchers add to them
// once per request, never per partition.
type fetchCounters struct {
	responses, failures, bytes atomic.Uint64
}

// Stats returns the manager's running totals.
func (m *Manager) Stats() FetchStats {
	return FetchStats{
		Responses: m.stats.responses.Load(),
		Failures:  m.stats.failures.Load(),
		Bytes:     m.stats.bytes.Load(),
	}
}

// MaxLag returns the largest lag, in offsets, of the manager's partitions:
// the source's high watermark of the last response that carried a
// partition minus the partition's fetch offset (Kafka's MaxLag of the
// replica fetcher manager). 0 without partitions or answers yet.
func (m *Manager) MaxLag() int64 {
	m.mu.Lock()
	fs := make([]*fetcher, 0, len(m.fetchers))
	for _, f := range m.fetchers {
		fs = append(fs, f)
	}
	m.mu.Unlock()
	var lag int64
	for _, f := range fs {
		f.mu.Lock()
		for _, st := range f.parts {
			if st.hw >= 0 {
				lag = max(lag, st.hw-st.fetchOffset)
			}
		}
		f.mu.Unlock()
	}
	return lag
}

// ThrottledTime returns how long fetchers have waited for the limiter in
// total (summed over fetchers: two fetchers waiting one second each count
// two seconds).
func (r *RateLimiter) ThrottledTime() time.Duration {
	return time.Duration(r.waited.Load())
}
