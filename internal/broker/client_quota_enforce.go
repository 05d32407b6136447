package broker

import (
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// Enforcement of Kafka's byte-rate client quotas (KIP-13, KIP-55, KIP-219):
// producer_byte_rate bounds the record bytes a client produces to this
// broker, consumer_byte_rate the record bytes it fetches. The quota that
// applies to a request is the most specific one set, in Kafka's order:
//
//	user + client-id, user + default client-id, user,
//	default user + client-id, default user + default client-id, default user,
//	client-id, default client-id
//
// and the rate is measured per the entity that quota names (a user-level
// quota is shared by all of the user's client ids; a default quota is
// applied to each user or client id on its own), over quota.window.num
// samples of quota.window.size.seconds. A request that takes the rate above
// the quota is answered with a throttle time, as Kafka computes it
// (how far over, relative to the quota, times the window measured), and
// the connection reads nothing more for that time after the response
// (KIP-219; the server's connection loop waits).
//
// request_percentage (KIP-124) bounds the time a client's requests keep
// the broker busy, in percent of one thread: 50 is half a second of
// handling per second. Kafka measures the time on its request threads,
// which a request leaves while it waits (purgatory); kmirror charges a
// handler's time less its waits (wire.WaitMeter: long polls, replication,
// rebalances, the controller's and the coordinators' work). Inter-broker
// requests (CLUSTER_ACTION APIs, followers' fetches) are exempt, as in
// Kafka. A request-time throttle is at most one quota window
// (quota.window.size.seconds), as Kafka bounds it. controller_mutation_rate
// is stored and described, not enforced.

// clientQuotas holds the rate of each (quota, user, client id) this broker
// measures. Safe for concurrent use.
type clientQuotas struct {
	num, sizeSeconds int32
	mu               sync.Mutex
	sensors          map[quotaSensorKey]*quotaSensor
	lastSweep        time.Time
}

// quotaSensor is one measured rate and when it was last used: sensors
// idle for quotaSensorExpiry go (as Kafka's quota sensors expire), so that
// many short-lived client ids do not pile up.
type quotaSensor struct {
	rate     *replicationQuota
	lastUsed time.Time
}

// quotaSensorExpiry is how long an unused sensor is kept.
const quotaSensorExpiry = time.Hour

// quotaSensorKey names a measured rate: the quota key and the entity's
// tags ("" for a tag the applying quota leaves out).
type quotaSensorKey struct {
	key, user, client string
}

func newClientQuotas(num, sizeSeconds int32) *clientQuotas {
	return &clientQuotas{num: max(num, 1), sizeSeconds: max(sizeSeconds, 1), sensors: map[quotaSensorKey]*quotaSensor{}}
}

// quotaUser is the user a principal's quotas are set for: its name
// ("alice" for User:alice).
func quotaUser(principal string) string {
	if _, name, ok := strings.Cut(principal, ":"); ok {
		return name
	}
	return principal
}

// applyingQuota returns the bound of key for (user, client) and the tags
// of the entity it is set on, in Kafka's order of precedence; ok is false
// when no quota applies.
func applyingQuota(img *metadata.Image, key, user, client string) (bound float64, tags quotaSensorKey, ok bool) {
	u := func(def bool) metadata.QuotaComponent {
		return metadata.QuotaComponent{Type: metadata.QuotaEntityUser, Name: user, Default: def}
	}
	c := func(def bool) metadata.QuotaComponent {
		return metadata.QuotaComponent{Type: metadata.QuotaEntityClientID, Name: client, Default: def}
	}
	for _, level := range []struct {
		entity       metadata.QuotaEntity
		user, client bool // tags kept
	}{
		{metadata.QuotaEntity{c(false), u(false)}, true, true},
		{metadata.QuotaEntity{c(true), u(false)}, true, true},
		{metadata.QuotaEntity{u(false)}, true, false},
		{metadata.QuotaEntity{c(false), u(true)}, true, true},
		{metadata.QuotaEntity{c(true), u(true)}, true, true},
		{metadata.QuotaEntity{u(true)}, true, false},
		{metadata.QuotaEntity{c(false)}, false, true},
		{metadata.QuotaEntity{c(true)}, false, true},
	} {
		vals, found := img.ClientQuota(level.entity)
		if !found {
			continue
		}
		if v, set := vals[key]; set {
			tags = quotaSensorKey{key: key}
			if level.user {
				tags.user = user
			}
			if level.client {
				tags.client = client
			}
			return v, tags, true
		}
	}
	return 0, quotaSensorKey{}, false
}

// record counts n bytes of a request under quota key and returns how long
// the client must be throttled (0 while within its quota).
func (q *clientQuotas) record(img *metadata.Image, key string, rc *wire.RequestContext, n int64, now time.Time) time.Duration {
	return q.measure(img, key, rc, n, 1, time.Duration(q.num)*time.Duration(q.sizeSeconds)*time.Second, now)
}

// nanosPerPercent converts request_percentage to nanoseconds of handling
// per second: 100 percent is one thread busy all the time.
const nanosPerPercent = float64(time.Second) / 100

// recordRequestTime charges busy, a request's handling time, to the
// client's request_percentage quota and returns the throttle time.
func (q *clientQuotas) recordRequestTime(img *metadata.Image, rc *wire.RequestContext, busy time.Duration, now time.Time) time.Duration {
	return q.measure(img, "request_percentage", rc, int64(max(busy, 0)), nanosPerPercent, time.Duration(q.sizeSeconds)*time.Second, now)
}

// measure counts n units of quota key for the request's client and returns
// how long the client must be throttled (0 while within its quota); a
// quota's value times scale is its bound in units per second, and a
// throttle is at most ceiling.
func (q *clientQuotas) measure(img *metadata.Image, key string, rc *wire.RequestContext, n int64, scale float64, ceiling time.Duration, now time.Time) time.Duration {
	if rc == nil || !img.HasClientQuotas() {
		return 0
	}
	client := ""
	if rc.Header.ClientID != nil {
		client = *rc.Header.ClientID
	}
	bound, tags, ok := applyingQuota(img, key, quotaUser(rc.Principal), client)
	if !ok || bound <= 0 {
		return 0
	}
	bound *= scale
	q.mu.Lock()
	if now.Sub(q.lastSweep) > quotaSensorExpiry/4 {
		q.lastSweep = now
		for k, s := range q.sensors {
			if now.Sub(s.lastUsed) > quotaSensorExpiry {
				delete(q.sensors, k)
			}
		}
	}
	s := q.sensors[tags]
	if s == nil {
		s = &quotaSensor{rate: newReplicationQuota(q.num, q.sizeSeconds)}
		q.sensors[tags] = s
	}
	s.lastUsed = now
	q.mu.Unlock()
	s.rate.record(n, now)
	rate, window := s.rate.rateAndWindow(now)
	if rate <= bound {
		return 0
	}
	// Kafka's throttle time: how far over the quota, relative to it,
	// times the window the rate was measured over, at most the whole
	// window.
	t := time.Duration((rate - bound) / bound * float64(window))
	return min(t, ceiling)
}

// ChargeRequest charges a request's handling time to its client's
// request_percentage quota and returns the throttle time (the server asks
// it for every request of a client listener). Inter-broker requests are
// exempt.
func (b *Broker) ChargeRequest(rc *wire.RequestContext, req kmsg.Request, busy time.Duration) time.Duration {
	if requestQuotaExempt(req) {
		return 0
	}
	return b.quotas.recordRequestTime(b.image(), rc, busy, b.rm.now())
}

// requestQuotaExempt reports whether req is inter-broker traffic, which
// Kafka leaves out of request quotas: an API that needs CLUSTER_ACTION,
// or a follower's fetch.
func requestQuotaExempt(req kmsg.Request) bool {
	if f, ok := req.(*kmsg.FetchRequest); ok {
		return fetchFromFollower(f)
	}
	r, _ := auth.RequiredFor(req.Key())
	op, ok := r.ClusterCheck()
	return ok && op == kmsg.ACLOperationClusterAction
}
