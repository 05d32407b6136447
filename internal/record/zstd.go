package record

import (
	"bytes"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// zstdMaxWindow bounds the window a zstd frame may ask for, so a hostile
// header cannot make us reserve gigabytes. It matches the reference library's
// default decoder limit (window log 27), which is what Java brokers and
// consumers accept.
const zstdMaxWindow = 128 << 20

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
	zstdDecoders = sync.Pool{New: func() any {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(zstdMaxWindow))
		if err != nil {
			panic("record: zstd decoder options rejected: " + err.Error())
		}
		return d
	}}
)

func zstdCompress(dst, src []byte) []byte {
	return zstdEncoder().EncodeAll(src, dst)
}

// zstdDecompress streams the frames of src so that output is produced, and
// limited, as it is decoded rather than sized from the frame header.
func zstdDecompress(dst, src []byte, maxSize int) ([]byte, error) {
	d := zstdDecoders.Get().(*zstd.Decoder)
	defer zstdDecoders.Put(d)
	if err := d.Reset(bytes.NewReader(src)); err != nil {
		return dst, wrapCorrupt(err)
	}
	out, err := readAllLimited(dst, d, maxSize, 4*len(src))
	_ = d.Reset(nil)
	return out, err
}
