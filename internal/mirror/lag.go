package mirror

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// A mirrored partition's lag is measured against the source's high
// watermark as last learned. The fetchers learn it from every fetch
// response that carries the partition; a partition no response carries
// (paused, failed, or starved by the throttle or by busier partitions of
// its fetch session) would keep an old figure and show a lag that no longer
// grows. So the source's loop asks the source (ListOffsets, latest) for the
// high watermark of every driven partition whose figure is older than
// LagRefreshInterval.
//
// The lag in seconds cannot compare record timestamps: the timestamp of the
// source's newest record is in no response until that record is fetched.
// It is instead how long ago the destination was last known complete: the
// later of (a) the last time a high watermark of the source was observed
// that the local log had reached, and (b) the timestamp of the newest
// mirrored record (records are written in about time order, so everything
// up to it is here). Records missing now were written after that point, so
// the figure bounds from above the age of the oldest of them (the RPO in
// time of a failover now), up to the clock skew between the source's
// producers and this broker.

// lagClock is what a partition's lag in seconds is computed from. It is
// part of liveStats and guarded by its mutex.
type lagClock struct {
	// hwAt is when the source's high watermark was last learned (zero:
	// never); gen counts the fetch responses that brought one, so that a
	// ListOffsets answer sent before a fetch response's is not applied
	// after it.
	hwAt time.Time
	gen  uint64
	// caughtUpAt is when a high watermark learned was at or below the local
	// log end offset (zero: never while this broker leads).
	caughtUpAt time.Time
	// newestTs is the largest batch timestamp mirrored (ms), -1 if none.
	newestTs int64
}

func newLagClock() lagClock { return lagClock{newestTs: -1} }

// observed records a high watermark of a fetch response.
func (c *lagClock) observed(hw, leo int64, now time.Time) {
	c.gen++
	c.hwAt = now
	if leo >= hw {
		c.caughtUpAt = now
	}
}

// mirrored records the largest timestamp of a mirrored append.
func (c *lagClock) mirrored(maxTs int64) {
	c.newestTs = max(c.newestTs, maxTs)
}

// seconds is the lag in seconds at now of a partition whose source high
// watermark is hw and log end offset leo; ok is false when nothing tells
// (the source's high watermark or any reference point is unknown).
func (c lagClock) seconds(hw, leo int64, now time.Time) (float64, bool) {
	if hw < 0 || leo < 0 {
		return 0, false
	}
	if leo >= hw {
		return 0, true
	}
	ref := c.caughtUpAt
	if c.newestTs >= 0 {
		if ts := time.UnixMilli(c.newestTs); ts.After(ref) {
			ref = ts
		}
	}
	if ref.IsZero() {
		return 0, false
	}
	return max(0, now.Sub(ref).Seconds()), true
}

// offsetsAnswered applies a ListOffsets answer asked at `asked` when no
// fetch response brought a high watermark since gen was read.
func (s *liveStats) offsetsAnswered(hw, leo int64, gen uint64, asked time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lag.gen != gen {
		return
	}
	s.srcHW = hw
	s.lag.hwAt = asked
	if leo >= hw {
		s.lag.caughtUpAt = asked
	}
}

// staleFor returns whether the source's high watermark is unknown or older
// than d at now, and the generation to apply an answer at.
func (s *liveStats) staleFor(d time.Duration, now time.Time) (bool, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lag.hwAt.IsZero() || now.Sub(s.lag.hwAt) >= d, s.lag.gen
}

// lagRefreshStates are the states whose lag is kept current: the source
// feeds or will feed them (STOPPING and STOPPED have left the source).
var lagRefreshStates = map[wire.MirrorPartitionState]bool{
	wire.MirrorStatePreparing: true, wire.MirrorStateMirroring: true, wire.MirrorStatePausing: true,
	wire.MirrorStatePaused: true, wire.MirrorStateFailed: true,
}

// staleDriver is a driver whose source high watermark is asked for.
type staleDriver struct {
	d   *driver
	gen uint64
}

// refreshStaleOffsets asks the source for the high watermarks of the
// source's driven partitions that no fetch response brought for
// LagRefreshInterval, and records them. The client routes each partition
// to its source leader. Errors leave the old figures.
func (s *source) refreshStaleOffsets(ctx context.Context) error {
	now := s.m.cfg.Now()
	stale := map[storage.TopicPartition]staleDriver{}
	s.m.mu.Lock()
	for tp, d := range s.m.drivers {
		if d.source != s {
			continue
		}
		st, known, _ := d.snapshot()
		if !known || !lagRefreshStates[st.State] {
			continue
		}
		if old, gen := d.stats.staleFor(s.m.cfg.LagRefreshInterval, now); old {
			stale[tp] = staleDriver{d, gen}
		}
	}
	s.m.mu.Unlock()
	if len(stale) == 0 {
		return nil
	}
	cl, _, err := s.client(ctx)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	idx := map[string]int{}
	for tp := range stale {
		i, ok := idx[tp.Topic]
		if !ok {
			i = len(req.Topics)
			idx[tp.Topic] = i
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = tp.Topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = tp.Partition, -1 // latest: the high watermark
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	asked := s.m.cfg.Now()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("source offsets for the lag: %w", err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			e, ok := stale[storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}]
			if !ok || p.ErrorCode != 0 || p.Offset < 0 {
				continue
			}
			leo := int64(-1)
			if l := e.d.part.Log(); l != nil {
				leo = l.LogEndOffset()
			}
			e.d.stats.offsetsAnswered(p.Offset, leo, e.gen, asked)
		}
	}
	return nil
}

// refreshLag runs refreshStaleOffsets for the source's loop once the
// source is connected (it does not connect for it), bounded by the smaller
// of the request timeout and the refresh interval so that an unresponsive
// source does not hold the loop's metadata refreshes up for long; a failure
// is logged (the old figures stay).
func (s *source) refreshLag() {
	s.mu.Lock()
	connected := s.connected
	s.mu.Unlock()
	if !connected {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, min(s.m.cfg.RequestTimeout, max(s.m.cfg.LagRefreshInterval, time.Second)))
	defer cancel()
	if err := s.refreshStaleOffsets(ctx); err != nil && s.ctx.Err() == nil {
		s.log.Debug("refreshing the source's high watermarks failed", "error", err)
	}
}
