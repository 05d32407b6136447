package record

import (
	"fmt"
	"io"
)

// DefaultMaxDecompressed is the decompressed-size limit used when a caller
// passes a limit <= 0, and by functions that take no limit (ControlTypeOf,
// ParseEndTxnMarker). It bounds the memory a hostile compressed batch can make
// us allocate.
const DefaultMaxDecompressed = 64 << 20

// Compress appends the compressed form of src to dst in the given codec's
// Kafka framing: a gzip stream, xerial-framed snappy (what the Java client
// writes), an LZ4 frame, or a zstd frame. CodecNone appends src unchanged.
func Compress(codec Codec, dst, src []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		return gzipCompress(dst, src)
	case CodecSnappy:
		return snappyCompress(dst, src), nil
	case CodecLZ4:
		return lz4Compress(dst, src)
	case CodecZstd:
		return zstdCompress(dst, src), nil
	}
	return dst, fmt.Errorf("compress: unknown codec %d", int8(codec))
}

// Decompress returns the decompression of src, which must be one complete,
// non-empty compressed stream in the codec's Kafka framing (snappy may be raw or
// xerial-framed). Malformed input, trailing bytes the codec does not consume,
// or output larger than maxSize yield an error wrapping ErrCorrupt. maxSize
// <= 0 selects DefaultMaxDecompressed. The result never aliases src.
func Decompress(codec Codec, src []byte, maxSize int) ([]byte, error) {
	return decompressAppend(codec, nil, src, maxSize)
}

// decompressAppend appends the decompression of src to dst; see Decompress.
func decompressAppend(codec Codec, dst, src []byte, maxSize int) ([]byte, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxDecompressed
	}
	if codec != CodecNone && len(src) == 0 {
		// Every codec's framing has a header; Kafka's readers reject an
		// empty stream, and so do we.
		return dst, fmt.Errorf("decompress %s: empty stream: %w", codec, ErrCorrupt)
	}
	var err error
	switch codec {
	case CodecNone:
		if len(src) > maxSize {
			return dst, fmt.Errorf("%d bytes exceed the limit of %d: %w", len(src), maxSize, ErrCorrupt)
		}
		return append(dst, src...), nil
	case CodecGzip:
		dst, err = gzipDecompress(dst, src, maxSize)
	case CodecSnappy:
		dst, err = snappyDecompress(dst, src, maxSize)
	case CodecLZ4:
		dst, err = lz4Decompress(dst, src, maxSize)
	case CodecZstd:
		dst, err = zstdDecompress(dst, src, maxSize)
	default:
		return dst, fmt.Errorf("decompress: unknown codec %d: %w", int8(codec), ErrCorrupt)
	}
	if err != nil {
		return dst, fmt.Errorf("decompress %s: %w", codec, err)
	}
	return dst, nil
}

// errTooLarge is returned when decompressed output would pass its limit: a
// batch that inflates beyond it is treated as hostile.
var errTooLarge = fmt.Errorf("decompressed size exceeds the limit: %w", ErrCorrupt)

// outputHint turns the output size a stream's header claims into a buffer
// size for readAllLimited: one byte more, so that end of stream is seen
// without growing the buffer. The claim is untrusted, so it is capped at a
// generous ratio to the compressed size; honest streams beyond that ratio
// just grow the buffer a few times.
func outputHint(claimed uint64, compressedLen int) int {
	limit := uint64(compressedLen)*32 + 64<<10
	if claimed >= limit {
		return int(limit)
	}
	return int(claimed) + 1
}

// readAllLimited appends everything r yields to dst, failing with errTooLarge
// once more than maxSize bytes arrive. Its buffer starts at sizeHint (capped
// at maxSize+1) and grows with the data actually produced, so a stream that
// claims a huge size but delivers little costs little.
func readAllLimited(dst []byte, r io.Reader, maxSize, sizeHint int) ([]byte, error) {
	start := len(dst)
	limit := start + maxSize + 1 // one byte past the limit detects overflow
	if sizeHint > maxSize+1 {
		sizeHint = maxSize + 1
	}
	if sizeHint < 64 {
		sizeHint = 64
	}
	if cap(dst)-len(dst) < sizeHint {
		dst = growTo(dst, min(len(dst)+sizeHint, limit))
	}
	for {
		if len(dst) == cap(dst) {
			if len(dst) >= limit {
				return dst[:start], errTooLarge
			}
			dst = growTo(dst, min(2*cap(dst), limit))
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst)-start > maxSize {
			return dst[:start], errTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst[:start], wrapCorrupt(err)
		}
	}
}

// growTo returns b with capacity at least c, keeping its contents.
func growTo(b []byte, c int) []byte {
	if cap(b) >= c {
		return b
	}
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}

// appendWriter is an io.Writer that appends to a slice, letting stream
// compressors write straight into the caller's destination buffer.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
