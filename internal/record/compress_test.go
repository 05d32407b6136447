package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// testPayloads returns inputs that exercise empty, tiny, block-boundary,
// incompressible and highly compressible data.
func testPayloads() map[string][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 200<<10)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	text := bytes.Repeat([]byte("kafka mirror record batch "), 20000)
	return map[string][]byte{
		"empty":        {},
		"one byte":     {7},
		"block-1":      text[:xerialBlockSize-1],
		"block":        text[:xerialBlockSize],
		"block+1":      text[:xerialBlockSize+1],
		"random":       random,
		"compressible": text,
	}
}

func TestCompressRoundTrip(t *testing.T) {
	for _, c := range allCodecs {
		for name, src := range testPayloads() {
			prefix := []byte("prefix")
			comp, err := Compress(c, clone(prefix), src)
			if err != nil {
				t.Fatalf("%v %s: compress: %v", c, name, err)
			}
			if !bytes.HasPrefix(comp, prefix) {
				t.Fatalf("%v %s: Compress did not append to dst", c, name)
			}
			got, err := Decompress(c, comp[len(prefix):], len(src)+1)
			if err != nil {
				t.Fatalf("%v %s: decompress: %v", c, name, err)
			}
			if !bytes.Equal(got, src) {
				t.Fatalf("%v %s: round trip differs (%d vs %d bytes)", c, name, len(got), len(src))
			}
			if name == "compressible" && c != CodecNone && len(comp) > len(src)/4 {
				t.Errorf("%v: compressible input only shrank to %d of %d bytes", c, len(comp), len(src))
			}
		}
	}
}

func TestDecompressLimitIsExact(t *testing.T) {
	src := bytes.Repeat([]byte{'a'}, 100000)
	for _, c := range allCodecs {
		comp, err := Compress(c, nil, src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decompress(c, comp, len(src)); err != nil {
			t.Errorf("%v: output of exactly the limit rejected: %v", c, err)
		}
		if _, err := Decompress(c, comp, len(src)-1); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%v: output one byte over the limit: err = %v, want ErrCorrupt", c, err)
		}
	}
}

func TestDecompressionBombIsRejectedCheaply(t *testing.T) {
	bomb := make([]byte, 16<<20) // 16 MiB of zeros compresses to little
	const limit = 1 << 20
	for _, c := range allCodecs[1:] {
		comp, err := Compress(c, nil, bomb)
		if err != nil {
			t.Fatal(err)
		}
		allocs := bytesAllocated(func() {
			if _, err := Decompress(c, comp, limit); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%v bomb (%d compressed bytes): err = %v, want ErrCorrupt", c, len(comp), err)
			}
		})
		t.Logf("%v bomb: %d compressed bytes, %d bytes allocated", c, len(comp), allocs)
		// Output is capped at limit+1; decoder windows and block buffers add
		// a few MiB at most. Far below what the bomb expands to.
		if allocs > 16<<20 {
			t.Errorf("%v bomb: allocated %d bytes with a %d-byte limit", c, allocs, limit)
		}
	}
}

func TestDecompressGarbageIsCorrupt(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range allCodecs[1:] {
		good, _ := Compress(c, nil, []byte("some data to compress, some data to compress"))
		inputs := [][]byte{nil, []byte("not compressed at all"), good[:len(good)/2], append(clone(good), 0xff, 0xfe)}
		for i := 0; i < 50; i++ {
			g := clone(good)
			g[r.IntN(len(g))] ^= byte(1 + r.IntN(255))
			inputs = append(inputs, g)
		}
		for i, in := range inputs {
			out, err := Decompress(c, in, 1<<20)
			if i < 4 && !errors.Is(err, ErrCorrupt) {
				t.Errorf("%v input %d (%x): err = %v, out %q", c, i, in, err, out)
			}
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Errorf("%v input %d: error %v does not wrap ErrCorrupt", c, i, err)
			}
		}
	}
	if _, err := Decompress(Codec(5), []byte{1}, 10); !errors.Is(err, ErrCorrupt) {
		t.Errorf("codec 5: %v", err)
	}
	if _, err := Compress(Codec(5), nil, []byte{1}); err == nil {
		t.Error("Compress with codec 5 succeeded")
	}
}

// xerialFixture is snappy data framed the way Java's SnappyOutputStream
// writes it, built by hand: the 16-byte header, then two chunks, each a
// big-endian length and a raw snappy block. The blocks use only literal
// elements, so they are written out here without any encoder.
var xerialFixture = []byte{
	0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, // magic
	0, 0, 0, 1, // version 1
	0, 0, 0, 1, // minimum compatible version 1
	0, 0, 0, 8, // chunk 1: 8 bytes
	6,                            // block: decoded length 6 (uvarint)
	5 << 2,                       // literal tag, length 6 (stored as len-1 in the top six bits)
	'h', 'e', 'l', 'l', 'o', ' ', // literal
	0, 0, 0, 7, // chunk 2: 7 bytes
	5,      // decoded length 5
	4 << 2, // literal of 5 bytes
	'w', 'o', 'r', 'l', 'd',
}

func TestSnappyXerialFixture(t *testing.T) {
	got, err := Decompress(CodecSnappy, xerialFixture, 100)
	if err != nil || string(got) != "hello world" {
		t.Fatalf("xerial fixture: %q, %v", got, err)
	}
	// The second chunk alone, as raw snappy (what non-Java clients send).
	got, err = Decompress(CodecSnappy, xerialFixture[len(xerialFixture)-7:], 100)
	if err != nil || string(got) != "world" {
		t.Fatalf("raw snappy block: %q, %v", got, err)
	}
	// A limit covering the first chunk but not the second.
	if _, err := Decompress(CodecSnappy, xerialFixture, 8); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("limit 8: %v", err)
	}
	// A chunk length past the end.
	bad := clone(xerialFixture)
	binary.BigEndian.PutUint32(bad[16:], 1000)
	if _, err := Decompress(CodecSnappy, bad, 100); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("long chunk: %v", err)
	}
	// Header only is an empty stream; a cut header is corrupt.
	if got, err := Decompress(CodecSnappy, xerialFixture[:16], 100); err != nil || len(got) != 0 {
		t.Fatalf("header only: %q, %v", got, err)
	}
	if _, err := Decompress(CodecSnappy, xerialFixture[:12], 100); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("cut header: %v", err)
	}
}

func TestSnappyCompressWritesXerialFraming(t *testing.T) {
	src := bytes.Repeat([]byte("0123456789"), 7000) // 70000 bytes: three 32 KiB chunks
	comp, _ := Compress(CodecSnappy, nil, src)
	if !bytes.Equal(comp[:16], xerialFixture[:16]) {
		t.Fatalf("header %x, want %x", comp[:16], xerialFixture[:16])
	}
	var out []byte
	chunks := 0
	for p := comp[16:]; len(p) > 0; chunks++ {
		n := binary.BigEndian.Uint32(p)
		dec, err := snappy.Decode(nil, p[4:4+n])
		if err != nil {
			t.Fatal(err)
		}
		if len(dec) > xerialBlockSize {
			t.Fatalf("chunk of %d bytes exceeds the xerial block size", len(dec))
		}
		out = append(out, dec...)
		p = p[4+n:]
	}
	if chunks != 3 || !bytes.Equal(out, src) {
		t.Fatalf("%d chunks, %d bytes", chunks, len(out))
	}
}

func TestCompressConcurrentUse(t *testing.T) {
	payloads := testPayloads()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				for _, c := range allCodecs {
					for _, src := range payloads {
						comp, err := Compress(c, nil, src)
						if err == nil {
							var got []byte
							got, err = Decompress(c, comp, len(src)+1)
							if err == nil && !bytes.Equal(got, src) {
								err = errors.New(c.String() + ": concurrent round trip differs")
							}
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestZstdLargeWindowNeedsAMatchingLimit(t *testing.T) {
	// A streaming encoder flushed before it has seen all input does not know
	// the input size, so its frame declares the full 32 MiB window even for
	// a small input.
	var buf bytes.Buffer
	enc, err := zstd.NewWriter(&buf, zstd.WithWindowSize(32<<20), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	src := bytes.Repeat([]byte("large window "), 10000)
	if _, err := enc.Write(src[:100]); err != nil {
		t.Fatal(err)
	}
	if err := enc.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := enc.Write(src[100:]); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(buf.Bytes()); err != nil || h.WindowSize != 32<<20 {
		t.Fatalf("fixture frame declares window %d (%v), want 32 MiB", h.WindowSize, err)
	}
	if _, err := Decompress(CodecZstd, buf.Bytes(), 1<<20); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("32 MiB window with a 1 MiB limit: err = %v, want ErrCorrupt", err)
	}
	got, err := Decompress(CodecZstd, buf.Bytes(), 64<<20)
	if err != nil || !bytes.Equal(got, src) {
		t.Fatalf("32 MiB window with a 64 MiB limit: %d bytes, %v", len(got), err)
	}
}
