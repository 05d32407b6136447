package group

import (
	"time"

	"github.com/kmirror/kmirror/internal/coordinator"
)

// expiryTimerKey names the shard's offset expiry timer.
const expiryTimerKey = "offsets-expiry"

// maxTombstonesPerBatch bounds one expiry write; the rest follows at once
// in further writes.
const maxTombstonesPerBatch = 1000

func (s *shard) scheduleExpiry(at time.Time) {
	s.ctx.Timers.Schedule(expiryTimerKey, at, func(s *shard) (coordinator.Result, error) {
		return s.expireOffsets(), nil
	})
}

// removal is what a cleanup takes from a group: some offsets, and the group
// itself when it is left Empty without offsets.
type removal struct {
	group   string
	offsets []TopicPartition
	dies    bool
}

// expireOffsets removes the offsets offsets.retention.minutes expired, and
// the Empty groups left without offsets (Kafka's cleanupGroupMetadata).
func (s *shard) expireOffsets() coordinator.Result {
	now := s.now()
	var rms []removal
	n, more := 0, false
	for _, id := range s.groupIDs() {
		g := s.groups[id]
		var exp []TopicPartition
		if o := s.offsets[id]; o != nil {
			exp = ExpiredOffsets(g, o, now, s.c.cfg.OffsetsRetention)
		}
		rm := s.removalOf(id, exp)
		if len(rm.offsets) == 0 && !rm.dies {
			continue
		}
		rms = append(rms, rm)
		n += len(rm.offsets) + 1
		if n >= maxTombstonesPerBatch {
			more = true
			break
		}
	}
	next := now.Add(s.c.cfg.OffsetsRetentionCheckInterval)
	if more {
		next = now
	}
	res := s.cleanup(rms)
	apply := res.Apply
	res.Apply = func(base int64) {
		apply(base)
		s.scheduleExpiry(next)
	}
	res.OnError = func(error) { s.scheduleExpiry(next) }
	return res
}

// removalOf describes removing offsets from group id: the group dies if it
// is Empty and keeps no offsets (committed or pending) afterwards.
func (s *shard) removalOf(id string, offsets []TopicPartition) removal {
	g := s.groups[id]
	rm := removal{group: id, offsets: offsets}
	if g == nil || g.State() != Empty {
		return rm
	}
	remaining, pending := 0, false
	if o := s.offsets[id]; o != nil {
		remaining = o.Len() - len(offsets)
		pending = len(o.pending) > 0
	}
	rm.dies = remaining == 0 && !pending
	return rm
}

// cleanup writes the tombstones of removals (offsets, and the metadata of
// dying groups that had a generation, as Kafka does) and applies them once
// committed.
func (s *shard) cleanup(rms []removal) coordinator.Result {
	var recs []coordinator.Record
	for _, rm := range rms {
		for _, tp := range rm.offsets {
			recs = append(recs, coordinator.Record{Key: EncodeOffsetKey(rm.group, tp)})
		}
		if g := s.groups[rm.group]; rm.dies && g != nil && g.Generation() > 0 {
			recs = append(recs, coordinator.Record{Key: EncodeGroupKey(rm.group)})
		}
	}
	return coordinator.Result{
		Records: recs,
		Apply: func(int64) {
			now := s.now()
			for _, rm := range rms {
				for _, tp := range rm.offsets {
					s.removeOffset(rm.group, tp, false, -1)
				}
				if g := s.groups[rm.group]; rm.dies && g != nil {
					s.install(rm.group, g.Handle(now, &s.c.machine, DeleteEvent{}))
				}
			}
		},
	}
}
