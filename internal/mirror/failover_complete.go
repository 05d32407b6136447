package mirror

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// failoverReporter tells the controller about the REMOVED topics whose
// partitions this broker's drivers brought to STOPPED, so that it records
// the failover as complete (mirror.name "<m>.stopped": the topic is then an
// ordinary one, writable under any leader without reading __mirror_state).
// The controller checks every partition's persisted state; a report made
// while other partitions still fail over is answered INVALID_REQUEST and
// dropped, since the last partition to stop reports again. Reports that
// found no controller, or states that could not be read, are retried with a
// growing pause while the topic is still REMOVED in this broker's image.
//
// Reports of one topic are coalesced: many partitions stopping together
// cost one report per round, not one each.
type failoverReporter struct {
	m    *Manager
	wake chan struct{}
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	closed  bool
	pending map[string]*failoverReport // by topic
}

// failoverReport is one topic to report.
type failoverReport struct {
	id      metadata.Uuid
	mirror  string
	due     time.Time
	backoff time.Duration
}

// Pacing of the retries of a report that did not get an answer.
const (
	failoverReportMinBackoff = 200 * time.Millisecond
	failoverReportMaxBackoff = 30 * time.Second
)

func newFailoverReporter(m *Manager) *failoverReporter {
	r := &failoverReporter{
		m: m, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		pending: map[string]*failoverReport{},
	}
	go r.run()
	return r
}

// close stops the reporter and waits for it.
func (r *failoverReporter) close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	close(r.stop)
	<-r.done
}

// report queues a topic whose partition a driver of this broker holds
// STOPPED.
func (r *failoverReporter) report(topic string, id [16]byte, mirror string) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	if p, ok := r.pending[topic]; ok && p.id == metadata.Uuid(id) {
		p.due = time.Time{} // a new partition stopped: report at once
	} else {
		r.pending[topic] = &failoverReport{id: id, mirror: mirror}
	}
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *failoverReporter) run() {
	defer close(r.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := r.round()
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if !next.IsZero() {
			timer.Reset(max(time.Until(next), time.Millisecond))
		}
		select {
		case <-r.stop:
			return
		case <-r.wake:
		case <-timer.C:
		}
	}
}

// round sends the reports that are due and returns when the next one is
// (zero: none pending).
func (r *failoverReporter) round() time.Time {
	now := time.Now()
	r.mu.Lock()
	due := map[string]failoverReport{}
	for t, p := range r.pending {
		if !p.due.After(now) {
			due[t] = *p
		}
	}
	r.mu.Unlock()
	if r.m.deps.Controller == nil {
		return time.Time{}
	}
	for topic, p := range due {
		err := r.send(topic, p)
		r.mu.Lock()
		cur, ok := r.pending[topic]
		switch {
		case !ok || cur.id != p.id || !cur.due.Equal(p.due):
			// Reported again meanwhile: that report stands.
		case err == nil || errors.Is(err, kerr.InvalidRequest) || errors.Is(err, kerr.UnknownTopicID) || !r.stillRemoved(topic, p):
			delete(r.pending, topic)
		default:
			cur.backoff = min(max(2*cur.backoff, failoverReportMinBackoff), failoverReportMaxBackoff)
			cur.due = time.Now().Add(cur.backoff)
		}
		r.mu.Unlock()
		if err != nil && !errors.Is(err, kerr.InvalidRequest) {
			r.m.log.Info("reporting a complete mirror failover failed; retrying", "topic", topic, "mirror", p.mirror, "error", err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var next time.Time
	for _, p := range r.pending {
		if next.IsZero() || p.due.Before(next) {
			next = p.due
		}
	}
	return next
}

// send makes one report.
func (r *failoverReporter) send(topic string, p failoverReport) error {
	ctx, cancel := context.WithTimeout(context.Background(), r.m.cfg.RequestTimeout)
	defer cancel()
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := r.m.deps.Controller.CompleteFailover(ctx, topic, p.id, p.mirror)
	if err == nil {
		r.m.log.Info("mirror failover recorded as complete", "topic", topic, "mirror", p.mirror)
	}
	return err
}

// stillRemoved reports whether the topic is still REMOVED from the mirror
// in the broker's image (a report about anything else is moot).
func (r *failoverReporter) stillRemoved(topic string, p failoverReport) bool {
	r.m.mu.Lock()
	img := r.m.img
	r.m.mu.Unlock()
	ti, ok := img.Topic(topic)
	if !ok || ti.ID != p.id {
		return false
	}
	raw, _ := img.Config(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: topic}, metadata.MirrorNameConfig)
	mirror, m := wire.ParseMirrorName(raw)
	return mirror == p.mirror && m == wire.MembershipRemoved
}
