package record

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/snappy"
)

// Kafka's Java client writes snappy through xerial's SnappyOutputStream: a
// 16-byte header (magic, version 1, minimum compatible version 1) followed by
// chunks, each a big-endian int32 length and one raw snappy block holding at
// most xerialBlockSize input bytes. Other clients write one raw snappy block.
// Readers must accept both.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	xerialHeaderSize = 16
	xerialBlockSize  = 32 << 10
)

// snappyCompress appends src in xerial framing, so that every Kafka client
// (the Java one included) can read it.
func snappyCompress(dst, src []byte) []byte {
	dst = append(dst, xerialMagic...)
	dst = binary.BigEndian.AppendUint32(dst, 1) // version
	dst = binary.BigEndian.AppendUint32(dst, 1) // minimum compatible version
	for len(src) > 0 {
		chunk := src[:min(len(src), xerialBlockSize)]
		src = src[len(chunk):]
		lenPos := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		dst = growTo(dst, len(dst)+snappy.MaxEncodedLen(len(chunk)))
		enc := snappy.Encode(dst[len(dst):cap(dst)], chunk)
		binary.BigEndian.PutUint32(dst[lenPos:], uint32(len(enc)))
		dst = dst[:len(dst)+len(enc)]
	}
	return dst
}

// snappyDecompress decodes xerial-framed or raw snappy. For xerial it first
// sums the chunks' declared lengths, so the limit is enforced and the output
// allocated once before any chunk is decoded.
func snappyDecompress(dst, src []byte, maxSize int) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlock(dst, src, maxSize)
	}
	if len(src) < xerialHeaderSize {
		return dst, fmt.Errorf("xerial header truncated: %w", ErrCorrupt)
	}
	chunks := src[xerialHeaderSize:]
	total := 0
	for p := chunks; len(p) > 0; {
		block, rest, err := nextXerialChunk(p)
		if err != nil {
			return dst, err
		}
		n, err := snappy.DecodedLen(block)
		if err != nil {
			return dst, wrapCorrupt(err)
		}
		if total += n; total > maxSize {
			return dst, errTooLarge
		}
		p = rest
	}
	start := len(dst)
	dst = growTo(dst, start+total)
	for p := chunks; len(p) > 0; {
		block, rest, _ := nextXerialChunk(p) // validated above
		var err error
		if dst, err = snappyBlock(dst, block, maxSize-(len(dst)-start)); err != nil {
			return dst[:start], err
		}
		p = rest
	}
	return dst, nil
}

// nextXerialChunk splits the first length-prefixed chunk off p.
func nextXerialChunk(p []byte) (block, rest []byte, err error) {
	if len(p) < 4 {
		return nil, nil, fmt.Errorf("xerial chunk length truncated: %w", ErrCorrupt)
	}
	n := binary.BigEndian.Uint32(p)
	p = p[4:]
	if uint64(n) > uint64(len(p)) {
		return nil, nil, fmt.Errorf("xerial chunk of %d bytes, %d present: %w", n, len(p), ErrCorrupt)
	}
	return p[:n], p[n:], nil
}

// snappyBlock appends the decoding of one raw snappy block, whose declared
// length is checked against maxSize before anything is allocated.
func snappyBlock(dst, block []byte, maxSize int) ([]byte, error) {
	n, err := snappy.DecodedLen(block)
	if err != nil {
		return dst, wrapCorrupt(err)
	}
	if n > maxSize {
		return dst, errTooLarge
	}
	dst = growTo(dst, len(dst)+n)
	out, err := snappy.Decode(dst[len(dst):len(dst)+n], block)
	if err != nil {
		return dst, wrapCorrupt(err)
	}
	if len(out) != n {
		return dst, fmt.Errorf("snappy block decoded to %d bytes, header says %d: %w", len(out), n, ErrCorrupt)
	}
	return dst[:len(dst)+n], nil
}
