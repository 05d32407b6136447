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

// walkRecords decodes h.NumRecords records from data, calling fn for each, and
// requires data to hold nothing else. Records alias data.
func walkRecords(h Header, data []byte, fn func(i int, rec *Record) error) error {
	var rec Record
	p := 0
	for i := 0; i < int(h.NumRecords); i++ {
		if p == len(data) {
			return fmt.Errorf("batch at offset %d: header says %d records, found %d: %w", h.BaseOffset, h.NumRecords, i, ErrCorrupt)
		}
		n, err := decodeRecord(data[p:], &rec)
		if err != nil {
			return fmt.Errorf("batch at offset %d, record %d: %w", h.BaseOffset, i, err)
		}
		p += n
		if err := fn(i, &rec); err != nil {
			return err
		}
	}
	if p != len(data) {
		return fmt.Errorf("batch at offset %d: %d bytes after the last of %d records: %w", h.BaseOffset, len(data)-p, h.NumRecords, ErrCorrupt)
	}
	return nil
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
	err = walkRecords(h, data, func(_ int, rec *Record) error { return fn(*rec) })
	if errors.Is(err, ErrStop) {
		return nil
	}
	return err
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
	err = walkRecords(h, data, func(_ int, rec *Record) error {
		recs = append(recs, *rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// scratchBuffers holds decompression buffers for validation, whose output
// never escapes the call. Buffers above maxPooledScratch are dropped rather
// than pinned in the pool.
var scratchBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledScratch = 4 << 20

func getScratch() *[]byte { return scratchBuffers.Get().(*[]byte) }

func putScratch(b *[]byte) {
	if cap(*b) > maxPooledScratch {
		return
	}
	*b = (*b)[:0]
	scratchBuffers.Put(b)
}
