package record

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// Kafka's lz4 codec is the standard LZ4 frame format. Writers use 64 KiB
// independent blocks, as Kafka's own writer does, which also keeps a reader's
// buffers small. Readers and writers are pooled: each owns block buffers.
var (
	lz4Writers = sync.Pool{New: func() any {
		w := lz4.NewWriter(nil)
		// Options valid for a Writer cannot fail; a failure would be a
		// library change caught by the round-trip tests.
		_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ConcurrencyOption(1))
		return w
	}}
	lz4Readers = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
)

func lz4Compress(dst, src []byte) ([]byte, error) {
	w := lz4Writers.Get().(*lz4.Writer)
	defer lz4Writers.Put(w)
	aw := appendWriter{b: dst}
	w.Reset(&aw)
	if _, err := w.Write(src); err != nil {
		return dst, fmt.Errorf("lz4: %w", err)
	}
	if err := w.Close(); err != nil {
		return dst, fmt.Errorf("lz4: %w", err)
	}
	w.Reset(nil)
	return aw.b, nil
}

func lz4Decompress(dst, src []byte, maxSize int) ([]byte, error) {
	r := lz4Readers.Get().(*lz4.Reader)
	defer lz4Readers.Put(r)
	r.Reset(bytes.NewReader(src))
	out, err := readAllLimited(dst, r, maxSize, lz4SizeHint(src))
	r.Reset(nil)
	return out, err
}

// lz4SizeHint reads the content size from the frame descriptor when the
// writer recorded it (Kafka's and most clients' writers do not).
func lz4SizeHint(src []byte) int {
	const (
		frameMagic     = 0x184D2204
		contentSizeBit = 0x08
	)
	if len(src) < 14 || binary.LittleEndian.Uint32(src) != frameMagic || src[4]&contentSizeBit == 0 {
		return 2 * len(src)
	}
	return outputHint(binary.LittleEndian.Uint64(src[6:]), len(src))
}
