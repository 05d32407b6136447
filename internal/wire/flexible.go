package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrMalformed marks bytes that do not decode as the message they claim to
// be: a truncated field, a length larger than the bytes that follow, an
// over-long varint, bytes left over after the last field. A server that sees
// it for a request closes the connection, as Kafka does.
var ErrMalformed = errors.New("malformed message")

// maxStringLen is the longest string Kafka's protocol allows (its string
// lengths are int16 in the classic encoding, and the flexible encoding keeps
// the same bound).
const maxStringLen = 0x7fff

// Reader decodes Kafka's primitive and flexible (KIP-482) encodings from a
// byte slice.
//
// Invariant: after the first failure Reader holds that error, every later
// call returns a zero value, and nothing is ever allocated for a length that
// the remaining bytes cannot satisfy. Callers decode a whole message and check
// Err (or Complete) once at the end.
type Reader struct {
	src []byte
	off int // bytes consumed so far, for error messages
	err error
}

// NewReader returns a Reader over b. Byte slices returned by the Reader alias
// b; strings are copies.
func NewReader(b []byte) *Reader { return &Reader{src: b} }

// Err returns the first decoding error, or nil.
func (r *Reader) Err() error { return r.err }

// Len returns the number of bytes not yet consumed.
func (r *Reader) Len() int { return len(r.src) }

// Complete returns the first decoding error, or an error wrapping ErrMalformed
// if bytes remain unread: a message must be consumed exactly.
func (r *Reader) Complete() error {
	if r.err != nil {
		return r.err
	}
	if len(r.src) != 0 {
		return fmt.Errorf("%w: %d unexpected trailing bytes at offset %d", ErrMalformed, len(r.src), r.off)
	}
	return nil
}

// Fail records err as the Reader's error unless one is already recorded.
// Decoders use it to report semantic problems (e.g. a null where a value is
// required) with the same first-error-wins rule.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
		r.src = nil
	}
}

func (r *Reader) failf(format string, args ...any) {
	if r.err == nil {
		r.Fail(fmt.Errorf("%w: %s at offset %d", ErrMalformed, fmt.Sprintf(format, args...), r.off))
	}
}

// take consumes n bytes, or fails if fewer remain.
func (r *Reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.src) {
		r.failf("%s needs %d bytes, %d remain", what, n, len(r.src))
		return nil
	}
	b := r.src[:n:n]
	r.src = r.src[n:]
	r.off += n
	return b
}

// Int8 reads one signed byte.
func (r *Reader) Int8() int8 {
	b := r.take(1, "int8")
	if b == nil {
		return 0
	}
	return int8(b[0])
}

// Bool reads a boolean; like Kafka, any non-zero byte is true.
func (r *Reader) Bool() bool { return r.Int8() != 0 }

// Int16 reads a big-endian int16.
func (r *Reader) Int16() int16 {
	b := r.take(2, "int16")
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

// Int32 reads a big-endian int32.
func (r *Reader) Int32() int32 {
	b := r.take(4, "int32")
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// Int64 reads a big-endian int64.
func (r *Reader) Int64() int64 {
	b := r.take(8, "int64")
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// UUID reads 16 raw bytes.
func (r *Reader) UUID() [16]byte {
	var u [16]byte
	copy(u[:], r.take(16, "uuid"))
	return u
}

// Uvarlong reads an unsigned LEB128 varint of at most 10 bytes.
func (r *Reader) Uvarlong() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.src)
	if n <= 0 {
		if n == 0 {
			r.failf("truncated varint")
		} else {
			r.failf("varint overflows 64 bits")
		}
		return 0
	}
	r.src = r.src[n:]
	r.off += n
	return v
}

// Uvarint reads an unsigned varint that must fit 32 bits (at most 5 bytes),
// as Kafka's unsigned varints do.
func (r *Reader) Uvarint() uint32 {
	if r.err != nil {
		return 0
	}
	var v uint32
	for i := 0; i < 5; i++ {
		if i >= len(r.src) {
			r.failf("truncated varint")
			return 0
		}
		c := r.src[i]
		if i == 4 && c > 0x0f {
			r.failf("varint overflows 32 bits")
			return 0
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c < 0x80 {
			r.src = r.src[i+1:]
			r.off += i + 1
			return v
		}
	}
	r.failf("varint longer than 5 bytes")
	return 0
}

// Varint reads a zig-zag encoded signed 32-bit varint.
func (r *Reader) Varint() int32 {
	u := r.Uvarint()
	return int32(u>>1) ^ -int32(u&1)
}

// Varlong reads a zig-zag encoded signed 64-bit varint.
func (r *Reader) Varlong() int64 {
	u := r.Uvarlong()
	return int64(u>>1) ^ -int64(u&1)
}

// compactLen reads a compact length (N+1, 0 meaning null) and returns N, or -1
// for null. A length that cannot fit the remaining bytes fails the reader.
func (r *Reader) compactLen(what string) int {
	u := r.Uvarint()
	if r.err != nil {
		return -1
	}
	if u == 0 {
		return -1
	}
	n := int(u - 1)
	if n > len(r.src) {
		r.failf("%s length %d exceeds the %d remaining bytes", what, n, len(r.src))
		return -1
	}
	return n
}

// CompactNullableString reads a compact nullable string; nil means null.
func (r *Reader) CompactNullableString() *string {
	n := r.compactLen("string")
	if n < 0 {
		return nil
	}
	if n > maxStringLen {
		r.failf("string length %d exceeds %d", n, maxStringLen)
		return nil
	}
	s := string(r.take(n, "string"))
	return &s
}

// CompactString reads a compact string that must not be null.
func (r *Reader) CompactString() string {
	if r.err != nil {
		return ""
	}
	s := r.CompactNullableString()
	if s == nil {
		r.failf("null string where a value is required")
		return ""
	}
	return *s
}

// CompactNullableBytes reads compact nullable bytes; nil means null and an
// empty non-nil slice means zero bytes. The result aliases the input.
func (r *Reader) CompactNullableBytes() []byte {
	n := r.compactLen("bytes")
	if n < 0 {
		return nil
	}
	return r.take(n, "bytes")
}

// CompactBytes reads compact bytes that must not be null. The result aliases
// the input.
func (r *Reader) CompactBytes() []byte {
	if r.err != nil {
		return nil
	}
	u := r.Uvarint()
	if r.err == nil && u == 0 {
		r.failf("null bytes where a value is required")
		return nil
	}
	n := int(u - 1)
	return r.take(n, "bytes")
}

// CompactArrayLen reads a compact array length: -1 for a null array, else the
// element count. minElemSize is the fewest bytes one element can take on the
// wire; a count whose elements could not fit the remaining bytes fails the
// reader, so a caller may allocate count elements without trusting the peer.
func (r *Reader) CompactArrayLen(minElemSize int) int {
	u := r.Uvarint()
	if r.err != nil || u == 0 {
		return -1
	}
	n := int(u - 1)
	if minElemSize < 1 {
		minElemSize = 1
	}
	if n > len(r.src)/minElemSize {
		r.failf("array of %d elements of at least %d bytes exceeds the %d remaining bytes", n, minElemSize, len(r.src))
		return -1
	}
	return n
}

// AppendInt8 appends v.
func AppendInt8(dst []byte, v int8) []byte { return append(dst, byte(v)) }

// AppendBool appends v as one byte, 1 or 0.
func AppendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// AppendInt16 appends v big-endian.
func AppendInt16(dst []byte, v int16) []byte { return binary.BigEndian.AppendUint16(dst, uint16(v)) }

// AppendInt32 appends v big-endian.
func AppendInt32(dst []byte, v int32) []byte { return binary.BigEndian.AppendUint32(dst, uint32(v)) }

// AppendInt64 appends v big-endian.
func AppendInt64(dst []byte, v int64) []byte { return binary.BigEndian.AppendUint64(dst, uint64(v)) }

// AppendUUID appends the 16 bytes of u.
func AppendUUID(dst []byte, u [16]byte) []byte { return append(dst, u[:]...) }

// AppendUvarint appends v as an unsigned varint.
func AppendUvarint(dst []byte, v uint32) []byte { return binary.AppendUvarint(dst, uint64(v)) }

// AppendUvarlong appends v as an unsigned 64-bit varint.
func AppendUvarlong(dst []byte, v uint64) []byte { return binary.AppendUvarint(dst, v) }

// AppendVarint appends v zig-zag encoded.
func AppendVarint(dst []byte, v int32) []byte {
	return AppendUvarint(dst, uint32(v<<1)^uint32(v>>31))
}

// AppendVarlong appends v zig-zag encoded.
func AppendVarlong(dst []byte, v int64) []byte {
	return binary.AppendUvarint(dst, uint64(v<<1)^uint64(v>>63))
}

// AppendCompactString appends s as a compact string.
func AppendCompactString(dst []byte, s string) []byte {
	dst = AppendUvarint(dst, uint32(len(s))+1)
	return append(dst, s...)
}

// AppendCompactNullableString appends s as a compact nullable string (nil is
// null).
func AppendCompactNullableString(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, 0)
	}
	return AppendCompactString(dst, *s)
}

// AppendCompactBytes appends b as compact bytes; nil is written as empty.
func AppendCompactBytes(dst []byte, b []byte) []byte {
	dst = AppendUvarint(dst, uint32(len(b))+1)
	return append(dst, b...)
}

// AppendCompactNullableBytes appends b as compact nullable bytes (nil is
// null).
func AppendCompactNullableBytes(dst []byte, b []byte) []byte {
	if b == nil {
		return append(dst, 0)
	}
	return AppendCompactBytes(dst, b)
}

// AppendCompactArrayLen appends an array length n (n < 0 means a null array).
func AppendCompactArrayLen(dst []byte, n int) []byte {
	if n < 0 {
		return append(dst, 0)
	}
	return AppendUvarint(dst, uint32(n)+1)
}
