package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// requestQuota charges a request to its client's request quota
// (request_percentage) and returns how long the client is throttled for
// it; the broker implements it. busy is the handler's time less what it
// spent waiting for other work (wire.WaitMeter), Kafka's "request thread
// time". It is asked only for kmsg responses: a handler that streams its
// response (Fetch) charges itself before it encodes the throttle time.
type requestQuota interface {
	ChargeRequest(rc *wire.RequestContext, req kmsg.Request, busy time.Duration) time.Duration
}

// chargeRequest charges a request answered with resp (nil for a produce
// with acks=0) and raises the response's throttle time to the request
// quota's, as Kafka answers with the larger of a request's byte-rate and
// request-time throttles.
func (e *endpoint) chargeRequest(rc *wire.RequestContext, req kmsg.Request, resp wire.Response, busy time.Duration) {
	if _, stream := resp.(*wire.StreamResponse); stream {
		return
	}
	d := e.quota.ChargeRequest(rc, req, busy)
	t, ok := resp.(interface {
		kmsg.ThrottleResponse
		kmsg.SetThrottleResponse
	})
	if !ok {
		return
	}
	if ms := int32(d / time.Millisecond); ms > 0 {
		if cur, _ := t.Throttle(); ms > cur {
			t.SetThrottle(ms)
		}
	}
}
