package metadata

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The writer half of the codec appends Kafka flexible-format primitives to a
// byte slice. Writing never fails.

func appendUvarint(b []byte, v uint32) []byte { return binary.AppendUvarint(b, uint64(v)) }
func appendInt8(b []byte, v int8) []byte      { return append(b, byte(v)) }
func appendInt16(b []byte, v int16) []byte    { return binary.BigEndian.AppendUint16(b, uint16(v)) }
func appendUint16(b []byte, v uint16) []byte  { return binary.BigEndian.AppendUint16(b, v) }
func appendInt32(b []byte, v int32) []byte    { return binary.BigEndian.AppendUint32(b, uint32(v)) }
func appendInt64(b []byte, v int64) []byte    { return binary.BigEndian.AppendUint64(b, uint64(v)) }
func appendUUID(b []byte, u Uuid) []byte      { return append(b, u[:]...) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// appendCompactString writes a non-null compact string (length+1, bytes).
func appendCompactString(b []byte, s string) []byte {
	b = appendUvarint(b, uint32(len(s))+1)
	return append(b, s...)
}

// appendNullableString writes s, or null when s is empty: kmirror does not
// distinguish an empty nullable string from a null one.
func appendNullableString(b []byte, s string) []byte {
	if s == "" {
		return appendUvarint(b, 0)
	}
	return appendCompactString(b, s)
}

func appendCompactBytes(b []byte, p []byte) []byte {
	b = appendUvarint(b, uint32(len(p))+1)
	return append(b, p...)
}

// appendInt32Array writes a compact array; a nil slice is written as empty
// because the arrays that use this are not nullable.
func appendInt32Array(b []byte, vs []int32) []byte {
	b = appendUvarint(b, uint32(len(vs))+1)
	for _, v := range vs {
		b = appendInt32(b, v)
	}
	return b
}

// taggedField is one entry of a tagged-field section, already encoded.
type taggedField struct {
	tag  uint32
	data []byte
}

// appendTags writes a tagged-field section. Fields must be in ascending tag
// order, as Kafka requires.
func appendTags(b []byte, fields ...taggedField) []byte {
	b = appendUvarint(b, uint32(len(fields)))
	for _, f := range fields {
		b = appendUvarint(b, f.tag)
		b = appendUvarint(b, uint32(len(f.data)))
		b = append(b, f.data...)
	}
	return b
}

// errCorrupt is the cause of every decoding failure; it unwraps to
// kerr.CorruptMessage so callers can map it to Kafka's error code.
var errCorrupt error = kafkaCause{"corrupt metadata", kerr.CorruptMessage}

// kafkaCause is an error with a short text that unwraps to a Kafka error
// (whose own text is a long description).
type kafkaCause struct {
	text string
	code *kerr.Error
}

func (e kafkaCause) Error() string { return e.text + " (" + e.code.Message + ")" }
func (e kafkaCause) Unwrap() error { return e.code }

// reader decodes Kafka flexible-format primitives from untrusted bytes. The
// first failure is sticky: later reads return zero values, and err reports
// the offset and cause of the first failure. No read allocates more than the
// bytes that remain.
type reader struct {
	b   []byte
	off int // offset of b[0] in the enclosing buffer, for error messages
	pos int
	err error
}

func newReader(b []byte, off int) *reader { return &reader{b: b, off: off} }

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at byte %d: %s: %w", r.off+r.pos, fmt.Sprintf(format, args...), errCorrupt)
	}
}

func (r *reader) remaining() int { return len(r.b) - r.pos }

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > r.remaining() {
		r.fail("%s needs %d bytes, %d remain", what, n, r.remaining())
		return nil
	}
	p := r.b[r.pos : r.pos+n]
	r.pos += n
	return p
}

// uvarint reads an unsigned varint of at most 32 bits (Kafka's limit).
func (r *reader) uvarint(what string) uint32 {
	if r.err != nil {
		return 0
	}
	var v uint64
	for i := 0; i < 5; i++ {
		if r.pos >= len(r.b) {
			r.fail("%s: truncated varint", what)
			return 0
		}
		c := r.b[r.pos]
		r.pos++
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			if v > math.MaxUint32 {
				r.fail("%s: varint overflows 32 bits", what)
				return 0
			}
			return uint32(v)
		}
	}
	r.fail("%s: varint longer than 5 bytes", what)
	return 0
}

func (r *reader) int8(what string) int8 {
	p := r.take(1, what)
	if p == nil {
		return 0
	}
	return int8(p[0])
}

func (r *reader) bool(what string) bool { return r.int8(what) != 0 }

func (r *reader) int16(what string) int16 {
	p := r.take(2, what)
	if p == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(p))
}

func (r *reader) uint16(what string) uint16 { return uint16(r.int16(what)) }

func (r *reader) int32(what string) int32 {
	p := r.take(4, what)
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

func (r *reader) int64(what string) int64 {
	p := r.take(8, what)
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

func (r *reader) uuid(what string) Uuid {
	var u Uuid
	copy(u[:], r.take(16, what))
	return u
}

// compactLen reads a compact length (n+1, 0 meaning null) and returns n, or
// -1 for null.
func (r *reader) compactLen(what string) int {
	n := r.uvarint(what)
	if r.err != nil {
		return 0
	}
	return int(n) - 1
}

func (r *reader) string(what string) string {
	n := r.compactLen(what)
	if n < 0 {
		r.fail("%s: null in a non-nullable string", what)
		return ""
	}
	return string(r.take(n, what))
}

// nullableString returns "" for null (see appendNullableString).
func (r *reader) nullableString(what string) string {
	n := r.compactLen(what)
	if n < 0 {
		return ""
	}
	return string(r.take(n, what))
}

// nullableStringPtr distinguishes null (nil) from a string.
func (r *reader) nullableStringPtr(what string) (string, bool) {
	n := r.compactLen(what)
	if n < 0 {
		return "", false
	}
	return string(r.take(n, what)), r.err == nil
}

func (r *reader) bytes(what string) []byte {
	n := r.compactLen(what)
	if n < 0 {
		r.fail("%s: null in non-nullable bytes", what)
		return nil
	}
	p := r.take(n, what)
	if p == nil {
		return nil
	}
	return append([]byte(nil), p...)
}

// arrayLen reads a compact array length and checks that the remaining bytes
// could hold that many elements of at least minElem bytes each, so that a
// forged length cannot make the caller allocate. It returns -1 for null.
func (r *reader) arrayLen(what string, minElem int) int {
	n := r.compactLen(what)
	if r.err != nil || n < 0 {
		return n
	}
	if n > r.remaining()/minElem {
		r.fail("%s: %d elements cannot fit in %d bytes", what, n, r.remaining())
		return 0
	}
	return n
}

// int32Array reads a non-nullable array; empty decodes to nil.
func (r *reader) int32Array(what string) []int32 {
	n := r.arrayLen(what, 4)
	if n < 0 {
		r.fail("%s: null in a non-nullable array", what)
		return nil
	}
	if n == 0 || r.err != nil {
		return nil
	}
	vs := make([]int32, n)
	for i := range vs {
		vs[i] = r.int32(what)
	}
	return vs
}

// nullableInt32Array reads an array where null (nil) differs from empty.
func (r *reader) nullableInt32Array(what string) []int32 {
	n := r.arrayLen(what, 4)
	if n < 0 || r.err != nil {
		return nil
	}
	vs := make([]int32, n)
	for i := range vs {
		vs[i] = r.int32(what)
	}
	return vs
}

// skipUUIDArray reads and discards a compact array of uuids (fields of newer
// Kafka versions that kmirror does not use, such as log directories).
func (r *reader) skipUUIDArray(what string) {
	n := r.arrayLen(what, 16)
	if n > 0 {
		r.take(16*n, what)
	}
}

// tags reads a tagged-field section, calling known for each field with a
// reader bounded to that field's bytes. known returns false for tags it does
// not know; those are skipped, which is how older readers stay compatible
// with newer writers. A known field must consume its bytes exactly.
func (r *reader) tags(what string, known func(tag uint32, fr *reader) bool) {
	n := r.uvarint(what + " tag count")
	for i := uint32(0); i < n && r.err == nil; i++ {
		tag := r.uvarint(what + " tag")
		size := r.uvarint(what + " tag size")
		if r.err != nil {
			return
		}
		start := r.off + r.pos
		data := r.take(int(size), fmt.Sprintf("%s tag %d", what, tag))
		if r.err != nil {
			return
		}
		fr := newReader(data, start)
		if known == nil || !known(tag, fr) {
			continue
		}
		if fr.err == nil && fr.remaining() != 0 {
			fr.fail("%s tag %d: %d unread bytes", what, tag, fr.remaining())
		}
		if fr.err != nil {
			r.err = fr.err
			return
		}
	}
}

// done reports an error if bytes remain after a complete record.
func (r *reader) done(what string) error {
	if r.err == nil && r.remaining() != 0 {
		r.fail("%s: %d trailing bytes", what, r.remaining())
	}
	return r.err
}

// errUnsupportedVersion is the cause when a known record type arrives at a
// schema version this build cannot read (written by a newer node).
var errUnsupportedVersion error = kafkaCause{"unsupported metadata record version", kerr.UnsupportedVersion}
