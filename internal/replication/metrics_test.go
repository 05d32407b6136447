package replication

import (
	"errors"
	"testing"
	"time"
)

// TestFetchStats: responses, their record bytes, failed requests, the
// largest lag and the time spent throttled are counted.
func TestFetchStats(t *testing.T) {
	lim := NewRateLimiter(100_000)
	r := newRig(t, func(c *Config) { c.Limiter = lim })
	tgt := &memTarget{}
	addX(r, tpX0, 1, tgt, srcA)
	ep := r.endpoint()
	req := r.request(ep)
	b := batch(t, 0, 1, 3)
	// The source is at 10; after this answer the fetch offset is 3.
	r.answer(ep, response(req.Version, 9, ok(topicX, 0, 10, b)), nil)
	r.request(ep)
	st := r.m.Stats()
	if st.Responses != 1 || st.Bytes != uint64(len(b)) || st.Failures != 0 {
		t.Fatalf("stats after one response: %+v, want 1 response of %d bytes", st, len(b))
	}
	if lag := r.m.MaxLag(); lag != 7 {
		t.Fatalf("max lag %d, want 10-3", lag)
	}
	r.answer(ep, nil, errors.New("connection reset"))
	waitFor(t, "the failure counted", func() bool { return r.m.Stats().Failures == 1 })

	// 120 kB against a 100 kB bucket: the next request waits ~0.2 s.
	ep2 := r.endpoint()
	req = r.request(ep2)
	resp := response(req.Version, 0, ok(topicX, 0, 10, nil))
	resp.Topics[0].Partitions[0].RecordBatches = append(batch(t, 3, 1, 1), make([]byte, 120_000)...)
	r.answer(ep2, resp, nil)
	r.request(ep2)
	if w := lim.ThrottledTime(); w < 100*time.Millisecond {
		t.Fatalf("throttled time %v after 20 kB of debt at 100 kB/s", w)
	}
}
