package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage/producerstate"
)

// segment is the part of a partition's log that starts at one base offset:
// NNNNNNNNNNNNNNNNNNNN.log (v2 batches back to back, nothing else) with its
// .index, .timeindex and .txnindex.
//
// Invariants:
//   - The .log bytes below size are whole batches with strictly increasing
//     offsets, all >= base and representable as base + int32.
//   - Index entries point below size (lookups also bound them by the size a
//     reader saw, since entries may be published after the bytes).
//   - size only grows while the segment is active, except through
//     truncateTo, which runs under the Log's lock with readers excluded.
//
// Concurrency: append, truncateTo, seal and recovery run under the owning
// Log's lock. Reads (translate, readAt, maxTimestamp, indexes) may run
// concurrently with an append; they see the bytes below the size they load.
// A segment is reference counted: the Log holds one reference while the
// segment is part of it and every read result holds one while it may use the
// file; the files are closed when the last reference goes.
type segment struct {
	base     int64
	interval int64 // index.interval.bytes when the segment was created
	logger   *slog.Logger

	log  *os.File
	size atomic.Int64 // bytes of whole batches published to readers

	mu       sync.Mutex // guards paths, lazy index opening, maxTs
	logPath  string
	offPath  string
	timePath string
	indexCap int64 // capacity of the indexes while active; 0 when inactive
	idx      atomic.Pointer[segmentIndexes]
	txn      *producerstate.TxnIndex

	maxTsLoaded  bool // guarded by mu
	maxTs        int64
	offsetOfMaxT int64

	// Appender state, guarded by the owning Log's lock.
	nextOffset      int64 // offset after the last batch; base when empty
	bytesSinceIndex int64
	rollTs          int64 // max timestamp of the first append; -1 if none; rollTsUnknown until loaded
	created         time.Time
	jitterMs        int64
	preallocated    bool // the file may extend past size (seal trims it)

	// Warming ahead (segment_warm.go); guarded by the Log's lock.
	warmEnd      int64     // the file holds zeros from size up to here
	warmChunkIdx int64     // the warmChunk the last append ended in
	warmChunkAt  time.Time // when an append first ended in it
	warmFast     bool      // the last chunk filled within warmWindow

	refs    atomic.Int64
	deleted atomic.Bool

	// indexSuspect is set when a lookup found an entry of the active
	// segment's offset index that does not describe its batch (an index
	// loaded from disk after a clean shutdown can be wrong).
	indexSuspect atomic.Bool
}

// segmentIndexes are a segment's memory-mapped indexes, opened lazily for
// inactive segments (so that a log with thousands of segments maps only the
// indexes it uses).
type segmentIndexes struct {
	off  *offsetIndex
	time *timeIndex
}

const rollTsUnknown = math.MinInt64

// batchInfo is what a segment needs to know of each batch it appends.
type batchInfo struct {
	base, last int64
	maxTs      int64
	size       int64
}

func newSegmentStruct(dir string, base, interval int64, logger *slog.Logger) *segment {
	s := &segment{
		base:       base,
		interval:   interval,
		logger:     logger,
		logPath:    segmentPath(dir, base, LogFileSuffix),
		offPath:    segmentPath(dir, base, IndexFileSuffix),
		timePath:   segmentPath(dir, base, TimeIndexFileSuffix),
		nextOffset: base,
		rollTs:     rollTsUnknown,
		maxTs:      -1,
	}
	s.offsetOfMaxT = base
	s.refs.Store(1)
	return s
}

// createSegment creates the empty active segment at base in dir. Stale empty
// files at that base (left by a crash) are replaced; a non-empty .log is an
// error, as in Kafka.
func createSegment(dir string, base int64, cfg LogConfig, now time.Time, jitterMs int64, logger *slog.Logger) (*segment, error) {
	return createSegmentWithSuffix(dir, base, cfg, now, jitterMs, logger, "")
}

// createSegmentWithSuffix is createSegment with suffix appended to every
// file name (the cleaner writes ".cleaned" segments).
func createSegmentWithSuffix(dir string, base int64, cfg LogConfig, now time.Time, jitterMs int64, logger *slog.Logger, suffix string) (*segment, error) {
	s := newSegmentStruct(dir, base, int64(cfg.IndexIntervalBytes), logger)
	s.logPath += suffix
	s.offPath += suffix
	s.timePath += suffix
	if st, err := os.Stat(s.logPath); err == nil && st.Size() > 0 {
		return nil, fmt.Errorf("create segment %s: a non-empty file exists", s.logPath)
	}
	txnPath := segmentPath(dir, base, TxnIndexFileSuffix) + suffix
	for _, p := range []string{s.offPath, s.timePath, txnPath} {
		if err := removeIfExists(p); err != nil {
			return nil, fmt.Errorf("create segment at %d: %w", base, err)
		}
	}
	f, err := os.OpenFile(s.logPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create segment: %w", err)
	}
	s.log = f
	if cfg.Preallocate {
		if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, int64(cfg.SegmentBytes)); err == nil {
			s.preallocated = true
		}
	}
	s.created = now
	s.jitterMs = jitterMs
	s.rollTs = -1
	s.maxTsLoaded = true
	s.indexCap = int64(cfg.SegmentIndexBytes)
	if _, err := s.indexes(); err != nil {
		f.Close()
		return nil, err
	}
	if s.txn, err = producerstate.OpenTxnIndex(txnPath); err != nil {
		s.closeFiles(false)
		return nil, err
	}
	return s, nil
}

// openSegment opens the existing segment at base in dir. Its indexes are
// opened on first use; active gives them their full capacity.
func openSegment(dir string, base int64, cfg LogConfig, now time.Time, logger *slog.Logger) (*segment, error) {
	s := newSegmentStruct(dir, base, int64(cfg.IndexIntervalBytes), logger)
	f, err := os.OpenFile(s.logPath, os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open segment: %w", err)
	}
	s.log = f
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	s.size.Store(st.Size())
	s.created = now
	if s.txn, err = producerstate.OpenTxnIndex(segmentPath(dir, base, TxnIndexFileSuffix)); err != nil {
		f.Close()
		return nil, err
	}
	return s, nil
}

// name identifies the segment in log lines and errors.
func (s *segment) name() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logPath
}

// tryAcquire takes a reference unless the segment was already closed.
func (s *segment) tryAcquire() bool {
	for {
		n := s.refs.Load()
		if n <= 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release drops a reference; the last one closes the files.
func (s *segment) release() {
	if s.refs.Add(-1) == 0 {
		s.closeFiles(s.deleted.Load())
	}
}

// indexes returns the segment's indexes, opening them on first use. An
// index that fails its sanity check is rebuilt from the .log file.
func (s *segment) indexes() (*segmentIndexes, error) {
	if ix := s.idx.Load(); ix != nil {
		return ix, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ix := s.idx.Load(); ix != nil {
		return ix, nil
	}
	ix, err := s.openIndexesLocked()
	if err != nil && (errors.Is(err, ErrCorruptIndex) || errors.Is(err, errScanCorrupt)) {
		s.logger.Warn("rebuilding index of segment", "file", s.logPath, "error", err)
		if ix != nil {
			ix.off.f.closeNoTrim()
			ix.time.f.closeNoTrim()
		}
		ix, err = s.rebuildIndexesLocked()
	}
	if err != nil {
		return nil, fmt.Errorf("indexes of segment %s: %w", s.logPath, err)
	}
	s.idx.Store(ix)
	return ix, nil
}

func (s *segment) openIndexesLocked() (*segmentIndexes, error) {
	off, err := openOffsetIndex(s.offPath, s.base, s.indexCap)
	if err != nil {
		return nil, err
	}
	tcap := s.indexCap
	tm, err := openTimeIndex(s.timePath, s.base, tcap)
	if err != nil {
		off.f.closeNoTrim()
		return nil, err
	}
	ix := &segmentIndexes{off: off, time: tm}
	size := s.size.Load()
	if err := off.sanityCheck(size); err != nil {
		return ix, err
	}
	if err := tm.sanityCheck(math.MaxInt64); err != nil {
		return ix, err
	}
	if tm.f.entries() == 0 && size > 0 {
		// A segment with timestamped batches always has a final time index
		// entry (added when it stopped being active): an empty index lost it.
		sc := newHeaderScanner(s.log, 0, size)
		defer sc.release()
		if sc.next() && sc.h.MaxTimestamp >= 0 {
			return ix, fmt.Errorf("time index %s is empty for a non-empty segment: %w", s.timePath, ErrCorruptIndex)
		}
	}
	return ix, nil
}

// rebuildIndexesLocked recreates both indexes from the batch headers of the
// .log file (whose bytes are trusted).
func (s *segment) rebuildIndexesLocked() (*segmentIndexes, error) {
	for _, p := range []string{s.offPath, s.timePath} {
		if err := removeIfExists(p); err != nil {
			return nil, err
		}
	}
	size := s.size.Load()
	capacity := s.indexCap
	if capacity == 0 {
		// Inactive: room for an entry per interval (at most one per batch).
		capacity = (size/max(s.interval, 1) + 2) * timeIndexEntrySize
	}
	off, err := openOffsetIndex(s.offPath, s.base, capacity)
	if err != nil {
		return nil, err
	}
	tm, err := openTimeIndex(s.timePath, s.base, capacity)
	if err != nil {
		off.f.closeNoTrim()
		return nil, err
	}
	ix := &segmentIndexes{off: off, time: tm}
	sc := newHeaderScanner(s.log, 0, size)
	defer sc.release()
	var since int64
	maxTs, offMax := int64(-1), s.base
	for sc.next() {
		h := sc.h
		if h.MaxTimestamp > maxTs {
			maxTs, offMax = h.MaxTimestamp, h.LastOffset()
		}
		if since > s.interval {
			if _, err := off.append(h.LastOffset(), sc.batchPos); err != nil {
				return nil, err
			}
			if err := tm.maybeAppend(maxTs, offMax, false); err != nil {
				return nil, err
			}
			since = 0
		}
		since += int64(h.Size())
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := tm.maybeAppend(maxTs, offMax, true); err != nil {
		return nil, err
	}
	if s.indexCap == 0 {
		if err := off.f.trim(); err != nil {
			return nil, err
		}
		if err := tm.f.trim(); err != nil {
			return nil, err
		}
	}
	s.maxTs, s.offsetOfMaxT, s.maxTsLoaded = maxTs, offMax, true
	return ix, nil
}

// maxTimestamp returns the largest batch timestamp of the segment and the
// last offset of the batch holding it ((-1, base) if none), loading it from
// the time index on first use.
func (s *segment) maxTimestamp() (ts, offset int64, err error) {
	ix, err := s.indexes()
	if err != nil {
		return -1, s.base, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.maxTsLoaded {
		s.maxTs, s.offsetOfMaxT, _ = ix.time.last()
		s.maxTsLoaded = true
	}
	return s.maxTs, s.offsetOfMaxT, nil
}

// largestTimestamp is what time-based retention compares: the largest
// timestamp, or the .log file's modification time if there is none.
func (s *segment) largestTimestamp() (int64, error) {
	ts, _, err := s.maxTimestamp()
	if err != nil {
		return 0, err
	}
	if ts >= 0 {
		return ts, nil
	}
	st, err := s.log.Stat()
	if err != nil {
		return 0, err
	}
	return st.ModTime().UnixMilli(), nil
}

// append writes buf (the batches described by batches, back to back) at the
// end of the segment, publishes them to readers and adds index entries.
// Caller holds the Log's lock. verify (if not nil) runs after the write and
// before the bytes are published; if it fails, or the write does, the file
// is cut back to its previous size so that it still holds only whole,
// checked batches. A verify failure is returned wrapped in errRefused.
func (s *segment) append(buf []byte, batches []batchInfo, verify func() error, warm bool, now time.Time) error {
	ix, err := s.indexes()
	if err != nil {
		return err
	}
	pos := s.size.Load()
	if warm {
		s.warmAhead(pos, int64(len(buf)), now)
	}
	_, err = s.log.WriteAt(buf, pos)
	if err == nil && verify != nil {
		if verr := verify(); verr != nil {
			err = fmt.Errorf("%w: %w", errRefused, verr)
		}
	}
	if err != nil {
		if terr := s.log.Truncate(pos); terr != nil {
			s.logger.Error("cannot cut a failed append off a segment", "file", s.name(), "position", pos, "error", terr)
			return fmt.Errorf("write to segment %s: %w", s.name(), terr) // an I/O failure, whatever verify said
		}
		s.warmReset(pos)
		if errors.Is(err, errRefused) {
			return err
		}
		return fmt.Errorf("write to segment %s: %w", s.name(), err)
	}
	if pos == 0 {
		s.rollTs = -1
		for _, b := range batches {
			s.rollTs = max(s.rollTs, b.maxTs)
		}
	}
	s.size.Store(pos + int64(len(buf)))

	s.mu.Lock()
	maxTs, offMax := s.maxTs, s.offsetOfMaxT
	s.mu.Unlock()
	p := pos
	for _, b := range batches {
		if b.maxTs > maxTs {
			maxTs, offMax = b.maxTs, b.last
		}
		if s.bytesSinceIndex > s.interval {
			if _, err := ix.off.append(b.last, p); err != nil {
				s.logger.Error("offset index entry refused", "file", s.name(), "error", err)
			}
			if err := ix.time.maybeAppend(maxTs, offMax, false); err != nil {
				s.logger.Error("time index entry refused", "file", s.name(), "error", err)
			}
			s.bytesSinceIndex = 0
		}
		s.bytesSinceIndex += b.size
		p += b.size
	}
	s.mu.Lock()
	s.maxTs, s.offsetOfMaxT, s.maxTsLoaded = maxTs, offMax, true
	s.mu.Unlock()
	s.nextOffset = batches[len(batches)-1].last + 1
	return nil
}

// translate finds the first batch below end whose last offset is >= offset:
// its position and header. found is false if there is none.
func (s *segment) translate(offset, end int64) (pos int64, h record.Header, found bool, err error) {
	ix, err := s.indexes()
	if err != nil {
		return 0, h, false, err
	}
	o, p := ix.off.lookup(offset, end)
	for {
		sc := newIndexedScanner(s.log, o, p, end)
		for sc.next() {
			if sc.h.LastOffset() >= offset {
				pos, h := sc.batchPos, sc.h
				sc.release()
				return pos, h, true, nil
			}
		}
		err := sc.Err()
		sc.release()
		if err != nil && o >= 0 && s.indexBroken(err) {
			o, p = -1, 0 // the entry did not describe a batch: scan from the start
			continue
		}
		return end, h, false, err
	}
}

// indexBroken handles a scan that failed from a position the offset index
// gave: if the index is at fault (the segment scans fine from its start), an
// inactive segment's indexes are rebuilt. It reports whether the caller
// should retry from position 0.
func (s *segment) indexBroken(scanErr error) bool {
	sc := newHeaderScanner(s.log, 0, s.size.Load())
	for sc.next() {
	}
	err := sc.Err()
	sc.release()
	if err != nil {
		return false // the segment itself is damaged
	}
	s.logger.Warn("offset index entry does not point at a batch", "file", s.name(), "error", scanErr)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.indexCap != 0 {
		// Active: the appender uses the index; it rebuilds it under the
		// log's lock before its next write (rebuildSuspectIndexes). Until
		// then lookups fall back to scans.
		s.indexSuspect.Store(true)
		return true
	}
	old := s.idx.Load()
	ix, err := s.rebuildIndexesLocked()
	if err != nil {
		s.logger.Warn("rebuilding index failed", "file", s.logPath, "error", err)
		return true
	}
	s.idx.Store(ix)
	if old != nil {
		old.off.f.closeNoTrim()
		old.time.f.closeNoTrim()
	}
	return true
}

// lastBatchEndingBy returns the largest batch boundary in [from, limit]
// (from itself if the batch at from ends after limit). from must be a batch
// boundary; end bounds the bytes the caller may see.
func (s *segment) lastBatchEndingBy(from, limit, end int64) (int64, error) {
	ix, err := s.indexes()
	if err != nil {
		return 0, err
	}
	o, p := ix.off.lookupPosition(min(limit, end))
	if p <= from {
		o, p = -1, from // from is a known batch start
	}
	for {
		sc := newIndexedScanner(s.log, o, p, end)
		endPos := p
		for sc.next() {
			if sc.pos > limit {
				break
			}
			endPos = sc.pos
		}
		err := sc.Err()
		sc.release()
		if err != nil && o >= 0 && s.indexBroken(err) {
			o, p = -1, from
			continue
		}
		return endPos, err
	}
}

// readNextOffset computes the offset after the last batch (base if empty),
// scanning from the last index entry.
func (s *segment) readNextOffset() (int64, error) {
	ix, err := s.indexes()
	if err != nil {
		return 0, err
	}
	size := s.size.Load()
	o, p, ok := ix.off.last()
	if !ok || p >= size {
		o, p = -1, 0
	}
	for {
		sc := newIndexedScanner(s.log, o, p, size)
		next := s.base
		for sc.next() {
			next = sc.h.NextOffset()
		}
		err := sc.Err()
		sc.release()
		if err != nil && o >= 0 && s.indexBroken(err) {
			o, p = -1, 0
			continue
		}
		return next, err
	}
}

// loadAppendState prepares a segment loaded from disk to be the active one:
// full-capacity indexes, the next offset, the timestamps rolling uses.
func (s *segment) loadAppendState(cfg LogConfig, jitterMs int64) error {
	next, err := s.readNextOffset() // may rebuild a broken index while inactive
	if err != nil {
		return err
	}
	if err := s.makeActive(int64(cfg.SegmentIndexBytes)); err != nil {
		return err
	}
	s.nextOffset = next
	s.jitterMs = jitterMs
	s.rollTs = rollTsUnknown
	return nil
}

// makeActive gives the indexes their full capacity so that appends can add
// entries.
func (s *segment) makeActive(capacity int64) error {
	s.mu.Lock()
	s.indexCap = capacity
	s.mu.Unlock()
	ix, err := s.indexes()
	if err != nil {
		return err
	}
	if err := ix.off.f.resize(capacity); err != nil {
		return err
	}
	return ix.time.f.resize(capacity)
}

// firstBatchTimestamp returns the max timestamp of the segment's first
// append (what time-based rolling measures from); -1 if unknown.
func (s *segment) firstBatchTimestamp() int64 {
	if s.rollTs == rollTsUnknown {
		s.rollTs = -1
		sc := newHeaderScanner(s.log, 0, s.size.Load())
		if sc.next() {
			s.rollTs = sc.h.MaxTimestamp
		}
		sc.release()
	}
	return s.rollTs
}

// shouldRoll is Kafka's LogSegment.shouldRoll: roll before appending
// msgBytes of batches ending at maxOffset with max timestamp maxTs if the
// segment would outgrow segment.bytes, is older than segment.ms (minus the
// segment's jitter), has a full index, or cannot represent maxOffset.
func (s *segment) shouldRoll(cfg LogConfig, msgBytes int64, maxTs, maxOffset int64, now time.Time) (bool, error) {
	size := s.size.Load()
	if size == 0 {
		return false, nil
	}
	if size > int64(cfg.SegmentBytes)-msgBytes {
		return true, nil
	}
	waited := now.Sub(s.created).Milliseconds()
	if first := s.firstBatchTimestamp(); first >= 0 {
		waited = maxTs - first
	}
	if waited > cfg.SegmentMs-s.jitterMs {
		return true, nil
	}
	ix, err := s.indexes()
	if err != nil {
		return false, err
	}
	return ix.off.isFull() || ix.time.isFull() || !canRelativize(s.base, maxOffset), nil
}

// seal prepares the segment to stop being active (roll) or to close: the
// time index gets the segment's largest timestamp as its final entry, both
// indexes and a preallocated .log are trimmed to their contents.
func (s *segment) seal() error {
	if ix := s.idx.Load(); ix != nil {
		s.mu.Lock()
		loaded, ts, off := s.maxTsLoaded, s.maxTs, s.offsetOfMaxT
		s.indexCap = 0
		s.mu.Unlock()
		if loaded {
			if err := ix.time.maybeAppend(ts, off, true); err != nil {
				return err
			}
		}
		if err := ix.off.f.trim(); err != nil {
			return err
		}
		if err := ix.time.f.trim(); err != nil {
			return err
		}
	}
	if s.preallocated {
		if err := s.log.Truncate(s.size.Load()); err != nil {
			return fmt.Errorf("trim segment %s: %w", s.name(), err)
		}
		s.preallocated = false
		s.warmReset(s.size.Load())
	}
	return nil
}

// cutPoint returns where truncating to offset cuts the segment: the
// position of the first batch whose last offset is >= offset (the size if
// none), and the offset the segment then ends at (the end of the last batch
// kept, or the base offset if none is kept).
func (s *segment) cutPoint(offset int64) (pos, end int64, err error) {
	size := s.size.Load()
	pos, _, found, err := s.translate(offset, size)
	if err != nil {
		return 0, 0, err
	}
	if !found {
		pos = size
	}
	end = s.base
	if pos == 0 {
		return pos, end, nil
	}
	ix, err := s.indexes()
	if err != nil {
		return 0, 0, err
	}
	o, p := ix.off.lookupPosition(pos)
	for {
		sc := newIndexedScanner(s.log, o, p, pos)
		for sc.next() {
			end = sc.h.NextOffset()
		}
		err := sc.Err()
		sc.release()
		if err != nil && o >= 0 && s.indexBroken(err) {
			o, p, end = -1, 0, s.base
			continue
		}
		return pos, end, err
	}
}

// truncateTo removes the batches holding offsets >= offset (the batch that
// contains offset included) and the index entries pointing at them, and
// makes the segment the active one. Caller holds the Log's lock and excludes
// readers. It returns the number of bytes removed.
func (s *segment) truncateTo(offset int64, cfg LogConfig, now time.Time) (int64, error) {
	size := s.size.Load()
	pos, end, err := s.cutPoint(offset)
	if err != nil {
		return 0, err
	}
	if err := s.makeActive(int64(cfg.SegmentIndexBytes)); err != nil {
		return 0, err
	}
	ix, err := s.indexes()
	if err != nil {
		return 0, err
	}
	s.bytesSinceIndex = 0
	s.nextOffset = end
	s.rollTs = rollTsUnknown
	if pos == 0 {
		s.created = now
		s.rollTs = -1
	}
	if pos == size {
		return 0, nil
	}
	// Every offset of the removed batches is >= the first removed batch's
	// base, which is >= end.
	cut, err := s.baseOffsetAtPos(pos, size)
	if err != nil {
		return 0, err
	}
	ix.off.truncateToPosition(pos)
	ix.time.truncateTo(cut)
	if err := s.txn.TruncateTo(cut); err != nil {
		return 0, err
	}
	if err := s.log.Truncate(pos); err != nil {
		return 0, fmt.Errorf("truncate segment %s: %w", s.name(), err)
	}
	s.preallocated = false
	s.warmReset(pos)
	s.size.Store(pos)
	// Recompute the largest timestamp: the last time index entry, then the
	// batches after it.
	ts, off, _ := ix.time.last()
	o, p := ix.off.lookup(off, pos)
	for {
		sc := newIndexedScanner(s.log, o, p, pos)
		for sc.next() {
			if sc.h.MaxTimestamp > ts {
				ts, off = sc.h.MaxTimestamp, sc.h.LastOffset()
			}
		}
		err := sc.Err()
		sc.release()
		if err != nil && o >= 0 && s.indexBroken(err) {
			o, p = -1, 0
			continue
		}
		if err != nil {
			return 0, err
		}
		break
	}
	s.mu.Lock()
	s.maxTs, s.offsetOfMaxT, s.maxTsLoaded = ts, off, true
	s.mu.Unlock()
	return size - pos, nil
}

// baseOffsetAtPos returns the base offset of the batch at pos.
func (s *segment) baseOffsetAtPos(pos, end int64) (int64, error) {
	sc := newHeaderScanner(s.log, pos, end)
	defer sc.release()
	if !sc.next() {
		if sc.Err() != nil {
			return 0, sc.Err()
		}
		return 0, fmt.Errorf("no batch at position %d of %s: %w", pos, s.name(), errScanCorrupt)
	}
	return sc.h.BaseOffset, nil
}

// flushData makes the segment's batches durable (not its indexes).
func (s *segment) flushData() error {
	if err := unix.Fdatasync(int(s.log.Fd())); err != nil {
		return fmt.Errorf("sync segment %s: %w", s.name(), err)
	}
	return nil
}

// flush makes the segment's bytes and indexes durable.
func (s *segment) flush() error {
	if err := s.flushData(); err != nil {
		return err
	}
	if ix := s.idx.Load(); ix != nil {
		if err := ix.off.f.flush(); err != nil {
			return err
		}
		if err := ix.time.f.flush(); err != nil {
			return err
		}
	}
	return s.txn.Flush()
}

// changeSuffix renames all files of the segment from <name><oldSuffix> to
// <name><newSuffix> (e.g. "" → ".deleted", ".cleaned" → ".swap"). The .log
// file goes last, so that a .log with the new suffix implies its indexes
// have it too (start-up relies on this to complete interrupted swaps). A
// missing index or txnindex file is not an error.
func (s *segment) changeSuffix(oldSuffix, newSuffix string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	rename := func(p string) (string, error) {
		np := strings.TrimSuffix(p, oldSuffix) + newSuffix
		if err := os.Rename(p, np); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return p, err
		}
		return np, nil
	}
	var err error
	if ix := s.idx.Load(); ix != nil {
		for _, f := range []*indexFile{ix.off.f, ix.time.f} {
			np := strings.TrimSuffix(f.filePath(), oldSuffix) + newSuffix
			if err := f.rename(np); err != nil {
				return err
			}
		}
		s.offPath, s.timePath = ix.off.f.filePath(), ix.time.f.filePath()
	} else {
		if s.offPath, err = rename(s.offPath); err != nil {
			return err
		}
		if s.timePath, err = rename(s.timePath); err != nil {
			return err
		}
	}
	if err := s.txn.Rename(strings.TrimSuffix(s.txn.Path(), oldSuffix) + newSuffix); err != nil {
		return err
	}
	s.logPath, err = rename(s.logPath)
	return err
}

// paths returns the current paths of the segment's files.
func (s *segment) paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return []string{s.logPath, s.offPath, s.timePath, s.txn.Path()}
}

// closeFiles releases the descriptors and mappings. For a live segment the
// indexes are trimmed to their contents first.
func (s *segment) closeFiles(deleted bool) {
	if ix := s.idx.Load(); ix != nil {
		for _, f := range []*indexFile{ix.off.f, ix.time.f} {
			var err error
			if deleted {
				err = f.closeNoTrim()
			} else {
				err = f.close()
			}
			if err != nil {
				s.logger.Warn("closing index", "error", err)
			}
		}
	}
	if s.txn != nil {
		if err := s.txn.Close(); err != nil {
			s.logger.Warn("closing transaction index", "error", err)
		}
	}
	if s.log != nil {
		if err := s.log.Close(); err != nil {
			s.logger.Warn("closing segment", "error", err)
		}
	}
}

// rebuildSuspectIndexes rebuilds the indexes of a segment flagged by
// indexBroken. Caller holds the owning Log's lock (so no append runs);
// lookups holding the old indexes find them empty once closed.
func (s *segment) rebuildSuspectIndexes() error {
	if !s.indexSuspect.Load() {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.idx.Load()
	ix, err := s.rebuildIndexesLocked()
	if err != nil {
		return fmt.Errorf("rebuild indexes of %s: %w", s.logPath, err)
	}
	s.idx.Store(ix)
	if old != nil {
		old.off.f.closeNoTrim()
		old.time.f.closeNoTrim()
	}
	s.indexSuspect.Store(false)
	s.logger.Info("rebuilt the active segment's indexes", "file", s.logPath)
	return nil
}
