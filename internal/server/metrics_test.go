package server

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceResponse returns a Produce response of n partitions, the listed
// ones failing with code.
func produceResponse(n int, code int16, failing ...int) *kmsg.ProduceResponse {
	r := kmsg.NewPtrProduceResponse()
	t := kmsg.NewProduceResponseTopic()
	t.Topic = "orders"
	for p := range n {
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.Partition = int32(p)
		if slices.Contains(failing, p) {
			rp.ErrorCode = code
		}
		t.Partitions = append(t.Partitions, rp)
	}
	r.Topics = append(r.Topics, t)
	return r
}

func TestForEachErrorCodeWalksNestedResponses(t *testing.T) {
	var got []int16
	forEachErrorCode(produceResponse(5, kerr.NotLeaderForPartition.Code, 1, 3), func(c int16) { got = append(got, c) })
	if want := []int16{kerr.NotLeaderForPartition.Code, kerr.NotLeaderForPartition.Code}; !slices.Equal(got, want) {
		t.Fatalf("codes %v, want %v", got, want)
	}
	// A top-level code and a nested one (OffsetCommit has only nested;
	// DescribeGroups has both levels through its groups).
	dg := kmsg.NewPtrDescribeGroupsResponse()
	g := kmsg.NewDescribeGroupsResponseGroup()
	g.ErrorCode = kerr.GroupAuthorizationFailed.Code
	dg.Groups = append(dg.Groups, g, kmsg.NewDescribeGroupsResponseGroup())
	got = nil
	forEachErrorCode(dg, func(c int16) { got = append(got, c) })
	if !slices.Equal(got, []int16{kerr.GroupAuthorizationFailed.Code}) {
		t.Fatalf("DescribeGroups codes %v", got)
	}
	forEachErrorCode(nil, func(int16) { t.Fatal("a nil response has codes") })
}

// counterValue returns a counter's value from m's collector.
func counterValue(t *testing.T, m *requestMetrics, name string, labels map[string]string) (float64, uint64) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, s := range mf.GetMetric() {
			for _, lp := range s.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			return s.GetCounter().GetValue(), s.GetHistogram().GetSampleCount()
		}
	}
	return 0, 0
}

func TestRequestMetrics(t *testing.T) {
	m := newRequestMetrics()
	m.observe(int16(kmsg.Produce), true, time.Millisecond, produceResponse(4, kerr.NotLeaderForPartition.Code, 0, 2), false)
	m.observe(int16(kmsg.Produce), true, time.Millisecond, produceResponse(4, 0), false)
	m.observe(int16(kmsg.Metadata), true, time.Millisecond, nil, true)
	m.observe(9999, false, time.Millisecond, nil, true)
	m.setFetchErrors(func() map[int16]uint64 { return map[int16]uint64{kerr.OffsetOutOfRange.Code: 3} })

	if _, n := counterValue(t, m, "kmirror_request_duration_seconds", map[string]string{"api": "Produce"}); n != 2 {
		t.Errorf("%d Produce requests observed, want 2", n)
	}
	for _, c := range []struct {
		api, err string
		want     float64
	}{
		{"Produce", "NOT_LEADER_FOR_PARTITION", 2},
		{"Metadata", connectionClosed, 1},
		{"unknown", connectionClosed, 1},
		{"Fetch", "OFFSET_OUT_OF_RANGE", 3},
	} {
		if v, _ := counterValue(t, m, "kmirror_request_errors_total", map[string]string{"api": c.api, "error": c.err}); v != c.want {
			t.Errorf("errors{api=%s,error=%s} = %v, want %v", c.api, c.err, v, c.want)
		}
	}
	if _, n := counterValue(t, m, "kmirror_request_duration_seconds", map[string]string{"api": "unknown"}); n != 1 {
		t.Errorf("%d requests of an unknown key observed, want 1", n)
	}
}

// BenchmarkObserveProduce is the per-request cost of the request metrics
// for a Produce response of 100 partitions without errors.
func BenchmarkObserveProduce(b *testing.B) {
	m := newRequestMetrics()
	resp := produceResponse(100, 0)
	for b.Loop() {
		m.observe(int16(kmsg.Produce), true, time.Millisecond, resp, false)
	}
}

func BenchmarkObserveProduceOne(b *testing.B) {
	m := newRequestMetrics()
	resp := produceResponse(1, 0)
	for b.Loop() {
		m.observe(int16(kmsg.Produce), true, time.Millisecond, resp, false)
	}
}
