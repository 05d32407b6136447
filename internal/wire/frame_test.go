package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func frameOf(payload []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)
}

func TestReadFrame(t *testing.T) {
	payload := bytes.Repeat([]byte("k"), 100)
	got, err := ReadFrame(bytes.NewReader(frameOf(payload)), 100, nil)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("ReadFrame = %q, %v", got, err)
	}
	// buf is reused when large enough.
	buf := make([]byte, 0, 200)
	got, err = ReadFrame(bytes.NewReader(frameOf(payload)), 100, buf)
	if err != nil || &got[0] != &buf[:1][0] {
		t.Fatalf("buffer not reused (err %v)", err)
	}
	// Zero-length frames are valid.
	if got, err := ReadFrame(bytes.NewReader(frameOf(nil)), 100, nil); err != nil || len(got) != 0 {
		t.Fatalf("empty frame: %v %v", got, err)
	}
}

func TestReadFrameLimits(t *testing.T) {
	for _, size := range []int32{101, -1, -1 << 31, 1<<31 - 1} {
		in := binary.BigEndian.AppendUint32(nil, uint32(size))
		_, err := ReadFrame(bytes.NewReader(in), 100, nil)
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("size %d: err = %v, want ErrFrameTooLarge", size, err)
		}
		if !strings.Contains(err.Error(), "100") || !strings.Contains(err.Error(), strconv.Itoa(int(size))) {
			t.Errorf("size %d: error %q does not name both sizes", size, err)
		}
	}
}

func TestReadFrameEOF(t *testing.T) {
	if _, err := ReadFrame(bytes.NewReader(nil), 100, nil); err != io.EOF {
		t.Errorf("empty stream: %v, want io.EOF", err)
	}
	if _, err := ReadFrame(bytes.NewReader([]byte{0, 0}), 100, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("half a size: %v", err)
	}
	short := frameOf(make([]byte, 50))[:30]
	if _, err := ReadFrame(bytes.NewReader(short), 100, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short payload: %v", err)
	}
}

// A peer that announces a large (allowed) frame and sends a few bytes must
// not make ReadFrame allocate the announced size.
func TestReadFrameAllocatesWithArrivingBytes(t *testing.T) {
	const announced = 64 << 20
	in := append(binary.BigEndian.AppendUint32(nil, announced), make([]byte, 1000)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadFrame(bytes.NewReader(in), 100<<20, nil)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v", err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > firstChunk+64<<10 {
		t.Errorf("allocated %d bytes for 1000 received", d)
	}
	// And a refused size allocates nothing of its size either.
	runtime.ReadMemStats(&before)
	_, _ = ReadFrame(bytes.NewReader(binary.BigEndian.AppendUint32(nil, 1<<30)), 1<<20, nil)
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 64<<10 {
		t.Errorf("refused frame allocated %d bytes", d)
	}
}

func TestReadFrameLargeGrowsToExactPayload(t *testing.T) {
	payload := make([]byte, 300<<10+7)
	for i := range payload {
		payload[i] = byte(i)
	}
	got, err := ReadFrame(bytes.NewReader(frameOf(payload)), 1<<20, make([]byte, 10))
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("large frame: equal %v, err %v", bytes.Equal(got, payload), err)
	}
}

// A frame that arrives in full grows to its pool size class: doubling
// from firstChunk, with every byte kept in order.
func TestReadFrameGrowsToSizeClass(t *testing.T) {
	payload := make([]byte, 5<<20+3)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	got, err := readPayload(bytes.NewReader(payload), len(payload), nil)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("equal %v, err %v", bytes.Equal(got, payload), err)
	}
	if cap(got) != 8<<20 {
		t.Errorf("cap = %d, want the 8 MiB size class", cap(got))
	}
}

// A recycled buffer serves the next large frame of its size class, so a
// producer's requests do not allocate a buffer each. (sync.Pool may drop
// any item, so reuse is checked over a few rounds.)
func TestRecycleFrameReusesBuffers(t *testing.T) {
	payload := bytes.Repeat([]byte("p"), 3<<20)
	reused := false
	for range 20 {
		first, err := ReadFrame(bytes.NewReader(frameOf(payload)), 64<<20, nil)
		if err != nil || !bytes.Equal(first, payload) {
			t.Fatalf("first frame: err %v", err)
		}
		RecycleFrame(first)
		// A different size of the same class (2..4 MiB) may take it.
		second, err := ReadFrame(bytes.NewReader(frameOf(payload[:2<<20+1])), 64<<20, nil)
		if err != nil || !bytes.Equal(second, payload[:2<<20+1]) {
			t.Fatalf("second frame: err %v", err)
		}
		if &second[0] == &first[0] {
			reused = true
			break
		}
	}
	if !reused {
		t.Error("a recycled buffer was never reused")
	}
}

// Pooled buffers serve only frames above 1 MiB: a connection keeps the
// buffers of smaller frames itself, and must not end up pinning a pooled one.
func TestSmallFramesDoNotTakePooledBuffers(t *testing.T) {
	for range 4 {
		RecycleFrame(make([]byte, 0, 4<<20))
	}
	got, err := ReadFrame(bytes.NewReader(frameOf(make([]byte, 1000))), 64<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cap(got) != 1000 {
		t.Errorf("a 1000-byte frame got a buffer of %d bytes", cap(got))
	}
	if b := takeFrameBuffer(1 << 20); b != nil {
		t.Errorf("takeFrameBuffer(1 MiB) returned a pooled buffer of %d bytes", cap(b))
	}
}

func TestFinishFrame(t *testing.T) {
	f := BeginFrame([]byte("prefix"))
	start := len("prefix")
	f = append(f, 1, 2, 3)
	if err := FinishFrame(f[start:], 1000); err != nil {
		t.Fatal(err)
	}
	if n := binary.BigEndian.Uint32(f[start:]); n != 1003 {
		t.Errorf("size = %d, want 1003", n)
	}
	if err := FinishFrame(f[start:], 1<<31); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("oversized: %v", err)
	}
	if err := FinishFrame([]byte{1}, 0); err == nil {
		t.Error("short frame accepted")
	}
}
