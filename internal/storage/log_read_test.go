package storage

import (
	"bytes"
	"errors"
	"io"
	"math"
	"net"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/record"
)

// appendN appends n single-record batches and returns them.
func appendN(t testing.TB, l *Log, clk *testClock, n, recs int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := 0; i < n; i++ {
		b := mkBatch(t, plain(recs, clk.Ms()))
		if _, err := l.AppendAsLeader(b, 0, OriginClient); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func TestReadBoundsAndSizes(t *testing.T) {
	clk := newTestClock()
	l := openLog(t, t.TempDir(), smallConfig(), Options{Now: clk.Now})
	defer l.Close()
	bs := appendN(t, l, clk, 40, 2) // offsets 0..79, several segments
	size := int64(len(bs[0]))
	read := func(off, max int64, iso FetchIsolation, one bool) *ReadResult {
		t.Helper()
		r, err := l.Read(off, max, iso, one)
		if err != nil {
			t.Fatalf("read(%d,%d): %v", off, max, err)
		}
		t.Cleanup(r.Release)
		return r
	}
	// maxBytes holds exactly two batches.
	if r := read(10, 2*size, FetchLogEnd, false); r.Size != 2*size || r.FirstOffset != 10 {
		t.Fatalf("two batches: size %d first %d", r.Size, r.FirstOffset)
	}
	// Just below two batches: one.
	if r := read(10, 2*size-1, FetchLogEnd, false); r.Size != size {
		t.Fatalf("one batch: size %d", r.Size)
	}
	// Below one batch: none, unless minOneBatch.
	if r := read(10, size-1, FetchLogEnd, false); r.Size != 0 || r.FirstOffset != -1 {
		t.Fatalf("none: size %d", r.Size)
	}
	if r := read(10, 1, FetchLogEnd, true); r.Size != size {
		t.Fatalf("min one: size %d", r.Size)
	}
	// A large read crosses segment boundaries, whole batches only.
	if r := read(0, math.MaxInt64, FetchLogEnd, false); r.Size != 40*size {
		t.Fatalf("unbounded read: size %d", r.Size)
	}
	r := read(0, 1<<20, FetchLogEnd, false)
	if r.Size != 40*size || len(r.Chunks) != l.NumSegments() {
		t.Fatalf("full read: size %d chunks %d segments %d", r.Size, len(r.Chunks), l.NumSegments())
	}
	all, err := r.Bytes()
	if err != nil || !bytes.Equal(all, bytes.Join(bs, nil)) {
		t.Fatalf("full read bytes differ (%v)", err)
	}
	// High watermark bound.
	l.SetHighWatermark(20)
	if r := read(0, 1<<20, FetchHighWatermark, false); r.Size != 10*size || r.HighWatermark != 20 {
		t.Fatalf("hw read: size %d", r.Size)
	}
	if r := read(20, 1<<20, FetchHighWatermark, true); r.Size != 0 {
		t.Fatalf("read at hw: size %d", r.Size)
	}
	if r := read(30, 1<<20, FetchHighWatermark, true); r.Size != 0 {
		t.Fatalf("read above hw: size %d", r.Size)
	}
	if r := read(80, 1<<20, FetchLogEnd, true); r.Size != 0 || r.LogEndOffset != 80 {
		t.Fatalf("read at leo: size %d", r.Size)
	}
	for _, off := range []int64{-1, 81} {
		if _, err := l.Read(off, 100, FetchLogEnd, true); !errors.Is(err, kerr.OffsetOutOfRange) {
			t.Fatalf("read at %d: %v", off, err)
		}
	}
}

func TestReadResultSurvivesRetentionAndTruncation(t *testing.T) {
	clk := newTestClock()
	l := openLog(t, t.TempDir(), smallConfig(), Options{Now: clk.Now})
	defer l.Close()
	bs := appendN(t, l, clk, 40, 2)
	r, err := l.Read(0, int64(len(bs[0])), FetchLogEnd, true)
	if err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.DeleteRecordsBefore(60); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 60 || l.segments()[0].base == 0 {
		t.Fatalf("log start %d, first segment %d", l.LogStartOffset(), l.segments()[0].base)
	}
	got, err := r.Bytes()
	if err != nil || !bytes.Equal(got, bs[0]) {
		t.Fatalf("read result after retention: %v", err)
	}
	r.Release()
	// Truncation of bytes still being sent is reported, not served short.
	r2, err := l.Read(70, 1<<20, FetchLogEnd, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(72); err != nil {
		t.Fatal(err)
	}
	if _, err := r2.WriteTo(io.Discard); !errors.Is(err, ErrTruncatedDuringRead) {
		t.Fatalf("write after truncation: %v", err)
	}
	r2.Release()
	checkInvariants(t, l)
}

func TestWriteToSendfile(t *testing.T) {
	clk := newTestClock()
	l := openLog(t, t.TempDir(), smallConfig(), Options{Now: clk.Now})
	defer l.Close()
	bs := appendN(t, l, clk, 30, 3)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.Read(0, 1<<20, FetchLogEnd, false)
	if err != nil {
		t.Fatal(err)
	}
	n, err := r.WriteTo(c.(*net.TCPConn))
	r.Release()
	c.Close()
	if err != nil || n != r.Size {
		t.Fatalf("sendfile wrote %d of %d: %v", n, r.Size, err)
	}
	if b := <-got; !bytes.Equal(b, bytes.Join(bs, nil)) {
		t.Fatalf("received %d bytes, differ", len(b))
	}
}

// TestConcurrentReadsDuringAppends checks (with -race) that readers running
// alongside appends, rolls and retention only ever see whole, valid batches
// below the log end they observed.
func TestConcurrentReadsDuringAppends(t *testing.T) {
	clk := newTestClock()
	l := openLog(t, t.TempDir(), smallConfig(), Options{Now: clk.Now})
	defer l.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			off := int64(0)
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := l.Read(off, 4096, FetchHighWatermark, true)
				if err != nil {
					if errors.Is(err, kerr.OffsetOutOfRange) {
						off = l.LogStartOffset()
						continue
					}
					errs <- err
					return
				}
				b, err := res.Bytes()
				res.Release()
				if err != nil {
					errs <- err
					return
				}
				for len(b) > 0 {
					batch, rest, err := record.NextBatch(b)
					if err == nil {
						err = record.ValidateCRC(batch)
					}
					if err != nil {
						errs <- err
						return
					}
					h, _ := record.ParseHeader(batch)
					if h.LastOffset() >= res.HighWatermark {
						errs <- errors.New("read past the high watermark")
						return
					}
					off = h.NextOffset()
					b = rest
				}
			}
		}()
	}
	for i := 0; i < 400; i++ {
		if _, err := l.AppendAsLeader(mkBatch(t, plain(2, clk.Ms())), 0, OriginClient); err != nil {
			t.Fatal(err)
		}
		l.SetHighWatermark(l.LogEndOffset())
		if i%50 == 49 {
			if _, err := l.DeleteRecordsBefore(l.LogEndOffset() - 100); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	checkInvariants(t, l)
}
