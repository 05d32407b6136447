package record

import (
	"errors"
	"fmt"
	"sync"
)

// recordsData returns the decompressed records section of a batch whose
// header h has passed parseExact. The result aliases batch when the batch is
// uncompressed; otherwise it is appended to buf. A compressed batch with no
// records and no payload is accepted as empty without invoking the codec.
func recordsData(h Header, batch, buf []byte, maxDecompressed int) ([]byte, error) {
	payload := batch[HeaderSize:]
	if h.Codec() == CodecNone || (len(payload) == 0 && h.NumRecords == 0) {
		return payload, nil
	}
	out, err := decompressAppend(h.Codec(), buf, payload, maxDecompressed)
	if err != nil {
		return nil, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
	}
	return out, nil
}

// recordIter decodes the h.NumRecords records of a decompressed records
// section one at a time. It never allocates; records alias data.
type recordIter struct {
	h    Header
	data []byte
	pos  int
	i    int // index of the next record
}

// next decodes the next record into rec. It reports false, with a nil
// error, once NumRecords records have been read and data held nothing else.
func (it *recordIter) next(rec *Record) (bool, error) {
	if it.i == int(it.h.NumRecords) {
		if it.pos != len(it.data) {
			return false, fmt.Errorf("batch at offset %d: %d bytes after the last of %d records: %w", it.h.BaseOffset, len(it.data)-it.pos, it.h.NumRecords, ErrCorrupt)
		}
		return false, nil
	}
	if it.pos == len(it.data) {
		return false, fmt.Errorf("batch at offset %d: header says %d records, found %d: %w", it.h.BaseOffset, it.h.NumRecords, it.i, ErrCorrupt)
	}
	n, err := decodeRecord(it.data[it.pos:], rec)
	if err != nil {
		return false, fmt.Errorf("batch at offset %d, record %d: %w", it.h.BaseOffset, it.i, err)
	}
	it.pos += n
	it.i++
	return true, nil
}

// ForEachRecord calls fn for every record of batch in order, decompressing as
// needed (output limited to maxDecompressed bytes; <= 0 selects
// DefaultMaxDecompressed). It checks the batch's structure and each record's
// encoding but not the CRC; run ValidateCRC first on untrusted input.
//
// If fn returns ErrStop, iteration ends and ForEachRecord returns nil; any
// other error from fn is returned unchanged. The Record passed to fn, and the
// slices in it, alias batch or a buffer owned by this call; they stay valid
// after fn returns (they are not reused), so fn may keep them, but must not
// modify batch while they are in use.
func ForEachRecord(batch []byte, maxDecompressed int, fn func(Record) error) error {
	h, err := parseExact(batch)
	if err != nil {
		return err
	}
	data, err := recordsData(h, batch, nil, maxDecompressed)
	if err != nil {
		return err
	}
	it := recordIter{h: h, data: data}
	var rec Record
	for {
		ok, err := it.next(&rec)
		if !ok {
			return err
		}
		if err := fn(rec); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
}

// Records decodes every record of batch, decompressing as needed; see
// ForEachRecord for the checks made and the limit. The returned slices may
// alias batch or a fresh buffer.
func Records(batch []byte, maxDecompressed int) ([]Record, error) {
	h, err := parseExact(batch)
	if err != nil {
		return nil, err
	}
	data, err := recordsData(h, batch, nil, maxDecompressed)
	if err != nil {
		return nil, err
	}
	// The count field is untrusted: size the slice by what data can hold.
	recs := make([]Record, 0, min(int(h.NumRecords), len(data)/minRecordSize))
	it := recordIter{h: h, data: data}
	var rec Record
	for {
		ok, err := it.next(&rec)
		if err != nil {
			return nil, err
		}
		if !ok {
			return recs, nil
		}
		recs = append(recs, rec)
	}
}

// scratchBuffers holds decompression buffers for validation, whose output
// never escapes the call. Buffers above maxPooledScratch are dropped rather
// than pinned in the pool.
var scratchBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledScratch = 4 << 20

func getScratch() *[]byte { return scratchBuffers.Get().(*[]byte) }

// keepScratch keeps data, the records section recordsData returned for
// batch, as the scratch buffer for the next caller (it may have grown),
// unless it is the batch's own payload: an empty compressed batch is not
// decompressed, and a scratch buffer aliasing the caller's memory (whose
// capacity may reach into the bytes after the batch) would let the next
// decompression overwrite them.
func keepScratch(scratch *[]byte, batch, data []byte) {
	if len(batch) > HeaderSize {
		*scratch = data
	}
}

func putScratch(b *[]byte) {
	if cap(*b) > maxPooledScratch {
		return
	}
	*b = (*b)[:0]
	scratchBuffers.Put(b)
}
