package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"time"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage/producerstate"
)

// Log compaction (cleanup.policy=compact), Kafka's LogCleaner. A cleaning
// pass over one log:
//
//  1. Under the log's lock, takes a view: the segment list (each segment
//     referenced, so retention or truncation cannot close files under the
//     cleaner), the truncation generation, the active producers, and the
//     cleanable range [firstDirty, firstUncleanable) — from the cleaner
//     checkpoint up to the base of the segment holding the first offset that
//     must not be cleaned: min(last stable offset (which is at most the high
//     watermark), active segment base, first dirty segment with records
//     newer than min.compaction.lag.ms).
//  2. Builds the offset map (key → latest offset) from the dirty section,
//     skipping aborted transactions. A map that fills up ends the mapped
//     section at the first record that did not fit (mapEnd); the rest is
//     cleaned by the next pass.
//  3. Rewrites the segments from the log's first one up to the one holding
//     mapEnd-1, in groups that fit one segment (segment.bytes, index size,
//     offsets representable from the group's base), into .cleaned segments
//     through batchFilter, and swaps each group in with replaceSegments —
//     after checking, under the lock, that the log was not truncated and
//     still holds the group (else the pass is abandoned: its map may describe
//     records that no longer exist).
//  4. Returns mapEnd, the new cleaner checkpoint (first dirty offset).
//
// Invariants the pass keeps: offsets never change (batches keep their base
// and last offsets; removed records leave gaps); nothing at or above
// firstUncleanable is touched; for every key the record with the greatest
// offset that is not part of an aborted transaction survives (a tombstone
// until its batch's delete horizon has passed); transaction markers survive
// while any batch of their transaction may remain; the last batch of every
// active producer survives (possibly emptied); control batches other than
// transaction markers survive unchanged. A crash at any moment leaves the
// old segments or the new ones (see segment_swap.go and batchFilter.groupEnd).

// errCleaningAborted ends a cleaning pass that must not finish: the cleaner
// is stopping, or the log changed under it (truncation, retention). The log
// is unchanged by the groups not yet swapped in; the pass is redone later.
var errCleaningAborted = errors.New("storage: log cleaning aborted")

// cleanStats counts what one cleaning pass did.
type cleanStats struct {
	batchesRead, batchesKept int64
	recordsRead, recordsKept int64
	bytesRead, bytesKept     int64
	keylessDropped           int64
	mapRecords               int64 // keyed records put into the offset map
	mapUtilization           float64
	groups, segments         int
}

// cleaner is the reusable state of one cleaner thread: its offset map (the
// thread's share of log.cleaner.dedupe.buffer.size) and buffers. Not safe
// for concurrent use.
type cleaner struct {
	m      *offsetMap
	abort  <-chan struct{} // closed when the cleaner must stop; nil: never
	logger *slog.Logger
	buf    []byte // batch read buffer
	out    []byte // cleaned batches waiting to be written

	// beforeSwap, if set (tests), runs after a group's cleaned segment is
	// written and before it is swapped in; an error abandons the pass.
	beforeSwap func(l *Log, ns *segment, old []*segment) error
}

// cleanerWriteChunk is how many cleaned bytes are collected before they are
// appended to the new segment.
const cleanerWriteChunk = 1 << 20

func newCleaner(memory int64, loadFactor float64, abort <-chan struct{}, logger *slog.Logger) *cleaner {
	if logger == nil {
		logger = slog.Default()
	}
	return &cleaner{m: newOffsetMap(memory, loadFactor), abort: abort, logger: logger}
}

func (c *cleaner) checkAbort() error {
	select {
	case <-c.abort:
		return errCleaningAborted
	default:
		return nil
	}
}

// cleanOffsets is where a log's next cleaning pass works (Kafka's
// cleanableOffsets and LogToClean), computed from one segment list.
type cleanOffsets struct {
	// firstDirty is the cleaner checkpoint, or the log start offset when
	// there is none or it lies outside [logStart, logEnd] (checkpointReset).
	firstDirty      int64
	checkpointReset bool
	// firstUncleanable is the base of the first segment the pass must not
	// touch (index uncleanableIdx); dirtyIdx indexes the segment holding
	// firstDirty.
	firstUncleanable int64
	uncleanableIdx   int
	dirtyIdx         int
	// cleanBytes are the bytes of the segments below firstDirty,
	// cleanableBytes those of the dirty segments before firstUncleanable.
	cleanBytes, cleanableBytes int64
	// needNow says a dirty record is older than max.compaction.lag.ms.
	needNow bool
}

// ratio is the dirty ratio min.cleanable.dirty.ratio is compared with.
func (o cleanOffsets) ratio() float64 {
	total := o.cleanBytes + o.cleanableBytes
	if total == 0 {
		return 0
	}
	return float64(o.cleanableBytes) / float64(total)
}

// cleanOffsets computes the cleanable range for the cleaner checkpoint
// (-1: none) at nowMs.
func (l *Log) cleanOffsets(checkpoint, nowMs int64) (cleanOffsets, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return cleanOffsets{}, err
	}
	return l.cleanOffsetsLocked(l.segments(), checkpoint, nowMs), nil
}

func (l *Log) cleanOffsetsLocked(segs []*segment, checkpoint, nowMs int64) cleanOffsets {
	cfg := l.Config()
	logStart, leo := l.logStart.Load(), l.LogEndOffset()
	o := cleanOffsets{firstDirty: checkpoint}
	if checkpoint < logStart || checkpoint > leo {
		o.firstDirty, o.checkpointReset = logStart, checkpoint >= 0
	}
	active := len(segs) - 1
	o.dirtyIdx = max(floorSegment(segs, o.firstDirty), 0)
	limit := min(l.LastStableOffset(), segs[active].base)
	if lag := cfg.MinCompactionLagMs; lag > 0 {
		for i := o.dirtyIdx; i < active; i++ {
			if ts, err := segs[i].largestTimestamp(); err != nil || nowMs-ts < lag {
				limit = min(limit, segs[i].base)
				break
			}
		}
	}
	limit = max(limit, o.firstDirty)
	o.uncleanableIdx = min(max(floorSegment(segs, limit), 0), active)
	o.firstUncleanable = segs[o.uncleanableIdx].base
	for i, s := range segs {
		if s.base < o.firstDirty {
			o.cleanBytes += s.size.Load()
		}
		if i >= o.dirtyIdx && i < o.uncleanableIdx {
			o.cleanableBytes += s.size.Load()
		}
	}
	maxLag := max(cfg.MaxCompactionLagMs, 0)
	for i := o.dirtyIdx; i < active && !o.needNow; i++ {
		if ts := firstBatchMaxTimestamp(segs[i]); ts > 0 && nowMs-ts > maxLag {
			o.needNow = true
		}
	}
	return o
}

// firstBatchMaxTimestamp returns the max timestamp of a segment's first
// batch (-1 if none), what max.compaction.lag.ms measures from (Kafka's
// getFirstBatchTimestampForSegments).
func firstBatchMaxTimestamp(s *segment) int64 {
	sc := newHeaderScanner(s.log, 0, s.size.Load())
	defer sc.release()
	if sc.next() {
		return sc.h.MaxTimestamp
	}
	return -1
}

// cleanView is a log as one cleaning pass sees it.
type cleanView struct {
	l        *Log
	segs     []*segment // the log's segments at the start, each referenced
	offsets  cleanOffsets
	truncGen uint64
	cfg      LogConfig
	// producers are the active producers, by id.
	producers map[int64]activeProducer
}

// takeCleanView captures the view of a pass. Release it when done.
func (l *Log) takeCleanView(checkpoint, nowMs int64) (*cleanView, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writableLocked(); err != nil {
		return nil, err
	}
	segs := l.segments()
	v := &cleanView{
		l:         l,
		offsets:   l.cleanOffsetsLocked(segs, checkpoint, nowMs),
		truncGen:  l.truncGen,
		cfg:       l.Config(),
		producers: make(map[int64]activeProducer),
	}
	for _, s := range segs {
		if !s.tryAcquire() {
			v.release() // unreachable: the log holds a reference on each
			return nil, fmt.Errorf("clean %s: segment %d is closed: %w", l.tp, s.base, errCleaningAborted)
		}
		v.segs = append(v.segs, s)
	}
	for _, e := range l.psm.ActiveProducers() {
		p := activeProducer{lastDataOffset: -1, epoch: e.ProducerEpoch}
		if n := len(e.Batches); n > 0 {
			p.lastDataOffset = e.Batches[n-1].LastOffset
		}
		v.producers[e.ProducerID] = p
	}
	return v, nil
}

func (v *cleanView) release() {
	for _, s := range v.segs {
		s.release()
	}
	v.segs = nil
}

// collectAborted returns the aborted transactions overlapping [start, upper)
// from the transaction indexes, from the segment holding start on, until an
// index says no later transaction can overlap (Kafka's
// collectAbortedTransactions).
func (v *cleanView) collectAborted(start, upper int64) ([]producerstate.AbortedTxn, error) {
	var out []producerstate.AbortedTxn
	for i := max(floorSegment(v.segs, start), 0); i < len(v.segs); i++ {
		txns, complete, err := v.segs[i].txn.CollectAborted(start, upper)
		if err != nil {
			return nil, fmt.Errorf("aborted transactions of %s: %w", v.l.tp, err)
		}
		out = append(out, txns...)
		if complete {
			break
		}
	}
	return out, nil
}

// clean runs one cleaning pass over l from the cleaner checkpoint (-1 if
// none) with the clock at now, and returns the new checkpoint. An error
// wrapping errCleaningAborted means the pass was abandoned and should simply
// be retried later; groups swapped in before that stay (they are complete
// cleanings of their segments).
func (c *cleaner) clean(l *Log, checkpoint int64, now time.Time) (int64, cleanStats, error) {
	var st cleanStats
	nowMs := now.UnixMilli()
	v, err := l.takeCleanView(checkpoint, nowMs)
	if err != nil {
		return checkpoint, st, err
	}
	defer v.release()
	o := v.offsets
	if o.dirtyIdx >= o.uncleanableIdx {
		return o.firstDirty, st, nil
	}
	mapEnd, err := c.buildOffsetMap(v, &st)
	if err != nil {
		return checkpoint, st, err
	}
	st.mapUtilization = c.m.utilization()
	// Rewrite every segment holding offsets below mapEnd.
	k := 0
	for k < o.uncleanableIdx && v.segs[k].base < mapEnd {
		k++
	}
	f := &batchFilter{
		m:                 c.m,
		mapEnd:            mapEnd,
		roundEnd:          o.firstUncleanable,
		nowMs:             nowMs,
		deleteRetentionMs: v.cfg.DeleteRetentionMs,
		producers:         v.producers,
		txns:              newCleanerTxns(),
		maxDecompressed:   l.maxDecompressed(),
		stats:             &st,
	}
	for _, g := range groupSegments(v.segs[:k+1], v.cfg) {
		if err := c.cleanGroup(v, g, f); err != nil {
			return checkpoint, st, err
		}
		st.groups++
		st.segments += len(g)
	}
	return mapEnd, st, nil
}

// buildOffsetMap fills the map with the keys of the dirty section, from
// firstDirty up to firstUncleanable, and returns where the mapped section
// ends: firstUncleanable, or the offset of the first keyed record that did
// not fit.
func (c *cleaner) buildOffsetMap(v *cleanView, st *cleanStats) (int64, error) {
	o := v.offsets
	dirty := v.segs[o.dirtyIdx:o.uncleanableIdx]
	var records int64
	for _, s := range dirty {
		err := c.scanDirty(s, o.firstDirty, func(h record.Header, _ int64) (bool, error) {
			if !h.IsControl() {
				records += int64(h.NumRecords)
			}
			return true, nil
		})
		if err != nil {
			return 0, err
		}
	}
	c.m.reset(int(min(records, math.MaxInt32)))
	aborted, err := v.collectAborted(o.firstDirty, o.firstUncleanable)
	if err != nil {
		return 0, err
	}
	txns := newCleanerTxns()
	txns.addAborted(aborted)
	maxDecompressed := v.l.maxDecompressed()
	end := o.firstUncleanable
	for _, s := range dirty {
		err := c.scanDirty(s, o.firstDirty, func(h record.Header, pos int64) (bool, error) {
			if err := c.checkAbort(); err != nil {
				return false, err
			}
			batch, err := c.readBatch(s, h, pos)
			if err != nil {
				return false, err
			}
			if h.IsControl() {
				ctl, hasRecords := controlTypeForCleaner(h, batch)
				_, err := txns.onControl(h, ctl, hasRecords)
				return true, err
			}
			if txns.onData(h) {
				return true, nil // aborted: its keys do not count
			}
			full := false
			err = record.ForEachRecord(batch, maxDecompressed, func(r record.Record) error {
				off := h.BaseOffset + int64(r.OffsetDelta)
				if r.Key == nil || off < o.firstDirty {
					return nil
				}
				if !c.m.put(r.Key, off) {
					full, end = true, off
					return record.ErrStop
				}
				st.mapRecords++
				return nil
			})
			if err != nil {
				return false, fmt.Errorf("map %s at offset %d: %w", s.name(), h.BaseOffset, err)
			}
			return !full, nil
		})
		if err != nil {
			return 0, err
		}
		if end < o.firstUncleanable {
			break
		}
	}
	return end, nil
}

// scanDirty calls fn with the header and position of every batch of s whose
// last offset is at least from, until fn returns false.
func (c *cleaner) scanDirty(s *segment, from int64, fn func(h record.Header, pos int64) (bool, error)) error {
	size := s.size.Load()
	start := int64(0)
	if from > s.base {
		p, _, found, err := s.translate(from, size)
		if err != nil {
			return fmt.Errorf("clean %s: %w", s.name(), err)
		}
		if !found {
			return nil
		}
		start = p
	}
	sc := newHeaderScanner(s.log, start, size)
	defer sc.release()
	for sc.next() {
		if sc.h.LastOffset() < from {
			continue
		}
		more, err := fn(sc.h, sc.batchPos)
		if err != nil || !more {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("clean %s: %w", s.name(), err)
	}
	return nil
}

// readBatch reads the whole batch h at pos of s into the cleaner's buffer
// and checks its CRC: the cleaner rewrites batches, so it must not launder a
// corrupt one into a valid-looking copy.
func (c *cleaner) readBatch(s *segment, h record.Header, pos int64) ([]byte, error) {
	n := h.Size()
	if cap(c.buf) < n {
		c.buf = make([]byte, n)
	}
	b := c.buf[:n]
	if _, err := s.log.ReadAt(b, pos); err != nil {
		return nil, fmt.Errorf("read %s at %d: %w", s.name(), pos, err)
	}
	if err := record.ValidateCRC(b); err != nil {
		return nil, fmt.Errorf("clean %s: batch at position %d: %w", s.name(), pos, err)
	}
	return b, nil
}

// groupSegments splits segs (the last of which is the one after the
// segments to clean; it only bounds the others' offsets) into runs that one
// cleaned segment can hold (Kafka's groupSegmentsBySize): total size within
// segment.bytes, index entries within segment.index.bytes, and every offset
// representable from the run's base.
func groupSegments(segs []*segment, cfg LogConfig) [][]*segment {
	interval := max(int64(cfg.IndexIntervalBytes), 1)
	entries := func(s *segment) int64 { return s.size.Load()/interval + 1 }
	var groups [][]*segment
	for i := 0; i+1 < len(segs); {
		g := []*segment{segs[i]}
		size, idx := segs[i].size.Load(), entries(segs[i])
		j := i + 1
		for ; j+1 < len(segs); j++ {
			s := segs[j]
			n := s.size.Load()
			if size+n > int64(cfg.SegmentBytes) ||
				(idx+entries(s)+1)*timeIndexEntrySize > int64(cfg.SegmentIndexBytes) ||
				(n > 0 && !canRelativize(segs[i].base, segs[j+1].base-1)) {
				break
			}
			g = append(g, s)
			size += n
			idx += entries(s)
		}
		groups = append(groups, g)
		i = j
	}
	return groups
}

// cleanGroup rewrites one group of segments into a .cleaned segment through
// f and swaps it in.
func (c *cleaner) cleanGroup(v *cleanView, group []*segment, f *batchFilter) error {
	l := v.l
	last := group[len(group)-1]
	ns, err := l.newCleanedSegment(group[0].base)
	if err != nil {
		return fmt.Errorf("clean %s: %w", l.tp, err)
	}
	f.txns.out = ns.txn
	defer func() { f.txns.out = nil }()
	err = c.fillCleaned(v, group, f, ns)
	if err == nil {
		err = c.keepModTime(ns, last)
	}
	if err == nil && c.beforeSwap != nil {
		err = c.beforeSwap(l, ns, group)
	}
	if err == nil {
		err = l.swapCleaned(ns, group, v.truncGen)
	}
	if err != nil && !l.holdsSegment(ns) {
		ns.deleted.Store(true)
		paths := ns.paths()
		ns.release()
		unlinkAll(l.logger, paths)
	}
	return err
}

// fillCleaned writes the group's batches that f keeps into ns.
func (c *cleaner) fillCleaned(v *cleanView, group []*segment, f *batchFilter, ns *segment) error {
	// The group's last segment is never the active one: a segment follows.
	next := v.segs[len(v.segs)-1].base
	for i, s := range v.segs[:len(v.segs)-1] {
		if s == group[len(group)-1] {
			next = v.segs[i+1].base
		}
	}
	lastNonEmpty := 0
	for i, s := range group {
		if s.size.Load() > 0 {
			lastNonEmpty = i
		}
	}
	groupEnd, err := group[lastNonEmpty].readNextOffset()
	if err != nil {
		return fmt.Errorf("clean %s: %w", group[lastNonEmpty].name(), err)
	}
	f.groupEnd = groupEnd
	defer func() { f.inLastSegment = false }()
	out := c.out[:0]
	defer func() { c.out = out[:0] }()
	for i, s := range group {
		upper := next
		if i+1 < len(group) {
			upper = group[i+1].base
		}
		aborted, err := v.collectAborted(s.base, upper)
		if err != nil {
			return err
		}
		f.txns.addAborted(aborted)
		f.inLastSegment, f.keptInLast = i == lastNonEmpty, false
		err = s.forEachBatch(func(h record.Header, batch []byte) error {
			if err := c.checkAbort(); err != nil {
				return err
			}
			if err := record.ValidateCRC(batch); err != nil {
				return fmt.Errorf("clean %s: batch at offset %d: %w", s.name(), h.BaseOffset, err)
			}
			var err error
			if out, err = f.filter(out, h, batch); err != nil {
				return fmt.Errorf("clean %s: %w", s.name(), err)
			}
			if len(out) >= cleanerWriteChunk {
				err = ns.appendBatches(out)
				out = out[:0]
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	return ns.appendBatches(out)
}

// keepModTime seals the cleaned segment and gives its .log the modification
// time of the last segment it replaces, as Kafka does (time-based retention
// falls back to it for batches without timestamps).
func (c *cleaner) keepModTime(ns, last *segment) error {
	if err := ns.seal(); err != nil {
		return err
	}
	st, err := last.log.Stat()
	if err != nil {
		return err
	}
	return os.Chtimes(ns.paths()[0], time.Time{}, st.ModTime())
}

// swapCleaned swaps a cleaned segment in for old, unless the log was
// truncated since the view was taken (the offset map may describe records
// that are gone, so dropped records might have been the last of their key)
// or no longer holds every one of old as an inactive segment (retention
// removed some): then it fails with errCleaningAborted.
func (l *Log) swapCleaned(ns *segment, old []*segment, truncGen uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.truncGen != truncGen {
		return fmt.Errorf("swap cleaned segment into %s: the log was truncated: %w", l.tp, errCleaningAborted)
	}
	segs := l.segments()
	present := make(map[*segment]bool, len(segs))
	for _, s := range segs[:len(segs)-1] {
		present[s] = true
	}
	for _, s := range old {
		if !present[s] {
			return fmt.Errorf("swap cleaned segment into %s: segment %d is gone: %w", l.tp, s.base, errCleaningAborted)
		}
	}
	return l.replaceSegmentsLocked([]*segment{ns}, old)
}

// holdsSegment reports whether s is part of the log.
func (l *Log) holdsSegment(s *segment) bool {
	for _, x := range l.segments() {
		if x == s {
			return true
		}
	}
	return false
}
