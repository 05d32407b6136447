package storage

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Read returns whole batches starting with the one that contains offset (or
// the first one after it, across compaction gaps), up to maxBytes in total
// (but at least one batch when minOneBatch, even if larger), never past the
// isolation's bound: the log end offset (FetchLogEnd), the high watermark
// (FetchHighWatermark) or the last stable offset (FetchTxnCommitted, which
// also lists the aborted transactions overlapping the returned range).
//
// offset at or beyond the bound (but within the log) gives an empty result;
// offset outside [logStart, logEnd] is an error wrapping
// kerr.OffsetOutOfRange. The result's chunks stay valid until Release, even
// if retention or truncation removes their segments meanwhile. Read does not
// wait for appends (nor their fsyncs).
func (l *Log) Read(offset int64, maxBytes int64, isolation FetchIsolation, minOneBatch bool) (*ReadResult, error) {
	l.readMu.RLock()
	defer l.readMu.RUnlock()
	for range maxReadAttempts {
		res, retry, err := l.readOnce(offset, maxBytes, isolation, minOneBatch)
		if !retry {
			return res, err
		}
	}
	return nil, fmt.Errorf("read %s at offset %d: segments kept disappearing: %w", l.tp, offset, ErrClosed)
}

// maxReadAttempts bounds the retries of a read racing retention (each retry
// sees a newer segment list, so one or two suffice; only a closed log keeps
// failing).
const maxReadAttempts = 16

// readOnce makes one attempt; retry is true when a segment it needed was
// removed by retention between loading the segment list and using it.
func (l *Log) readOnce(offset, maxBytes int64, isolation FetchIsolation, minOneBatch bool) (res *ReadResult, retry bool, err error) {
	end := l.end.Load()
	logStart := l.logStart.Load()
	hw := min(l.hw.Load(), end.offset)
	lso := min(lastStable(l.firstUnstable.Load(), hw, logStart), hw)
	segs := l.segments()
	res = &ReadResult{HighWatermark: hw, LastStableOffset: lso, LogStartOffset: logStart, LogEndOffset: end.offset, FirstOffset: -1}
	if offset < logStart || offset > end.offset {
		return nil, false, fmt.Errorf("read %s at offset %d: the log has [%d, %d]: %w", l.tp, offset, logStart, end.offset, kerr.OffsetOutOfRange)
	}
	bound := end.offset
	switch isolation {
	case FetchHighWatermark:
		bound = hw
	case FetchTxnCommitted:
		bound = lso
	}
	if offset >= bound {
		return res, false, nil
	}
	i := floorSegment(segs, offset)
	if i < 0 {
		// Retention removed the segment after we loaded the log start.
		return nil, false, fmt.Errorf("read %s at offset %d: below the first segment: %w", l.tp, offset, kerr.OffsetOutOfRange)
	}
	remaining := maxBytes
	defer func() {
		if err != nil || retry {
			res.Release()
		}
	}()
	// Where the returned range ends: segment index and position.
	lastIdx, lastEnd, lastSegEnd := -1, int64(0), int64(0)
	for ; i < len(segs); i++ {
		s := segs[i]
		if s.base >= bound || (len(res.Chunks) > 0 && remaining <= 0) {
			break
		}
		if !s.tryAcquire() {
			return res, true, nil
		}
		segEnd := s.size.Load()
		isEnd := s == end.seg
		if isEnd {
			segEnd = end.pos
		}
		// In segments after the first, every batch is past offset, so this
		// finds the segment's first batch.
		startPos, h, found, err := s.translate(offset, segEnd)
		if err != nil {
			s.release()
			return res, false, fmt.Errorf("read %s at offset %d: %w", l.tp, offset, err)
		}
		if !found || h.LastOffset() >= bound {
			s.release()
			if !found && !isEnd {
				continue // a compaction gap: the data resumes in the next segment
			}
			break
		}
		boundPos := segEnd
		if bound < end.offset && (i+1 == len(segs) || segs[i+1].base > bound) {
			p, _, f, err := s.translate(bound, segEnd)
			if err != nil {
				s.release()
				return res, false, fmt.Errorf("read %s at offset %d: %w", l.tp, offset, err)
			}
			if f {
				boundPos = p
			}
		}
		limit := boundPos
		if r := max(remaining, 0); r < boundPos-startPos {
			limit = startPos + r // no overflow for a huge maxBytes
		}
		endPos, err := s.lastBatchEndingBy(startPos, limit, segEnd)
		if err != nil {
			s.release()
			return res, false, fmt.Errorf("read %s at offset %d: %w", l.tp, offset, err)
		}
		if endPos == startPos && minOneBatch && len(res.Chunks) == 0 && startPos+int64(h.Size()) <= boundPos {
			endPos = startPos + int64(h.Size())
		}
		if endPos == startPos {
			s.release()
			break
		}
		if len(res.Chunks) == 0 {
			res.FirstOffset = h.BaseOffset
		}
		res.Chunks = append(res.Chunks, Chunk{File: s.log, Pos: startPos, Len: endPos - startPos})
		res.segs = append(res.segs, s)
		res.Size += endPos - startPos
		remaining -= endPos - startPos
		lastIdx, lastEnd, lastSegEnd = i, endPos, segEnd
		if endPos < segEnd || isEnd {
			break
		}
		// The segment was read to its end: continue with the next one.
	}
	if isolation == FetchTxnCommitted && lastIdx >= 0 {
		// The offset that follows the returned range bounds the aborted
		// transactions to report (Kafka's fetchUpperBoundOffset).
		upper := end.offset
		switch {
		case lastEnd < lastSegEnd:
			if upper, err = segs[lastIdx].baseOffsetAtPos(lastEnd, lastSegEnd); err != nil {
				return res, false, fmt.Errorf("read %s: %w", l.tp, err)
			}
		case lastIdx+1 < len(segs) && segs[lastIdx] != end.seg:
			upper = segs[lastIdx+1].base
		}
		if err := l.collectAborted(segs, res, min(upper, bound)); err != nil {
			return res, false, err
		}
	}
	return res, false, nil
}

// collectAborted fills res.AbortedTxns with the aborted transactions that
// overlap [res.FirstOffset, upper), reading the transaction indexes from the
// segment holding the first offset on until one says the search is complete.
func (l *Log) collectAborted(segs []*segment, res *ReadResult, upper int64) error {
	start := res.FirstOffset
	for i := max(floorSegment(segs, start), 0); i < len(segs); i++ {
		s := segs[i]
		if !s.tryAcquire() {
			continue
		}
		txns, complete, err := s.txn.CollectAborted(start, upper)
		s.release()
		if err != nil {
			return fmt.Errorf("read %s: aborted transactions: %w", l.tp, err)
		}
		res.AbortedTxns = append(res.AbortedTxns, txns...)
		if complete {
			break
		}
	}
	return nil
}
