package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// Gzip readers and writers carry sizeable state (windows, Huffman tables), so
// they are reused across batches.
var (
	gzipWriters = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
		return w
	}}
	gzipReaders sync.Pool // *gzip.Reader; created on first use because NewReader needs a valid stream
)

func gzipCompress(dst, src []byte) ([]byte, error) {
	w := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(w)
	aw := appendWriter{b: dst}
	w.Reset(&aw)
	if _, err := w.Write(src); err != nil {
		return dst, fmt.Errorf("gzip: %w", err)
	}
	if err := w.Close(); err != nil {
		return dst, fmt.Errorf("gzip: %w", err)
	}
	w.Reset(nil) // drop the reference to the caller's buffer
	return aw.b, nil
}

// gzipDecompress reads every gzip member of src, as Java's GZIPInputStream
// does, verifying each member's CRC and length.
func gzipDecompress(dst, src []byte, maxSize int) ([]byte, error) {
	br := bytes.NewReader(src)
	var r *gzip.Reader
	if v := gzipReaders.Get(); v != nil {
		r = v.(*gzip.Reader)
		if err := r.Reset(br); err != nil {
			gzipReaders.Put(r)
			return dst, wrapCorrupt(err)
		}
	} else {
		var err error
		if r, err = gzip.NewReader(br); err != nil {
			return dst, wrapCorrupt(err)
		}
	}
	defer gzipReaders.Put(r)
	return readAllLimited(dst, r, maxSize, gzipSizeHint(src))
}

// gzipSizeHint reads the stream's trailer, which holds the uncompressed
// size (mod 2^32) of the last member, the only member in Kafka batches.
func gzipSizeHint(src []byte) int {
	const minMember = 18 // 10-byte header, empty deflate block, 8-byte trailer
	if len(src) < minMember {
		return 0
	}
	return outputHint(uint64(binary.LittleEndian.Uint32(src[len(src)-4:])), len(src))
}
