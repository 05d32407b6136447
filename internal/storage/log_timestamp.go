package storage

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/record"
)

// TimestampOffset answers a ListOffsets query.
type TimestampOffset struct {
	// Timestamp of the record found, -1 for the special queries.
	Timestamp int64
	Offset    int64
	// LeaderEpoch of the batch holding the offset, -1 if unknown.
	LeaderEpoch int32
}

// Special timestamps of ListOffsets.
const (
	LatestTimestamp        = -1
	EarliestTimestamp      = -2
	MaxTimestamp           = -3
	EarliestLocalTimestamp = -4
)

// OffsetForTimestamp answers ListOffsets: for a timestamp, the first offset
// (>= the log start) whose record timestamp is >= ts; for LatestTimestamp
// the log end offset with the latest epoch; for EarliestTimestamp (and
// EarliestLocalTimestamp) the log start offset with its epoch; for
// MaxTimestamp the first record holding the largest timestamp. ok is false
// when no record qualifies. The caller bounds the answer by the high
// watermark or last stable offset as the isolation level requires.
func (l *Log) OffsetForTimestamp(ts int64) (TimestampOffset, bool, error) {
	switch ts {
	case LatestTimestamp:
		leo := l.LogEndOffset()
		e, ok := l.LatestEpoch()
		if !ok {
			e = -1
		}
		return TimestampOffset{Timestamp: -1, Offset: leo, LeaderEpoch: e}, true, nil
	case EarliestTimestamp, EarliestLocalTimestamp:
		ls := l.LogStartOffset()
		e, ok := l.epochs.epochForOffset(ls)
		if !ok {
			e = -1
		}
		return TimestampOffset{Timestamp: -1, Offset: ls, LeaderEpoch: e}, true, nil
	}
	if ts < 0 && ts != MaxTimestamp {
		return TimestampOffset{}, false, fmt.Errorf("list offsets of %s: unsupported timestamp %d: %w", l.tp, ts, kerr.InvalidRequest)
	}
	l.readMu.RLock()
	defer l.readMu.RUnlock()
	end := l.end.Load()
	logStart := l.logStart.Load()
	segs := l.segments()
	segEnd := func(s *segment) int64 {
		if s == end.seg {
			return end.pos
		}
		return s.size.Load()
	}
	if ts == MaxTimestamp {
		var best *segment
		bestTs := int64(-1)
		for _, s := range segs {
			if !s.tryAcquire() {
				continue
			}
			mts, _, err := s.maxTimestamp()
			if err == nil && s.base < logStart {
				// Only the records from the log start on count.
				mts, err = s.maxTimestampFrom(logStart, segEnd(s))
			}
			if err == nil && mts > bestTs {
				if best != nil {
					best.release()
				}
				best, bestTs = s, mts
				continue
			}
			s.release()
			if err != nil {
				return TimestampOffset{}, false, err
			}
		}
		if best == nil {
			return TimestampOffset{}, false, nil
		}
		defer best.release()
		return best.findOffsetByTimestamp(bestTs, logStart, segEnd(best), l.maxDecompressed())
	}
	for _, s := range segs {
		if !s.tryAcquire() {
			continue
		}
		mts, _, err := s.maxTimestamp()
		if err != nil || mts < ts {
			s.release()
			if err != nil {
				return TimestampOffset{}, false, err
			}
			continue
		}
		r, ok, err := s.findOffsetByTimestamp(ts, logStart, segEnd(s), l.maxDecompressed())
		s.release()
		if err != nil || ok {
			return r, ok, err
		}
	}
	return TimestampOffset{}, false, nil
}

// findOffsetByTimestamp returns the first record of the segment (below end)
// with offset >= startingOffset and timestamp >= ts.
func (s *segment) findOffsetByTimestamp(ts, startingOffset, end int64, maxDecompressed int) (TimestampOffset, bool, error) {
	ix, err := s.indexes()
	if err != nil {
		return TimestampOffset{}, false, err
	}
	_, o := ix.time.lookup(ts)
	io, pos := ix.off.lookup(max(o, startingOffset), end)
	r, ok, err := s.searchTimestampFrom(io, pos, ts, startingOffset, end, maxDecompressed)
	if err != nil && io >= 0 && s.indexBroken(err) {
		return s.searchTimestampFrom(-1, 0, ts, startingOffset, end, maxDecompressed)
	}
	return r, ok, err
}

// searchTimestampFrom scans batches from the index entry (entryOffset, pos)
// for the first record with offset >= startingOffset and timestamp >= ts.
func (s *segment) searchTimestampFrom(entryOffset, pos, ts, startingOffset, end int64, maxDecompressed int) (TimestampOffset, bool, error) {
	sc := newIndexedScanner(s.log, entryOffset, pos, end)
	defer sc.release()
	for sc.next() {
		h := sc.h
		if h.MaxTimestamp < ts || h.LastOffset() < startingOffset {
			continue
		}
		batch := make([]byte, h.Size())
		if _, err := s.log.ReadAt(batch, sc.batchPos); err != nil {
			return TimestampOffset{}, false, err
		}
		var found TimestampOffset
		ok := false
		err := record.ForEachRecord(batch, maxDecompressed, func(r record.Record) error {
			off := h.BaseOffset + int64(r.OffsetDelta)
			rts := h.BaseTimestamp + r.TimestampDelta
			if h.TimestampType() == record.LogAppendTime {
				rts = h.MaxTimestamp
			}
			if off >= startingOffset && rts >= ts {
				found, ok = TimestampOffset{Timestamp: rts, Offset: off, LeaderEpoch: h.PartitionLeaderEpoch}, true
				return record.ErrStop
			}
			return nil
		})
		if err != nil {
			return TimestampOffset{}, false, fmt.Errorf("search %s by timestamp: %w", s.name(), err)
		}
		if ok {
			if found.LeaderEpoch < 0 {
				found.LeaderEpoch = -1
			}
			return found, true, nil
		}
	}
	return TimestampOffset{}, false, sc.Err()
}

// maxTimestampFrom returns the largest max timestamp of the batches below end
// that hold offsets >= from (-1 if none).
func (s *segment) maxTimestampFrom(from, end int64) (int64, error) {
	pos, _, found, err := s.translate(from, end)
	if err != nil || !found {
		return -1, err
	}
	sc := newHeaderScanner(s.log, pos, end)
	defer sc.release()
	mts := int64(-1)
	for sc.next() {
		mts = max(mts, sc.h.MaxTimestamp)
	}
	return mts, sc.Err()
}
