package record

// Kafka's record fields use zig-zag varints: a signed value v is stored as
// the unsigned (v << 1) ^ (v >> 63), seven bits per byte, low group first,
// high bit set on every byte but the last. A "varint" holds an int32 (at most
// 5 bytes), a "varlong" an int64 (at most 10 bytes).

const (
	maxVarintLen  = 5
	maxVarlongLen = 10
)

// readUvarint decodes an unsigned varint of at most maxLen bytes from b. It
// returns the value and the number of bytes read, or n <= 0 if b ends inside
// the varint or it is longer than maxLen. Bits beyond 64 in a 10th byte are
// dropped, as Kafka drops bits beyond 32 in a 5th byte of a varint.
func readUvarint(b []byte, maxLen int) (uint64, int) {
	var x uint64
	var s uint
	for i := 0; i < maxLen; i++ {
		if i >= len(b) {
			return 0, 0
		}
		c := b[i]
		if c < 0x80 {
			return x | uint64(c)<<s, i + 1
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, -1
}

// readVarint decodes a zig-zag int32 varint, as Kafka's readVarint does: the
// unsigned value is truncated to 32 bits before unzigzagging.
func readVarint(b []byte) (int32, int) {
	ux, n := readUvarint(b, maxVarintLen)
	u := uint32(ux)
	return int32(u>>1) ^ -int32(u&1), n
}

// readVarlong decodes a zig-zag int64 varlong.
func readVarlong(b []byte) (int64, int) {
	ux, n := readUvarint(b, maxVarlongLen)
	return int64(ux>>1) ^ -int64(ux&1), n
}

// appendVarint appends the zig-zag encoding of v.
func appendVarint(b []byte, v int32) []byte {
	return appendUvarint(b, uint64(uint32((v<<1)^(v>>31))))
}

// appendVarlong appends the zig-zag encoding of v.
func appendVarlong(b []byte, v int64) []byte {
	return appendUvarint(b, uint64((v<<1)^(v>>63)))
}

func appendUvarint(b []byte, u uint64) []byte {
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

// sizeVarint is the encoded size of v as a zig-zag varint.
func sizeVarint(v int32) int { return sizeUvarint(uint64(uint32((v << 1) ^ (v >> 31)))) }

// sizeVarlong is the encoded size of v as a zig-zag varlong.
func sizeVarlong(v int64) int { return sizeUvarint(uint64((v << 1) ^ (v >> 63))) }

func sizeUvarint(u uint64) int {
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
