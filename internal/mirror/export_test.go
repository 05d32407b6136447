package mirror

import (
	"context"

	"github.com/kmirror/kmirror/internal/storage"
)

// The pause points, for the in-process tests of package mirror_test.
const (
	PauseFetchersRemoved = pauseFetchersRemoved
	PauseLMEPersisted    = pauseLMEPersisted
	PauseBarrierAppended = pauseBarrierAppended
)

// HoldAt makes every driver of the test process that reaches point call
// hold with the driver's context, and go on when it returns. The returned
// function removes the hook.
func HoldAt(point pausePoint, hold func(ctx context.Context)) (remove func()) {
	h := func(ctx context.Context, _ *driver, p pausePoint) {
		if p == point {
			hold(ctx)
		}
	}
	pauseHook.Store(&h)
	return func() { pauseHook.Store(nil) }
}

// LoseFetching takes a partition away from its source's fetchers behind
// its driver's back, as a fetcher that lost it would: the driver still
// shows MIRRORING and nothing fetches (the stall stall.go detects).
func LoseFetching(m *Manager, topic string, partition int32) bool {
	tp := storage.TopicPartition{Topic: topic, Partition: partition}
	m.mu.Lock()
	d := m.drivers[tp]
	m.mu.Unlock()
	if d == nil {
		return false
	}
	s := d.source
	s.mu.Lock()
	e, ok := s.fetching[tp]
	f := s.fetchers
	s.mu.Unlock()
	if !ok || e.addedBroker < 0 || f == nil {
		return false
	}
	f.RemovePartitions(tp)
	return true
}
