package storage

// Invariants of a Log (checked by the tests in invariants_test.go after
// every step of the model and crash tests):
//
//  1. Offsets strictly increase across the batches of the log, in segment
//     order; a segment's batches are >= its base offset and below the next
//     segment's base offset.
//  2. Index entries never point past the segment end (and a reader bounds
//     them by the end it saw, since entries are published after the bytes).
//  3. The leader epoch cache is never ahead of the log: every entry starts
//     at or below the log end offset, and epochs and start offsets increase.
//  4. The producer state equals a replay of the log from its start (or from
//     the snapshot it was loaded from), MIRROR_PID_RESET batches included,
//     at every point: after every append, truncation and restart.
//  5. logStart <= HW <= LEO, and logStart <= LSO <= HW.
//  6. LEO is the offset after the last batch of the active (last) segment,
//     or the active segment's base offset if it is empty.
//  7. recoveryPoint <= LEO, and every batch below the recovery point is
//     durable (fsynced), as are the indexes of the segments wholly below it.
//
// Concurrency: appends, truncation, roll, retention and config changes
// serialise on mu. Readers never take mu, so a read never waits for an
// append's fsync: they load the published state (segment list, end, high
// watermark, log start offset) from atomics and read only bytes below the
// end they loaded. Truncation, the one operation that removes bytes a reader
// might be reading, also takes readMu for writing, and readers hold it for
// reading while they locate their byte ranges (not while the caller sends
// them). Segments are reference counted, so a read result stays valid after
// retention or truncation removed its segment from the log.

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage/producerstate"
)

// Options are the per-open parameters of a Log, most of them read by the
// Manager from the log directory's checkpoint files.
type Options struct {
	// Now is the clock (for timestamps, rolling, retention); nil means
	// time.Now.
	Now func() time.Time
	// Logger receives recovery and retention events; nil means
	// slog.Default(). The Log adds topic and partition fields.
	Logger *slog.Logger
	// RecoveryPoint is the offset below which the log is known to be
	// flushed (recovery-point-offset-checkpoint); 0 if unknown.
	RecoveryPoint int64
	// LogStartOffset is the log start offset (log-start-offset-checkpoint);
	// 0 if unknown. The effective value is at least the first segment's base.
	LogStartOffset int64
	// HighWatermark (replication-offset-checkpoint) is clamped into
	// [logStart, logEnd] on open.
	HighWatermark int64
	// HadCleanShutdown says the log directory holds the clean-shutdown
	// marker: the files are trusted and not recovered.
	HadCleanShutdown bool
	// ProducerIDExpiration is producer.id.expiration.ms (0: one day).
	ProducerIDExpiration time.Duration
	// MaxDecompressedBytes bounds the decompressed size of a batch when the
	// leader validates it (0: record.DefaultMaxDecompressed).
	MaxDecompressedBytes int
	// OnTruncate, if set, is called under the log's lock with the new log
	// end offset after every truncation (TruncateTo, TruncateFullyAndStartAt),
	// so that the Manager moves the cleaner checkpoint back before anything
	// is appended again (Kafka's maybeTruncateCheckpoint).
	OnTruncate func(newEnd int64)
	// OnFlush, if set, is told how long each flush that synced something
	// took (the Manager's flush latency metric).
	OnFlush func(took time.Duration)
}

// AppendOrigin says who produced an append: it decides the validation, as
// Kafka's AppendOrigin does. The values equal producerstate.Origin's.
type AppendOrigin int8

// Append origins.
const (
	// OriginClient is a producer's batches appended by the leader.
	OriginClient = AppendOrigin(producerstate.OriginClient)
	// OriginReplication is a follower's or a mirror's append of batches as
	// the leader (or source cluster) wrote them.
	OriginReplication = AppendOrigin(producerstate.OriginReplication)
	// OriginCoordinator is a leader append of batches written by a
	// coordinator: transaction markers, coordinator records, the
	// MIRROR_PID_RESET of a failing-over mirror.
	OriginCoordinator = AppendOrigin(producerstate.OriginCoordinator)
)

// FetchIsolation bounds what a read may return.
type FetchIsolation int8

// Fetch isolations.
const (
	// FetchLogEnd reads up to the log end offset (followers).
	FetchLogEnd FetchIsolation = iota
	// FetchHighWatermark reads up to the high watermark (READ_UNCOMMITTED
	// consumers).
	FetchHighWatermark
	// FetchTxnCommitted reads up to the last stable offset and reports the
	// aborted transactions of the returned range (READ_COMMITTED consumers).
	FetchTxnCommitted
)

// logEnd is the published end of the log: the log end offset and where it
// is, so that a reader bounds its reads by the bytes of the end it loaded.
type logEnd struct {
	offset int64
	seg    *segment
	pos    int64
}

// Log is the log of one partition in one directory: its segments, indexes,
// leader epoch cache and producer state. See the invariants at the top of
// this file.
type Log struct {
	tp     TopicPartition
	logger *slog.Logger
	now    func() time.Time
	opts   Options

	mu     sync.Mutex
	readMu sync.RWMutex

	dir  atomic.Pointer[string]
	cfg  atomic.Pointer[LogConfig]
	segs atomic.Pointer[[]*segment] // immutable; sorted by base offset
	end  atomic.Pointer[logEnd]

	logStart      atomic.Int64
	hw            atomic.Int64
	firstUnstable atomic.Int64 // math.MaxInt64 when none
	recoveryPoint atomic.Int64
	lastFlushMs   atomic.Int64

	epochs *epochCache
	psm    *producerstate.Manager // guarded by mu

	topicID    [16]byte // guarded by mu
	hasTopicID bool

	truncGen uint64 // guarded by mu; bumped by every truncation
	dirDirty atomic.Bool
	closed   bool  // guarded by mu
	failed   error // guarded by mu: an I/O error left the log unusable for writes

	bg sync.WaitGroup // background flushes started by roll

	delMu   sync.Mutex
	pending map[*time.Timer][]string // files renamed .deleted, waiting for file.delete.delay.ms
}

// TopicPartition returns the partition the log belongs to.
func (l *Log) TopicPartition() TopicPartition { return l.tp }

// Dir returns the partition directory.
func (l *Log) Dir() string { return *l.dir.Load() }

// Config returns the log's configuration.
func (l *Log) Config() LogConfig { return *l.cfg.Load() }

// UpdateConfig replaces the configuration; it applies to later appends,
// rolls and retention passes (existing segments keep their index interval).
func (l *Log) UpdateConfig(cfg LogConfig) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cfg.Store(&cfg)
}

// LogStartOffset returns the first offset a reader may fetch.
func (l *Log) LogStartOffset() int64 { return l.logStart.Load() }

// LogEndOffset returns the offset the next appended batch gets.
func (l *Log) LogEndOffset() int64 { return l.end.Load().offset }

// HighWatermark returns the high watermark set by the partition's owner.
func (l *Log) HighWatermark() int64 { return l.hw.Load() }

// LastStableOffset returns min(first unstable offset, high watermark), never
// below the log start offset: READ_COMMITTED readers see nothing at or
// beyond it.
func (l *Log) LastStableOffset() int64 {
	return lastStable(l.firstUnstable.Load(), l.hw.Load(), l.logStart.Load())
}

func lastStable(firstUnstable, hw, logStart int64) int64 {
	return max(min(firstUnstable, hw), logStart)
}

// RecoveryPoint returns the offset below which the log is flushed.
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint.Load() }

// segments returns the current (immutable) segment list.
func (l *Log) segments() []*segment { return *l.segs.Load() }

func (l *Log) setSegments(s []*segment) { l.segs.Store(&s) }

// active returns the last segment, the one appends go to. Caller holds mu.
func (l *Log) active() *segment {
	s := l.segments()
	return s[len(s)-1]
}

// publishEnd makes the active segment's end visible to readers. Caller
// holds mu.
func (l *Log) publishEnd() {
	a := l.active()
	l.end.Store(&logEnd{offset: a.nextOffset, seg: a, pos: a.size.Load()})
}

// floorSegment returns the index of the last segment with base <= offset,
// or -1.
func floorSegment(segs []*segment, offset int64) int {
	return sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
}

// NumSegments returns the number of segments.
func (l *Log) NumSegments() int { return len(l.segments()) }

// Size returns the total bytes of the log's segments.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segments() {
		n += s.size.Load()
	}
	return n
}

// LatestEpoch returns the latest leader epoch of the epoch cache.
func (l *Log) LatestEpoch() (int32, bool) {
	e, ok := l.epochs.latest()
	return e.Epoch, ok
}

// EpochEntries returns the leader epoch cache, oldest first.
func (l *Log) EpochEntries() []EpochEntry { return l.epochs.entries() }

// EndOffsetForEpoch answers OffsetForLeaderEpoch as Kafka's
// LeaderEpochFileCache.endOffsetFor does: the largest epoch <= epoch that
// the cache knows and the start offset of the next higher epoch (the log end
// offset for the latest epoch). (-1, -1) for epoch -1 or an epoch above
// every known one; (epoch, earliest start offset) for one below the
// earliest known epoch.
func (l *Log) EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64) {
	return l.epochs.endOffsetFor(epoch, l.LogEndOffset())
}

// AssignEpochStartOffset records that epoch starts at offset, which must
// not be beyond the log end (a new leader passes its log end offset).
func (l *Log) AssignEpochStartOffset(epoch int32, offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if leo := l.LogEndOffset(); offset > leo {
		return fmt.Errorf("assign epoch %d at %d to %s: beyond the log end offset %d", epoch, offset, l.tp, leo)
	}
	_, err := l.epochs.assign(epoch, offset)
	return err
}

// ActiveProducers returns the producer state, sorted by producer id
// (DescribeProducers).
func (l *Log) ActiveProducers() []producerstate.Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.psm.ActiveProducers()
}

// RemoveExpiredProducers forgets producers idle for longer than
// producer.id.expiration.ms (the Manager calls it periodically).
func (l *Log) RemoveExpiredProducers() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.psm.RemoveExpiredProducers(l.now())
}

// SetHighWatermark sets the high watermark, clamped to [logStart, logEnd],
// and returns the value kept. It also advances the last stable offset:
// completed transactions whose markers are now below it stop holding it
// back.
func (l *Log) SetHighWatermark(hw int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.setHighWatermarkLocked(hw)
}

func (l *Log) setHighWatermarkLocked(hw int64) int64 {
	hw = min(max(hw, l.logStart.Load()), l.LogEndOffset())
	l.hw.Store(hw)
	l.psm.OnHighWatermarkUpdated(hw)
	l.updateFirstUnstableLocked()
	return hw
}

func (l *Log) updateFirstUnstableLocked() {
	if off, ok := l.psm.FirstUnstableOffset(); ok {
		l.firstUnstable.Store(off)
	} else {
		l.firstUnstable.Store(math.MaxInt64)
	}
}

// TopicID returns the topic id stored in partition.metadata.
func (l *Log) TopicID() ([16]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.topicID, l.hasTopicID
}

// SetTopicID records the topic id in partition.metadata. Changing an
// existing different id is refused, as Kafka does: it means the directory
// belongs to a deleted topic of the same name.
func (l *Log) SetTopicID(id [16]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	if l.hasTopicID {
		if l.topicID == id {
			return nil
		}
		return fmt.Errorf("set topic id of %s to %s: it already has topic id %s", l.tp, FormatUUID(id), FormatUUID(l.topicID))
	}
	if err := writeFileAtomic(filepath.Join(l.Dir(), PartitionMetadataFileName), formatPartitionMetadata(id)); err != nil {
		return fmt.Errorf("write partition metadata of %s: %w", l.tp, err)
	}
	l.topicID, l.hasTopicID = id, true
	return nil
}

// writableLocked reports why the log cannot be changed, if it cannot.
func (l *Log) writableLocked() error {
	if l.closed {
		return fmt.Errorf("%s: %w", l.tp, ErrClosed)
	}
	if l.failed != nil {
		return fmt.Errorf("%s: log failed earlier: %w", l.tp, l.failed)
	}
	return nil
}

// maxDecompressed returns the decompression bound for validation.
func (l *Log) maxDecompressed() int {
	if l.opts.MaxDecompressedBytes > 0 {
		return l.opts.MaxDecompressedBytes
	}
	return record.DefaultMaxDecompressed
}

// removeSegmentsLocked takes segments out of service: their files are
// renamed with the .deleted suffix and unlinked after file.delete.delay.ms;
// their descriptors close when the last reader releases them. The caller
// has already published a segment list without them.
func (l *Log) removeSegmentsLocked(segs []*segment) {
	var files []string
	for _, s := range segs {
		if err := s.changeSuffix("", DeletedFileSuffix); err != nil {
			l.logger.Error("renaming deleted segment", "segment", s.base, "error", err)
		}
		s.deleted.Store(true)
		files = append(files, s.paths()...)
		s.release()
	}
	if len(files) > 0 {
		l.scheduleUnlink(files, time.Duration(l.Config().FileDeleteDelayMs)*time.Millisecond)
	}
}

// scheduleUnlink removes files after delay. Close runs pending removals at
// once (an open descriptor keeps a removed file readable on Linux).
func (l *Log) scheduleUnlink(files []string, delay time.Duration) {
	if delay <= 0 {
		unlinkAll(l.logger, files)
		return
	}
	l.delMu.Lock()
	defer l.delMu.Unlock()
	if l.pending == nil {
		l.pending = make(map[*time.Timer][]string)
	}
	var t *time.Timer
	t = time.AfterFunc(delay, func() {
		l.delMu.Lock()
		fs, ok := l.pending[t]
		delete(l.pending, t)
		l.delMu.Unlock()
		if ok {
			unlinkAll(l.logger, fs)
		}
	})
	l.pending[t] = files
}

// runPendingUnlinks stops the delayed removals and performs them now.
func (l *Log) runPendingUnlinks() {
	l.delMu.Lock()
	var all []string
	for t, fs := range l.pending {
		t.Stop()
		all = append(all, fs...)
	}
	l.pending = nil
	l.delMu.Unlock()
	unlinkAll(l.logger, all)
}

func unlinkAll(logger *slog.Logger, files []string) {
	for _, f := range files {
		if err := removeIfExists(f); err != nil {
			logger.Warn("removing deleted segment file", "file", f, "error", err)
		}
	}
}

// newSegmentLocked creates the segment at base with a fresh roll jitter.
func (l *Log) newSegmentLocked(base int64) (*segment, error) {
	cfg := l.Config()
	var jitter int64
	if cfg.SegmentJitterMs > 0 {
		jitter = rand.Int64N(min(cfg.SegmentJitterMs, cfg.SegmentMs))
	}
	s, err := createSegment(l.Dir(), base, cfg, l.now(), jitter, l.logger)
	if err != nil {
		return nil, err
	}
	l.dirDirty.Store(true)
	return s, nil
}

// ensureDir creates the partition directory.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dir))
}
