package broker

import (
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The leader side of Kafka's replication throttle, which
// kafka-reassign-partitions.sh --throttle sets up for a reassignment: a
// partition listed in its topic's leader.replication.throttled.replicas
// for this broker ("partition:broker" pairs, or "*") is throttled towards
// followers that are not in its ISR. While a rate is set, the bytes sent
// to such followers for such partitions are measured; while their rate is
// above
// leader.replication.throttled.rate, fetches of such followers get no
// records for those partitions (their high watermark and log start still),
// so the catching-up replicas copy the data at about that rate while the
// in-sync ones are never held back.

// replicationQuota measures the bytes sent for throttled partitions: a
// rate over num samples of size each (replication.quota.window.num and
// .size.seconds), as Kafka's quota metrics measure it. Safe for concurrent
// use.
type replicationQuota struct {
	mu    sync.Mutex
	num   int64
	size  time.Duration
	slots []quotaSlot
}

// quotaSlot is one sample: the bytes of sample period epoch.
type quotaSlot struct {
	epoch int64
	bytes int64
}

func newReplicationQuota(num int32, sizeSeconds int32) *replicationQuota {
	num, sizeSeconds = max(num, 1), max(sizeSeconds, 1)
	return &replicationQuota{num: int64(num), size: time.Duration(sizeSeconds) * time.Second, slots: make([]quotaSlot, num)}
}

// record adds n bytes sent at now.
func (q *replicationQuota) record(n int64, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e := now.UnixNano() / int64(q.size)
	s := &q.slots[e%q.num]
	if s.epoch != e {
		*s = quotaSlot{epoch: e}
	}
	s.bytes += n
}

// rate returns the bytes per second over the window at now: the bytes of
// the samples still in it over the time since the oldest began, counted as
// at least num-1 sample lengths so that a first burst is not read as a
// huge rate.
func (q *replicationQuota) rate(now time.Time) float64 {
	r, _ := q.rateAndWindow(now)
	return r
}

// rateAndWindow is rate with the length of time it was measured over.
func (q *replicationQuota) rateAndWindow(now time.Time) (float64, time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e := now.UnixNano() / int64(q.size)
	var total int64
	oldest := e
	for _, s := range q.slots {
		if s.epoch > e-q.num && s.epoch <= e && s.bytes > 0 {
			total += s.bytes
			oldest = min(oldest, s.epoch)
		}
	}
	if total == 0 {
		return 0, 0
	}
	elapsed := now.Sub(time.Unix(0, oldest*int64(q.size)))
	elapsed = max(elapsed, time.Duration(max(q.num-1, 1))*q.size)
	return float64(total) / elapsed.Seconds(), elapsed
}

// exceeded reports whether the measured rate is above limit bytes per
// second (math.MaxInt64, the default, never is).
func (q *replicationQuota) exceeded(limit int64, now time.Time) bool {
	return limit != math.MaxInt64 && q.rate(now) > float64(limit)
}

// throttledReplica reports whether a leader.replication.throttled.replicas
// list ("*", or "partition:broker" pairs) names partition on broker.
func throttledReplica(list []string, partition, broker int32) bool {
	for _, e := range list {
		e = strings.TrimSpace(e)
		if e == "*" {
			return true
		}
		p, b, ok := strings.Cut(e, ":")
		if !ok {
			continue
		}
		pi, err1 := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		bi, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if err1 == nil && err2 == nil && int32(pi) == partition && int32(bi) == broker {
			return true
		}
	}
	return false
}
