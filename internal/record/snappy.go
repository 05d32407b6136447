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

// snappyDecompress decodes xerial-framed or raw snappy.
func snappyDecompress(dst, src []byte, maxSize int) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return snappyBlock(dst, src, maxSize)
	}
	if len(src) < xerialHeaderSize {
		return dst, fmt.Errorf("xerial header truncated: %w", ErrCorrupt)
	}
	start := len(dst)
	src = src[xerialHeaderSize:]
	for len(src) > 0 {
		if len(src) < 4 {
			return dst[:start], fmt.Errorf("xerial chunk length truncated: %w", ErrCorrupt)
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return dst[:start], fmt.Errorf("xerial chunk of %d bytes, %d present: %w", n, len(src), ErrCorrupt)
		}
		var err error
		if dst, err = snappyBlock(dst, src[:n], maxSize-(len(dst)-start)); err != nil {
			return dst[:start], err
		}
		src = src[n:]
	}
	return dst, nil
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
