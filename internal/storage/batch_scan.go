package storage

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/kmirror/kmirror/internal/record"
)

// headerScanner walks the batch headers of a segment file region whose bytes
// are whole batches (published by an append, or checked by recovery),
// reading the file in small chunks so that a walk over many small batches
// costs few system calls. It does not check CRCs: the bytes were validated
// before they were published.
//
// A header that is structurally impossible (bad magic, a length running past
// the region) ends the walk with an error wrapping ErrCorrupt-like context;
// this only happens if the file changed under us (disk corruption,
// truncation racing a read).
type headerScanner struct {
	r   io.ReaderAt
	pos int64 // position of the next header
	end int64

	buf      []byte
	bufStart int64 // file position of buf[0]
	bufLen   int

	// batchPos and h describe the batch the last successful next returned.
	batchPos int64
	h        record.Header
	err      error

	// expect, if >= 0, is the last offset the first batch must have: the
	// index entry the scan starts from claims so.
	expect int64
	first  bool
}

const scanChunk = 4096

var scanBuffers = sync.Pool{New: func() any { b := make([]byte, scanChunk); return &b }}

// newHeaderScanner scans [pos, end) of r. Call release when done.
func newHeaderScanner(r io.ReaderAt, pos, end int64) *headerScanner {
	b := scanBuffers.Get().(*[]byte)
	return &headerScanner{r: r, pos: pos, end: end, buf: *b, expect: -1, first: true}
}

// newIndexedScanner scans [pos, end) starting from the index entry
// (offset, pos); offset -1 means no entry (pos is a known batch start).
func newIndexedScanner(r io.ReaderAt, offset, pos, end int64) *headerScanner {
	sc := newHeaderScanner(r, pos, end)
	sc.expect = offset
	return sc
}

func (s *headerScanner) release() {
	b := s.buf
	s.buf = nil
	scanBuffers.Put(&b)
}

// next reads the next batch header. It returns false at the end of the
// region or on error (see Err).
func (s *headerScanner) next() bool {
	if s.err != nil || s.pos >= s.end {
		return false
	}
	if s.end-s.pos < record.HeaderSize {
		s.err = fmt.Errorf("%d bytes at position %d are too few for a batch header: %w", s.end-s.pos, s.pos, errScanCorrupt)
		return false
	}
	if s.pos < s.bufStart || s.pos+record.HeaderSize > s.bufStart+int64(s.bufLen) {
		n := int64(len(s.buf))
		if rem := s.end - s.pos; rem < n {
			n = rem
		}
		got, err := s.r.ReadAt(s.buf[:n], s.pos)
		if int64(got) < record.HeaderSize {
			if err == nil || errors.Is(err, io.EOF) {
				err = fmt.Errorf("short read of %d bytes at position %d: %w", got, s.pos, ErrTruncatedDuringRead)
			}
			s.err = err
			return false
		}
		s.bufStart, s.bufLen = s.pos, got
	}
	off := s.pos - s.bufStart
	h, err := record.ParseHeader(s.buf[off : off+record.HeaderSize])
	if err != nil {
		s.err = fmt.Errorf("batch header at position %d: %w", s.pos, err)
		return false
	}
	if int64(h.Size()) > s.end-s.pos {
		s.err = fmt.Errorf("batch at position %d of %d bytes runs past the end %d: %w", s.pos, h.Size(), s.end, errScanCorrupt)
		return false
	}
	if s.first && s.expect >= 0 && h.LastOffset() != s.expect {
		s.err = fmt.Errorf("index entry says offset %d, the batch at position %d ends at %d: %w", s.expect, s.pos, h.LastOffset(), errIndexMismatch)
		return false
	}
	s.first = false
	s.h, s.batchPos = h, s.pos
	s.pos += int64(h.Size())
	return true
}

// Err returns the error that ended the walk, if any.
func (s *headerScanner) Err() error { return s.err }

var errScanCorrupt = fmt.Errorf("segment file is inconsistent: %w", record.ErrCorrupt)

// errIndexMismatch reports an offset index entry that does not describe the
// batch at its position.
var errIndexMismatch = fmt.Errorf("offset index does not match the segment: %w", errScanCorrupt)
