package broker

import (
	"strings"
	"sync"
	"time"

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
// (KIP-219; the server's connection loop waits). request_percentage and
// the other keys are stored and described, not enforced.

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
	return min(t, time.Duration(q.num)*time.Duration(q.sizeSeconds)*time.Second)
}
