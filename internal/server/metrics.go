package server

import (
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// Request metrics of the node's Kafka listeners (Kafka's RequestMetrics):
//
//	kmirror_request_duration_seconds{api}   histogram, from a request's
//	                                         frame to its response written
//	kmirror_request_errors_total{api,error} error codes in responses
//
// The api label is bounded by the APIs the listeners serve: a request of a
// key no listener serves is counted as api="unknown". The error label is
// Kafka's error name (kerr), or CONNECTION_CLOSED for a request whose
// processing closed the connection (undecodable, handler failure).
//
// The hot path costs one histogram observation (atomics) and, for
// responses that are kmsg structs, a walk of their ErrorCode fields along a
// plan computed once per response type. Fetch answers with a stream of file
// ranges, not a struct: its partition errors come from the broker
// (fetchErrors), read at scrape time.
type requestMetrics struct {
	latency *prometheus.HistogramVec
	errors  *prometheus.CounterVec

	// byKey caches the latency observer of each served key, so that the
	// hot path does not hash label values.
	byKey [maxObservedKey + 1]atomic.Pointer[apiObserver]

	// fetchErrors, if set, returns the broker's count of Fetch partition
	// errors by code (broker.Broker.FetchErrorCounts).
	fetchErrors atomic.Pointer[func() map[int16]uint64]
}

// maxObservedKey bounds the API keys with a cached observer; kmirror's keys
// end at 104.
const maxObservedKey = 255

type apiObserver struct{ prometheus.Observer }

// connectionClosed is the error label of a request that closed its
// connection instead of being answered.
const connectionClosed = "CONNECTION_CLOSED"

// requestLatencyBuckets span a sub-millisecond metadata answer to a long
// poll's full wait (fetch.max.wait.ms defaults to 500 ms; a transactional
// commit may wait for the request timeout).
var requestLatencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

func newRequestMetrics() *requestMetrics {
	return &requestMetrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kmirror_request_duration_seconds",
			Help:    "Time from a Kafka request's arrival to its response written, by API (the count is the number of requests); long polls include their wait.",
			Buckets: requestLatencyBuckets,
		}, []string{"api"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kmirror_request_errors_total",
			Help: "Error codes in Kafka responses, by API and Kafka error name (one per partition or resource that failed); CONNECTION_CLOSED counts requests that closed their connection.",
		}, []string{"api", "error"}),
	}
}

// fetchErrorsDesc describes the broker's Fetch errors, emitted under the
// same name as the counters of other APIs.
var fetchErrorsDesc = prometheus.NewDesc("kmirror_request_errors_total",
	"Error codes in Kafka responses, by API and Kafka error name (one per partition or resource that failed); CONNECTION_CLOSED counts requests that closed their connection.",
	[]string{"api", "error"}, nil)

// Describe implements prometheus.Collector.
func (m *requestMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.latency.Describe(ch)
	m.errors.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *requestMetrics) Collect(ch chan<- prometheus.Metric) {
	m.latency.Collect(ch)
	m.errors.Collect(ch)
	if f := m.fetchErrors.Load(); f != nil {
		fetch := wire.APIName(int16(kmsg.Fetch))
		for code, n := range (*f)() {
			ch <- prometheus.MustNewConstMetric(fetchErrorsDesc, prometheus.CounterValue, float64(n), fetch, errorName(code))
		}
	}
}

// setFetchErrors makes the collector report the broker's Fetch errors.
func (m *requestMetrics) setFetchErrors(f func() map[int16]uint64) {
	if m != nil {
		m.fetchErrors.Store(&f)
	}
}

// observe records one request of key, served (known) or not, that took
// took; resp is its response (nil when none is sent) and failed says the
// request closed the connection.
func (m *requestMetrics) observe(key int16, known bool, took time.Duration, resp wire.Response, failed bool) {
	if m == nil {
		return
	}
	api := "unknown"
	var o prometheus.Observer
	if known {
		api = wire.APIName(key)
		if key >= 0 && key <= maxObservedKey {
			if c := m.byKey[key].Load(); c != nil {
				o = c.Observer
			} else {
				o = m.latency.WithLabelValues(api)
				m.byKey[key].Store(&apiObserver{o})
			}
		}
	}
	if o == nil {
		o = m.latency.WithLabelValues(api)
	}
	o.Observe(took.Seconds())
	if failed {
		m.errors.WithLabelValues(api, connectionClosed).Inc()
		return
	}
	if r, ok := resp.(kmsg.Response); ok {
		forEachErrorCode(r, func(code int16) {
			m.errors.WithLabelValues(api, errorName(code)).Inc()
		})
	}
}

// errorName is Kafka's name of an error code (UNKNOWN_SERVER_ERROR's kin
// for codes kerr does not know, so the label stays bounded).
func errorName(code int16) string {
	if err := kerr.ErrorForCode(code); err != nil {
		if ke, ok := err.(*kerr.Error); ok {
			return ke.Message
		}
	}
	return "UNKNOWN_ERROR_CODE"
}

// forEachErrorCode calls f with every non-zero ErrorCode field of a
// response, at any depth of its structs and slices of structs.
func forEachErrorCode(resp kmsg.Response, f func(int16)) {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	v = v.Elem()
	planFor(v.Type()).walk(v, f)
}

// errPlan says where a struct type keeps error codes: its own ErrorCode
// field and the fields (structs, slices of structs, pointers to structs)
// whose types hold some. A type holding none has an empty plan and is not
// walked.
type errPlan struct {
	code   int // index of an int16 ErrorCode field, -1 if none
	nested []nestedPlan
}

type nestedPlan struct {
	field int
	plan  *errPlan
}

func (p *errPlan) empty() bool { return p.code < 0 && len(p.nested) == 0 }

var errPlans sync.Map // reflect.Type (struct) -> *errPlan

var int16Type = reflect.TypeFor[int16]()

// planFor returns the plan of a struct type, computing it once.
func planFor(t reflect.Type) *errPlan {
	if p, ok := errPlans.Load(t); ok {
		return p.(*errPlan)
	}
	p := buildPlan(t, 0)
	errPlans.Store(t, p)
	return p
}

// maxPlanDepth bounds the nesting followed; kmsg responses nest at most
// four levels of structs.
const maxPlanDepth = 8

func buildPlan(t reflect.Type, depth int) *errPlan {
	p := &errPlan{code: -1}
	if t.Kind() != reflect.Struct || depth > maxPlanDepth {
		return p
	}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		if sf.Name == "ErrorCode" && sf.Type == int16Type {
			p.code = i
			continue
		}
		et := sf.Type
		switch et.Kind() {
		case reflect.Slice, reflect.Pointer:
			et = et.Elem()
		}
		if et.Kind() != reflect.Struct {
			continue
		}
		if np := buildPlan(et, depth+1); !np.empty() {
			p.nested = append(p.nested, nestedPlan{field: i, plan: np})
		}
	}
	return p
}

func (p *errPlan) walk(v reflect.Value, f func(int16)) {
	if p.code >= 0 {
		if c := int16(v.Field(p.code).Int()); c != 0 {
			f(c)
		}
	}
	for _, n := range p.nested {
		fv := v.Field(n.field)
		switch fv.Kind() {
		case reflect.Struct:
			n.plan.walk(fv, f)
		case reflect.Pointer:
			if !fv.IsNil() {
				n.plan.walk(fv.Elem(), f)
			}
		case reflect.Slice:
			for i := range fv.Len() {
				n.plan.walk(fv.Index(i), f)
			}
		}
	}
}

// serves reports whether the endpoint answers key: the request metrics
// label other keys "unknown", which keeps the api label bounded whatever
// clients send. The handler map is fixed once the endpoint is enabled,
// before any request is processed.
func (e *endpoint) serves(key int16) bool {
	if key == int16(kmsg.ApiVersions) {
		return true
	}
	_, ok := e.handlers[key]
	return ok
}
