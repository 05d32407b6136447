package record

import (
	"bytes"
	"errors"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// A zstd decoder allocates the frame's whole window up front, whatever the
// frame later produces, so the window a frame may declare is what bounds a
// hostile frame's cost. Pooled decoders accept windows up to zstdPooledWindow
// (8 MiB: what the reference encoder uses up to level 19, so nearly every
// producer's frames). A larger window, up to the reference decoder's default
// limit of zstdMaxWindow (window log 27, what Java brokers and consumers
// accept), is decoded by a one-off decoder and only when the caller's output
// limit is at least that large: decoding memory stays proportional to the
// limit.
const (
	zstdPooledWindow = 8 << 20
	zstdMaxWindow    = 128 << 20
)

var (
	// zstdEncoder is safe for concurrent EncodeAll calls and keeps its own
	// pool of block encoders.
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithEncoderConcurrency(1),
			zstd.WithZeroFrames(true))
		if err != nil {
			panic("record: zstd encoder options rejected: " + err.Error())
		}
		return e
	})
	// Decoders with concurrency 1 decode streams synchronously, without
	// goroutines, so a pooled decoder that is dropped leaks nothing.
	zstdDecoders = sync.Pool{New: func() any { return newZstdDecoder(zstdPooledWindow) }}
)

func newZstdDecoder(maxWindow uint64) *zstd.Decoder {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(maxWindow))
	if err != nil {
		panic("record: zstd decoder options rejected: " + err.Error())
	}
	return d
}

func zstdCompress(dst, src []byte) []byte {
	return zstdEncoder().EncodeAll(src, dst)
}

// zstdDecompress streams the frames of src so that output is produced, and
// limited, as it is decoded rather than sized from the frame header.
func zstdDecompress(dst, src []byte, maxSize int) ([]byte, error) {
	d := zstdDecoders.Get().(*zstd.Decoder)
	out, err := zstdRead(d, dst, src, maxSize)
	zstdDecoders.Put(d)
	if errors.Is(err, zstd.ErrWindowSizeExceeded) && maxSize > zstdPooledWindow {
		big := newZstdDecoder(uint64(min(maxSize, zstdMaxWindow)))
		defer big.Close()
		out, err = zstdRead(big, dst, src, maxSize)
	}
	return out, err
}

func zstdRead(d *zstd.Decoder, dst, src []byte, maxSize int) ([]byte, error) {
	if err := d.Reset(bytes.NewReader(src)); err != nil {
		return dst, wrapCorrupt(err)
	}
	out, err := readAllLimited(dst, d, maxSize, zstdSizeHint(src))
	_ = d.Reset(nil) // drop the reference to src
	return out, err
}

// zstdSizeHint reads the content size from the first frame's header, which
// encoders that see the whole input at once (most Kafka clients) record.
func zstdSizeHint(src []byte) int {
	var h zstd.Header
	if h.Decode(src) != nil || !h.HasFCS {
		return 2 * len(src)
	}
	return outputHint(h.FrameContentSize, len(src))
}
