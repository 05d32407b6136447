package record

import (
	"errors"
	"fmt"
)

// RecordMeta is what a validating walk needs of one record, read without
// materialising the record: no key, value or header slices are built and
// nothing is allocated.
type RecordMeta struct {
	TimestampDelta int64
	OffsetDelta    int32
	// NullKey says the key is null (a negative length), which a compacted
	// topic refuses.
	NullKey bool
}

// ScanRecords calls fn with the metadata of every record of batch in order,
// making exactly the structural checks of ForEachRecord (the same batches
// fail, with the same errors) but without decoding keys, values and headers
// into a Record. A compressed batch is decompressed (output limited to
// maxDecompressed bytes; <= 0 selects DefaultMaxDecompressed) into a buffer
// reused between calls, so validating a leader's append allocates nothing.
// Like ForEachRecord it does not check the CRC.
//
// If fn returns ErrStop, the scan ends and ScanRecords returns nil; any
// other error from fn is returned unchanged.
func ScanRecords(batch []byte, maxDecompressed int, fn func(RecordMeta) error) error {
	h, err := parseExact(batch)
	if err != nil {
		return err
	}
	return ScanPayload(h, batch[HeaderSize:], maxDecompressed, fn)
}

// ScanPayload is ScanRecords for a batch whose header h was parsed and
// checked before (a known codec, non-negative counts, the batch's length
// field matching its size): payload is the batch after its header. It reads
// none of the header's bytes, so the caller may rewrite fields outside the
// records (the base offset, the leader epoch) while it runs.
func ScanPayload(h Header, payload []byte, maxDecompressed int, fn func(RecordMeta) error) error {
	if !h.Codec().valid() || h.NumRecords < 0 {
		return fmt.Errorf("batch at offset %d: invalid header (codec %d, %d records): %w", h.BaseOffset, int8(h.Codec()), h.NumRecords, ErrCorrupt)
	}
	data := payload
	if h.Codec() != CodecNone && !(len(payload) == 0 && h.NumRecords == 0) {
		scratch := getScratch()
		defer putScratch(scratch)
		out, err := decompressAppend(h.Codec(), (*scratch)[:0], payload, maxDecompressed)
		if err != nil {
			return fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
		*scratch = out // keep a grown buffer for the next caller
		data = out
	}
	pos := 0
	for i := 0; i < int(h.NumRecords); i++ {
		if pos == len(data) {
			return fmt.Errorf("batch at offset %d: header says %d records, found %d: %w", h.BaseOffset, h.NumRecords, i, ErrCorrupt)
		}
		m, n, err := scanRecord(data[pos:])
		if err != nil {
			return fmt.Errorf("batch at offset %d, record %d: %w", h.BaseOffset, i, err)
		}
		pos += n
		if err := fn(m); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	if pos != len(data) {
		return fmt.Errorf("batch at offset %d: %d bytes after the last of %d records: %w", h.BaseOffset, len(data)-pos, h.NumRecords, ErrCorrupt)
	}
	return nil
}

// scanRecord checks the record at the start of b exactly as decodeRecord
// does and returns its metadata and encoded size.
func scanRecord(b []byte) (RecordMeta, int, error) {
	var m RecordMeta
	length, n := readVarint(b)
	if n <= 0 {
		return m, 0, errBadVarint
	}
	if length < 0 || int64(length) > int64(len(b)-n) {
		return m, 0, errRecordTruncated
	}
	end := n + int(length)
	body := b[n:end]
	if len(body) < 1 {
		return m, 0, errRecordLength
	}
	p := 1 // attributes
	if m.TimestampDelta, n = readVarlong(body[p:]); n <= 0 {
		return m, 0, varintErr(n)
	}
	p += n
	if m.OffsetDelta, n = readVarint(body[p:]); n <= 0 {
		return m, 0, varintErr(n)
	}
	p += n
	keyLen, p, err := skipBytes(body, p)
	if err != nil {
		return m, 0, err
	}
	m.NullKey = keyLen < 0
	if _, p, err = skipBytes(body, p); err != nil {
		return m, 0, err
	}
	count, n := readVarint(body[p:])
	if n <= 0 {
		return m, 0, varintErr(n)
	}
	p += n
	if count < 0 {
		return m, 0, errHeaderCount
	}
	if int64(count) > int64((len(body)-p)/minHeaderSize) {
		return m, 0, errRecordLength
	}
	for range count {
		klen, n := readVarint(body[p:])
		if n <= 0 {
			return m, 0, varintErr(n)
		}
		p += n
		if klen < 0 {
			return m, 0, errHeaderKey
		}
		if int64(klen) > int64(len(body)-p) {
			return m, 0, errRecordLength
		}
		p += int(klen)
		if _, p, err = skipBytes(body, p); err != nil {
			return m, 0, err
		}
	}
	if p != len(body) {
		return m, 0, errRecordLength
	}
	return m, end, nil
}

// skipBytes is readBytes without the slice: it returns the length read
// (negative for null) and the position after the bytes.
func skipBytes(body []byte, p int) (int32, int, error) {
	l, n := readVarint(body[p:])
	if n <= 0 {
		return 0, p, varintErr(n)
	}
	p += n
	if l < 0 {
		return l, p, nil
	}
	if int64(l) > int64(len(body)-p) {
		return 0, p, errRecordLength
	}
	return l, p + int(l), nil
}
