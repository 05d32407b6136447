package storage

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/kmirror/kmirror/internal/record"
)

// recoveryChunk is how much of a segment recovery reads at a time; a batch
// larger than this is read whole (its size is bounded by the bytes actually
// in the file).
const recoveryChunk = 1 << 20

// recover validates the segment's .log from its first byte, as Kafka's
// LogSegment.recover does after an unclean shutdown: every batch must be
// whole, have magic 2, a valid CRC and header, offsets above minOffset (the
// previous segment's end) and above the previous batch, representable from
// the base offset. The file is cut at the first batch that is not; the
// offset and time indexes are rebuilt and the transaction index is reset
// (onBatch refills it). onBatch is called with each valid batch in order
// (the slice is only valid during the call).
//
// It returns the number of bytes cut and, if any, why.
func (s *segment) recover(minOffset, indexCapacity int64, onBatch func(h record.Header, batch []byte) error) (cut int64, reason error, err error) {
	st, err := s.log.Stat()
	if err != nil {
		return 0, nil, err
	}
	fileSize := st.Size()
	if err := s.resetIndexes(indexCapacity); err != nil {
		return 0, nil, err
	}
	if err := s.txn.Reset(); err != nil {
		return 0, nil, err
	}
	ix, err := s.indexes()
	if err != nil {
		return 0, nil, err
	}

	buf := make([]byte, 0, min(fileSize, recoveryChunk))
	var bufStart int64 // file position of buf[0]
	// window returns the n bytes at pos, reading more of the file as needed.
	window := func(pos, n int64) ([]byte, error) {
		if pos >= bufStart && pos+n <= bufStart+int64(len(buf)) {
			return buf[pos-bufStart : pos-bufStart+n], nil
		}
		want := max(n, min(recoveryChunk, fileSize-pos))
		if int64(cap(buf)) < want {
			buf = make([]byte, want)
		}
		buf = buf[:want]
		got, err := s.log.ReadAt(buf, pos)
		buf, bufStart = buf[:got], pos
		if int64(got) < n {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return buf[:n], nil
	}

	next := max(minOffset, s.base)
	var pos, since int64
	maxTs, offMax := int64(-1), s.base
	for pos < fileSize {
		if fileSize-pos < record.HeaderSize {
			reason = fmt.Errorf("%d bytes at the end are a partial batch header", fileSize-pos)
			break
		}
		hb, err := window(pos, record.HeaderSize)
		if err != nil {
			return 0, nil, err
		}
		h, perr := record.ParseHeader(hb)
		if perr != nil {
			reason = perr
			break
		}
		size := int64(h.Size())
		if size > fileSize-pos {
			reason = fmt.Errorf("batch of %d bytes but only %d left in the file", size, fileSize-pos)
			break
		}
		batch, err := window(pos, size)
		if err != nil {
			return 0, nil, err
		}
		if verr := record.ValidateCRC(batch); verr != nil {
			reason = verr
			break
		}
		if h.BaseOffset < next || h.LastOffsetDelta < 0 || h.BaseOffset > math.MaxInt64-int64(h.LastOffsetDelta)-1 {
			reason = fmt.Errorf("batch offsets %d..%d do not follow %d", h.BaseOffset, h.LastOffset(), next-1)
			break
		}
		if !canRelativize(s.base, h.LastOffset()) {
			reason = fmt.Errorf("batch offsets %d..%d are not representable from base offset %d", h.BaseOffset, h.LastOffset(), s.base)
			break
		}
		if h.MaxTimestamp > maxTs {
			maxTs, offMax = h.MaxTimestamp, h.LastOffset()
		}
		if since > s.interval {
			if _, err := ix.off.append(h.LastOffset(), pos); err != nil {
				return 0, nil, err
			}
			if err := ix.time.maybeAppend(maxTs, offMax, false); err != nil {
				return 0, nil, err
			}
			since = 0
		}
		since += size
		if err := onBatch(h, batch); err != nil {
			return 0, nil, err
		}
		pos += size
		next = h.NextOffset()
	}
	if reason != nil {
		zeros, err := s.zeroTail(pos, fileSize)
		if err != nil {
			return 0, nil, err
		}
		if zeros {
			// Zeros written ahead of the data (segment_warm.go), or pages
			// the crash left unwritten: no data, nothing corrupt.
			reason = nil
		}
	}
	if pos < fileSize {
		if err := s.log.Truncate(pos); err != nil {
			return 0, nil, fmt.Errorf("truncate corrupt segment %s: %w", s.name(), err)
		}
	}
	s.size.Store(pos)
	s.preallocated = false
	s.warmReset(pos)
	s.nextOffset = s.base
	if pos > 0 {
		s.nextOffset = next
	}
	if err := ix.time.maybeAppend(maxTs, offMax, true); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	s.maxTs, s.offsetOfMaxT, s.maxTsLoaded = maxTs, offMax, true
	s.mu.Unlock()
	s.bytesSinceIndex = since
	s.rollTs = rollTsUnknown
	return fileSize - pos, reason, nil
}

// resetIndexes replaces the indexes with empty ones of the given capacity.
func (s *segment) resetIndexes(capacity int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ix := s.idx.Load(); ix != nil {
		ix.off.f.closeNoTrim()
		ix.time.f.closeNoTrim()
		s.idx.Store(nil)
	}
	for _, p := range []string{s.offPath, s.timePath} {
		if err := removeIfExists(p); err != nil {
			return err
		}
	}
	s.indexCap = capacity
	off, err := openOffsetIndex(s.offPath, s.base, capacity)
	if err != nil {
		return err
	}
	tm, err := openTimeIndex(s.timePath, s.base, capacity)
	if err != nil {
		off.f.closeNoTrim()
		return err
	}
	s.idx.Store(&segmentIndexes{off: off, time: tm})
	return nil
}

// zeroTail reports whether the file holds only zero bytes from pos to end,
// a tail that recovery cuts without calling it corrupt. Tails longer than
// two warmChunks are not read: warming ahead never leaves one.
func (s *segment) zeroTail(pos, end int64) (bool, error) {
	if end-pos > 2*warmChunk {
		return false, nil
	}
	buf := make([]byte, end-pos)
	n, err := s.log.ReadAt(buf, pos)
	if int64(n) < end-pos {
		if err == nil || errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("read the tail of segment %s: %w", s.name(), err)
	}
	for _, b := range buf {
		if b != 0 {
			return false, nil
		}
	}
	return true, nil
}
