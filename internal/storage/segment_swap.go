package storage

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/kmirror/kmirror/internal/record"
)

// This file is the segment API log compaction (the cleaner, cleaner*.go)
// builds on. Its protocol, Kafka's:
//
//  1. Pick inactive segments to clean from l.segments() (never the active,
//     last one; only below the last stable offset for transactional data).
//  2. Read their batches with segment.forEachBatch.
//  3. Write the survivors, offsets unchanged (gaps are fine), into one or
//     more new segments made by l.newCleanedSegment(base) — files named
//     <base>.log.cleaned etc. — with segment.appendBatches; record the aborted
//     transactions it keeps in the new segment's txn index (seg.txn.Append).
//  4. l.replaceSegments(newSegs, oldSegs) swaps them in crash-safely.
//
// A crash at any point is repaired on the next open: .cleaned files are
// deleted (the cleaning is redone), complete .swap segments replace the
// segments they cover (see cleanLeftovers).

// newCleanedSegment creates an empty segment at base whose files carry the
// .cleaned suffix, for the cleaner to fill.
func (l *Log) newCleanedSegment(base int64) (*segment, error) {
	return createSegmentWithSuffix(l.Dir(), base, l.Config(), l.now(), 0, l.logger, CleanedFileSuffix)
}

// forEachBatch calls fn with every batch of the segment, in order. The
// slice is valid only during the call. Reading stops at the first error.
func (s *segment) forEachBatch(fn func(h record.Header, batch []byte) error) error {
	size := s.size.Load()
	var buf []byte
	for pos := int64(0); pos < size; {
		var hb [record.HeaderSize]byte
		if _, err := s.log.ReadAt(hb[:], pos); err != nil {
			return fmt.Errorf("read %s at %d: %w", s.name(), pos, err)
		}
		h, err := record.ParseHeader(hb[:])
		if err != nil {
			return fmt.Errorf("read %s at %d: %w", s.name(), pos, err)
		}
		n := int64(h.Size())
		if n > size-pos {
			return fmt.Errorf("read %s at %d: %w", s.name(), pos, errScanCorrupt)
		}
		if int64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		b := buf[:n]
		if _, err := s.log.ReadAt(b, pos); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read %s at %d: %w", s.name(), pos, err)
		}
		if err := fn(h, b); err != nil {
			return err
		}
		pos += n
	}
	return nil
}

// appendBatches appends whole batches keeping their offsets (which must
// increase, start at or after the segment's end, and be representable from
// its base) to a segment that is not part of a log yet (the cleaner's
// output).
func (s *segment) appendBatches(buf []byte) error {
	var infos []batchInfo
	next := s.nextOffset
	for rest := buf; len(rest) > 0; {
		b, r, err := record.NextBatch(rest)
		if err != nil {
			return err
		}
		h, _ := record.ParseHeader(b)
		if h.BaseOffset < next || !canRelativize(s.base, h.LastOffset()) {
			return fmt.Errorf("append to %s: batch %d..%d does not fit after %d: %w", s.name(), h.BaseOffset, h.LastOffset(), next, record.ErrCorrupt)
		}
		infos = append(infos, batchInfo{base: h.BaseOffset, last: h.LastOffset(), maxTs: h.MaxTimestamp, size: int64(len(b))})
		next = h.NextOffset()
		rest = r
	}
	if len(infos) == 0 {
		return nil
	}
	return s.append(buf, infos, nil, false, time.Time{})
}

// replaceSegments swaps the cleaner's new segments (suffix .cleaned) in for
// old segments of the log, Kafka's replaceSegments: the new segments are
// sealed, synced and renamed .swap; the log switches to them (readers of the
// old ones keep them until released); the old segments are renamed .deleted
// (unlinked later); the .swap suffix is dropped. The old segments must be
// inactive and contiguous, and the new ones must cover no offsets outside
// them.
func (l *Log) replaceSegments(newSegs, oldSegs []*segment) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.replaceSegmentsLocked(newSegs, oldSegs)
}

// replaceSegmentsLocked is replaceSegments for a caller that holds l.mu: the
// cleaner checks in the same critical section that the log was not
// truncated and still holds oldSegs (see Log.swapCleaned).
func (l *Log) replaceSegmentsLocked(newSegs, oldSegs []*segment) error {
	if err := l.writableLocked(); err != nil {
		return err
	}
	sort.Slice(newSegs, func(i, j int) bool { return newSegs[i].base < newSegs[j].base })
	segs := l.segments()
	old := make(map[*segment]bool, len(oldSegs))
	for _, s := range oldSegs {
		old[s] = true
	}
	if old[segs[len(segs)-1]] {
		return fmt.Errorf("replace segments of %s: the active segment cannot be replaced", l.tp)
	}
	for _, s := range newSegs {
		if err := s.seal(); err != nil {
			return err
		}
		if err := s.flush(); err != nil {
			return err
		}
		if err := s.changeSuffix(CleanedFileSuffix, SwapFileSuffix); err != nil {
			return err
		}
	}
	if err := syncDir(l.Dir()); err != nil {
		return err
	}
	var next []*segment
	for _, s := range segs {
		if !old[s] {
			next = append(next, s)
		}
	}
	next = append(next, newSegs...)
	sort.Slice(next, func(i, j int) bool { return next[i].base < next[j].base })
	l.setSegments(next)
	l.removeSegmentsLocked(oldSegs)
	for _, s := range newSegs {
		if err := s.changeSuffix(SwapFileSuffix, ""); err != nil {
			l.failed = err
			return err
		}
	}
	return syncDir(l.Dir())
}
