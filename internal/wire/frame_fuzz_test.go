package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// FuzzReadFrame reads frames from arbitrary bytes, delivered whole or one
// byte at a time, with and without a reusable buffer. ReadFrame must not
// panic, must return exactly the payload the size prefix announces, and
// must not allocate much beyond what arrived: at most twice the bytes
// received plus firstChunk.
// The seed corpus is in testdata/fuzz/FuzzReadFrame.
func FuzzReadFrame(f *testing.F) {
	f.Fuzz(func(t *testing.T, in []byte, maxSize uint32, oneByte bool) {
		max := int32(maxSize & 0x7fffffff)
		var r io.Reader = bytes.NewReader(in)
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		var buf []byte
		if len(in) > 0 && in[len(in)-1]&1 == 1 {
			buf = make([]byte, 0, 64)
		}
		frame, err := ReadFrame(r, max, buf)
		if len(in) < 4 {
			if err == nil {
				t.Fatalf("a frame from %d bytes", len(in))
			}
			return
		}
		n := int64(int32(binary.BigEndian.Uint32(in)))
		if n < 0 || n > int64(max) {
			if !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("size %d, max %d: err %v", n, max, err)
			}
			return
		}
		received := int64(len(in) - 4)
		if received < n {
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("%d of %d bytes: err %v", received, n, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("complete frame of %d bytes: %v", n, err)
		}
		if !bytes.Equal(frame, in[4:4+n]) {
			t.Fatalf("frame of %d bytes differs from its payload", n)
		}
		if c := int64(cap(frame)); c > max64(2*received+firstChunk, 64) {
			t.Fatalf("a %d-byte frame (%d received) got a %d-byte buffer", n, received, c)
		}
	})
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
