package mirror

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kmirror/kmirror/internal/broker"
	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
)

// fetchTarget is a mirrored partition as its fetcher sees it
// (replication.Target): appends go to the destination leader's log with the
// source's offsets and epochs, fenced by the leader epoch the partition's
// driver started in, so that a fetcher still running after a leadership
// change cannot write.
type fetchTarget struct {
	p           *broker.Partition
	leaderEpoch int32
	stats       *liveStats
	now         func() time.Time
	onRestart   func(offset int64) // OFFSET_OUT_OF_RANGE restarts (logged by the driver)
	// onEpochAbove is told the log's latest epoch when an append leaves it
	// above leaderEpoch (the driver raises the leader epoch: see
	// epoch_floor.go). It must not block.
	onEpochAbove func(epoch int32)
	// startAt is the log start offset to move up to once the high
	// watermark reaches it: the source's, after restartInsideBatch or when
	// the source's moved up (-1 or 0: none). Owned by the fetcher's
	// goroutine (Append, SetHighWatermark, MaybeIncrementLogStartOffset).
	startAt int64
	// stopped is set when the driver stops fetching the partition (pause,
	// failover): a fetcher that still holds the target — re-added by a
	// source refresh racing the removal — appends nothing more.
	stopped atomic.Bool
}

// errTargetStopped refuses an append after the partition left the
// fetchers.
var errTargetStopped = errors.New("the mirror stopped fetching this partition")

// Append implements replication.Target.
func (t *fetchTarget) Append(batches []byte) (int64, error) {
	if t.stopped.Load() {
		return -1, errTargetStopped
	}
	info, err := t.p.AppendMirrored(batches, t.leaderEpoch)
	if errors.Is(err, storage.ErrUnexpectedAppendOffset) {
		info, err = t.restartInsideBatch(batches, err)
	}
	if err != nil {
		return -1, err
	}
	t.raiseLogStart()
	t.stats.appended(info, t.now())
	if info.LastOffset >= 0 && t.onEpochAbove != nil {
		// Epochs only grow along a log: the latest is the greatest.
		if e, ok := t.LatestEpoch(); ok && e > t.leaderEpoch {
			t.onEpochAbove(e)
		}
	}
	return info.LastOffset, nil
}

// restartInsideBatch appends batches whose first batch starts below the
// log end of an empty log: the source's log start lies inside that batch
// (DeleteRecords, or retention, cut there), and the source returns the
// whole batch to a fetch from its log start. As a follower does with its
// leader's (broker's appendFromLeader), the log restarts at the batch's
// base and takes it as it is; its start then moves back up to the source's
// as soon as the high watermark reaches it (raiseLogStart), so that the
// log matches the source's, start included. Any other case keeps err.
func (t *fetchTarget) restartInsideBatch(batches []byte, err error) (storage.AppendInfo, error) {
	l := t.log()
	if l == nil || l.LogEndOffset() != l.LogStartOffset() {
		return storage.AppendInfo{}, err
	}
	want := l.LogEndOffset()
	b, _, berr := record.NextBatch(batches)
	if berr != nil {
		return storage.AppendInfo{}, err
	}
	h, herr := record.ParseHeader(b)
	if herr != nil || h.BaseOffset >= want || h.LastOffset() < want {
		return storage.AppendInfo{}, err
	}
	if terr := t.p.TruncateFullyInEpoch(h.BaseOffset, t.leaderEpoch); terr != nil {
		return storage.AppendInfo{}, terr
	}
	info, err := t.p.AppendMirrored(batches, t.leaderEpoch)
	if err == nil {
		t.startAt = want
	}
	return info, err
}

// raiseLogStart moves the log start up to startAt once the high watermark
// allows.
func (t *fetchTarget) raiseLogStart() {
	if t.startAt <= 0 {
		return
	}
	if done, err := t.p.RaiseLogStartInEpoch(t.startAt, t.leaderEpoch); done || err != nil {
		t.startAt = -1
	}
}

// Truncate implements replication.Target (a DivergingEpoch answer).
func (t *fetchTarget) Truncate(offset int64) error { return t.p.TruncateInEpoch(offset, t.leaderEpoch) }

// TruncateFullyAndStartAt implements replication.Target: the source no
// longer has our fetch position (retention passed it).
func (t *fetchTarget) TruncateFullyAndStartAt(offset int64) error {
	if t.onRestart != nil {
		t.onRestart(offset)
	}
	return t.p.TruncateFullyInEpoch(offset, t.leaderEpoch)
}

func (t *fetchTarget) log() *storage.Log { return t.p.Log() }

// LogStartOffset implements replication.Target.
func (t *fetchTarget) LogStartOffset() int64 {
	if l := t.log(); l != nil {
		return l.LogStartOffset()
	}
	return 0
}

// LogEndOffset implements replication.Target.
func (t *fetchTarget) LogEndOffset() int64 {
	if l := t.log(); l != nil {
		return l.LogEndOffset()
	}
	return 0
}

// LatestEpoch implements replication.Target.
func (t *fetchTarget) LatestEpoch() (int32, bool) {
	if l := t.log(); l != nil {
		return l.LatestEpoch()
	}
	return -1, false
}

// EndOffsetForEpoch implements replication.Target.
func (t *fetchTarget) EndOffsetForEpoch(epoch int32) (int32, int64) {
	if l := t.log(); l != nil {
		return l.EndOffsetForEpoch(epoch)
	}
	return -1, -1
}

// SetHighWatermark implements replication.Target: the source's high
// watermark is a figure for DescribeMirrors (the destination's own high
// watermark follows its own followers).
func (t *fetchTarget) SetHighWatermark(hw int64) {
	t.raiseLogStart()
	t.stats.sourceHW(hw, t.LogEndOffset(), t.now())
}

// MaybeIncrementLogStartOffset implements replication.Target: the source's
// log start is recorded for DescribeMirrors, and the destination's log
// start follows it up (DeleteRecords or retention on the source), as a
// follower's follows its leader's, once the high watermark has reached it
// (raiseLogStart). DeleteRecords is refused on a mirrored topic, so this is
// how records deleted on the source leave the copy, and the log start
// stays the source's, even inside a batch. A source log start that moves
// down (an unclean election on the source) moves nothing: deleted records
// do not come back.
func (t *fetchTarget) MaybeIncrementLogStartOffset(offset int64) {
	t.stats.sourceLogStart(offset)
	if offset > t.LogStartOffset() && offset > t.startAt {
		t.startAt = offset
		t.raiseLogStart()
	}
}

// liveStats are a partition's mirroring figures for DescribeMirrors and
// the metrics, kept by its leader in memory.
type liveStats struct {
	mu          sync.Mutex
	srcHW       int64
	srcLogStart int64
	lastFetch   time.Time
	lastErr     string
	stateChange time.Time
	lag         lagClock // lag.go
	// failoverStart is when the partition's failover began (metrics.go),
	// zero when none is under way.
	failoverStart time.Time
	// stalledAt is when a stall was last reported (stall.go).
	stalledAt time.Time
	stalls    uint64

	// Running totals of the mirrored appends (metrics.go), outside mu:
	// the fetcher adds to them once per append.
	bytes, records atomic.Uint64
}

func newLiveStats(now time.Time) *liveStats {
	return &liveStats{srcHW: -1, srcLogStart: -1, stateChange: now, lag: newLagClock()}
}

// appended records a mirrored append.
func (s *liveStats) appended(info storage.AppendInfo, now time.Time) {
	s.bytes.Add(uint64(info.Bytes))
	s.records.Add(uint64(info.NumRecords))
	s.mu.Lock()
	s.lastFetch = now
	if info.NumRecords > 0 {
		s.lag.mirrored(info.MaxTimestamp)
	}
	s.mu.Unlock()
}

// sourceHW records the source's high watermark of a fetch response, after
// its records were appended (leo is the log end offset then).
func (s *liveStats) sourceHW(hw, leo int64, now time.Time) {
	s.mu.Lock()
	s.srcHW, s.lastFetch = hw, now
	s.lastErr = ""
	s.lag.observed(hw, leo, now)
	s.mu.Unlock()
}

func (s *liveStats) sourceLogStart(off int64) {
	s.mu.Lock()
	s.srcLogStart = off
	s.mu.Unlock()
}

func (s *liveStats) setError(err string) {
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
}

// stalled counts a stall at now and reports whether it is news: the last
// one was reported at least timeout ago.
func (s *liveStats) stalled(now time.Time, timeout time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stalledAt.IsZero() && now.Sub(s.stalledAt) < timeout {
		return false
	}
	s.stalledAt = now
	s.stalls++
	return true
}

func (s *liveStats) entered(now time.Time) {
	s.mu.Lock()
	s.stateChange = now
	s.mu.Unlock()
}

// statsSnapshot is a copy of liveStats.
type statsSnapshot struct {
	SourceHW, SourceLogStart int64
	LastFetch, StateChange   time.Time
	LastError                string
	Lag                      lagClock
	Bytes, Records           uint64
	Stalls                   uint64
}

func (s *liveStats) snapshot() statsSnapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return statsSnapshot{SourceHW: s.srcHW, SourceLogStart: s.srcLogStart, LastFetch: s.lastFetch, StateChange: s.stateChange,
		LastError: s.lastErr, Lag: s.lag, Bytes: s.bytes.Load(), Records: s.records.Load(), Stalls: s.stalls}
}
