package record

import "fmt"

// RecordHeader is one application header of a record. A nil Value is a null
// header value.
type RecordHeader struct {
	Key   string
	Value []byte
}

// Record is one record of a batch. Its timestamp is the batch's
// BaseTimestamp plus TimestampDelta and its offset the batch's BaseOffset plus
// OffsetDelta.
type Record struct {
	Attributes     int8 // unused by Kafka so far; kept as read
	TimestampDelta int64
	OffsetDelta    int32
	Key, Value     []byte // nil means null (a nil Value is a tombstone)
	Headers        []RecordHeader
}

// minRecordSize is the smallest encoding of a record: a one-byte length and a
// body of six one-byte fields (attributes, timestamp delta, offset delta, null
// key, null value, zero headers). It bounds how many records a byte slice can
// hold, so that no allocation trusts a count field.
const minRecordSize = 7

// minHeaderSize is the smallest encoding of a record header: an empty key and
// a null value.
const minHeaderSize = 2

// Static decode failures; the batch-level caller adds the batch offset and
// record index. Each wraps ErrCorrupt.
var (
	errRecordTruncated = fmt.Errorf("record truncated: %w", ErrCorrupt)
	errBadVarint       = fmt.Errorf("malformed varint: %w", ErrCorrupt)
	errRecordLength    = fmt.Errorf("record length does not match its fields: %w", ErrCorrupt)
	errHeaderCount     = fmt.Errorf("negative record header count: %w", ErrCorrupt)
	errHeaderKey       = fmt.Errorf("negative or null record header key length: %w", ErrCorrupt)
)

// decodeRecord decodes the record at the start of b into rec and returns its
// encoded size. Key, Value and header values alias b. Like Kafka's reader, it
// treats any negative key or value length as null and requires the record's
// fields to fill its declared length exactly.
func decodeRecord(b []byte, rec *Record) (int, error) {
	length, n := readVarint(b)
	if n <= 0 {
		return 0, errBadVarint
	}
	if length < 0 || int64(length) > int64(len(b)-n) {
		return 0, errRecordTruncated
	}
	end := n + int(length)
	body := b[n:end]

	if len(body) < 1 {
		return 0, errRecordLength
	}
	rec.Attributes = int8(body[0])
	p := 1
	if rec.TimestampDelta, n = readVarlong(body[p:]); n <= 0 {
		return 0, varintErr(n)
	}
	p += n
	if rec.OffsetDelta, n = readVarint(body[p:]); n <= 0 {
		return 0, varintErr(n)
	}
	p += n
	var err error
	if rec.Key, p, err = readBytes(body, p); err != nil {
		return 0, err
	}
	if rec.Value, p, err = readBytes(body, p); err != nil {
		return 0, err
	}
	count, n := readVarint(body[p:])
	if n <= 0 {
		return 0, varintErr(n)
	}
	p += n
	rec.Headers = nil
	if count < 0 {
		return 0, errHeaderCount
	}
	if count > 0 {
		if int64(count) > int64((len(body)-p)/minHeaderSize) {
			return 0, errRecordLength
		}
		rec.Headers = make([]RecordHeader, count)
		for i := range rec.Headers {
			klen, n := readVarint(body[p:])
			if n <= 0 {
				return 0, varintErr(n)
			}
			p += n
			if klen < 0 {
				return 0, errHeaderKey
			}
			if int64(klen) > int64(len(body)-p) {
				return 0, errRecordLength
			}
			rec.Headers[i].Key = string(body[p : p+int(klen)])
			p += int(klen)
			if rec.Headers[i].Value, p, err = readBytes(body, p); err != nil {
				return 0, err
			}
		}
	}
	if p != len(body) {
		return 0, errRecordLength
	}
	return end, nil
}

// readBytes reads a varint length and that many bytes from body at p; a
// negative length is null.
func readBytes(body []byte, p int) ([]byte, int, error) {
	l, n := readVarint(body[p:])
	if n <= 0 {
		return nil, p, varintErr(n)
	}
	p += n
	if l < 0 {
		return nil, p, nil
	}
	if int64(l) > int64(len(body)-p) {
		return nil, p, errRecordLength
	}
	return body[p : p+int(l) : p+int(l)], p + int(l), nil
}

// varintErr maps a failed varint read to its error: running out of the
// record's bytes means the declared length was wrong.
func varintErr(n int) error {
	if n == 0 {
		return errRecordLength
	}
	return errBadVarint
}

// appendRecord appends the wire encoding of r.
func appendRecord(b []byte, r *Record) []byte {
	b = appendVarint(b, int32(recordBodySize(r)))
	b = append(b, byte(r.Attributes))
	b = appendVarlong(b, r.TimestampDelta)
	b = appendVarint(b, r.OffsetDelta)
	b = appendNullableBytes(b, r.Key)
	b = appendNullableBytes(b, r.Value)
	b = appendVarint(b, int32(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		b = appendVarint(b, int32(len(h.Key)))
		b = append(b, h.Key...)
		b = appendNullableBytes(b, h.Value)
	}
	return b
}

func appendNullableBytes(b, v []byte) []byte {
	if v == nil {
		return appendVarint(b, -1)
	}
	b = appendVarint(b, int32(len(v)))
	return append(b, v...)
}

// recordBodySize is the encoded size of r after its length prefix.
func recordBodySize(r *Record) int {
	n := 1 + sizeVarlong(r.TimestampDelta) + sizeVarint(r.OffsetDelta) +
		nullableSize(r.Key) + nullableSize(r.Value) + sizeVarint(int32(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		n += sizeVarint(int32(len(h.Key))) + len(h.Key) + nullableSize(h.Value)
	}
	return n
}

// recordSize is the full encoded size of r, length prefix included.
func recordSize(r *Record) int {
	body := recordBodySize(r)
	return sizeVarint(int32(body)) + body
}

func nullableSize(v []byte) int {
	if v == nil {
		return 1
	}
	return sizeVarint(int32(len(v))) + len(v)
}
