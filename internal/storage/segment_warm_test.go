package storage

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

func init() {
	// The tests check what warming does, not whether this machine's memory
	// makes it pay (TestWarmAheadBacksOffWhenZeroWritesAreSlow does).
	warmSlowChunk = time.Hour
}

// warmConfig is the default config (no flush policy, 1 GiB segments) with
// the test-friendly timestamp bounds of smallConfig.
func warmConfig() LogConfig {
	c := DefaultLogConfig()
	c.FileDeleteDelayMs = 0
	c.MessageTimestampAfterMaxMs = smallConfig().MessageTimestampAfterMaxMs
	return c
}

// appendBig appends n batches of 16 records of 1000 bytes (about 16 KiB),
// advancing clk by step after each.
func appendBig(t *testing.T, l *Log, clk *testClock, n int, step time.Duration) [][]byte {
	t.Helper()
	var out [][]byte
	for range n {
		s := plain(16, clk.Ms())
		s.valueSize = 1000
		b := mkBatch(t, s)
		if _, err := l.AppendAsLeader(b, 0, OriginClient); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
		clk.Advance(step)
	}
	return out
}

// fileTail returns the active segment's data size, its file's size and
// whether every byte past the data is zero.
func fileTail(t *testing.T, l *Log) (size, fileSize int64, zeros bool) {
	t.Helper()
	s := l.active()
	data, err := os.ReadFile(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	size = s.size.Load()
	if int64(len(data)) < size {
		t.Fatalf("file of %d bytes holds less than the segment's %d", len(data), size)
	}
	return size, int64(len(data)), bytes.Count(data[size:], []byte{0}) == len(data)-int(size)
}

// holdsBatches fails t unless l holds exactly want.
func holdsBatches(t *testing.T, l *Log, want [][]byte) {
	t.Helper()
	if got := logBatches(t, l); !sameBatches(got, want) {
		t.Fatalf("log holds %d batches, not the %d appended", len(got), len(want))
	}
}

// warmedLog opens a log in dir and appends small batches to it fast
// enough to warm ahead, checking that zeros now follow the data up to a
// warmChunk boundary. It returns the log, its batches and the data's size.
func warmedLog(t *testing.T, dir string, clk *testClock) (*Log, [][]byte, int64) {
	t.Helper()
	l := openLog(t, dir, warmConfig(), Options{Now: clk.Now})
	want := appendBig(t, l, clk, 40, time.Millisecond)
	size, fileSize, zeros := fileTail(t, l)
	if fileSize <= size || fileSize%warmChunk != 0 || !zeros {
		t.Fatalf("after fast small appends: data %d, file %d (want zeros up to a %d boundary), zeros %v", size, fileSize, warmChunk, zeros)
	}
	return l, want, size
}

func TestWarmAheadZerosPastTheDataAndSealTrimsThem(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	l, want, size := warmedLog(t, dir, clk)
	holdsBatches(t, l, want)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(segmentPath(dir, 0, LogFileSuffix)); err != nil || st.Size() != size {
		t.Fatalf("after close the file has %v bytes (%v), want the data's %d", st.Size(), err, size)
	}
	l2 := openLog(t, dir, warmConfig(), Options{Now: clk.Now})
	defer l2.Close()
	holdsBatches(t, l2, want)
	checkInvariants(t, l2)
}

// syncBuffer is a bytes.Buffer for a logger shared with the log's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestWarmAheadTailAfterACrashIsCutWithoutCallingItCorrupt(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	l, want, size := warmedLog(t, dir, clk)
	crash(l)

	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l2 := openLog(t, dir, warmConfig(), Options{Now: clk.Now, Logger: logger})
	defer l2.Close()
	holdsBatches(t, l2, want)
	checkInvariants(t, l2)
	if s, fs, _ := fileTail(t, l2); s != size || fs != size {
		t.Fatalf("recovered segment: data %d, file %d, want both %d", s, fs, size)
	}
	out := logs.String()
	if strings.Contains(out, "invalid bytes") || !strings.Contains(out, "zero-filled tail") {
		t.Fatalf("recovery logged:\n%s", out)
	}
	// Appends continue right after the data.
	next := appendBig(t, l2, clk, 1, 0)
	holdsBatches(t, l2, append(want, next...))
}

func TestWarmAheadOnlyForFastAppendsWithoutFlushPolicy(t *testing.T) {
	t.Run("slow appends", func(t *testing.T) {
		clk := newTestClock()
		l := openLog(t, t.TempDir(), warmConfig(), Options{Now: clk.Now})
		defer l.Close()
		for range 40 {
			appendBig(t, l, clk, 1, 2*warmWindow)
			if size, fileSize, _ := fileTail(t, l); fileSize != size {
				t.Fatalf("a quiet partition's file holds %d bytes for %d of data", fileSize, size)
			}
		}
	})
	t.Run("flush.messages", func(t *testing.T) {
		clk := newTestClock()
		cfg := warmConfig()
		cfg.FlushMessages = 1000
		l := openLog(t, t.TempDir(), cfg, Options{Now: clk.Now})
		defer l.Close()
		for range 40 {
			appendBig(t, l, clk, 1, time.Millisecond)
			if size, fileSize, _ := fileTail(t, l); fileSize != size {
				t.Fatalf("with a flush policy the file holds %d bytes for %d of data", fileSize, size)
			}
		}
	})
	t.Run("large appends", func(t *testing.T) {
		clk := newTestClock()
		l := openLog(t, t.TempDir(), warmConfig(), Options{Now: clk.Now})
		defer l.Close()
		for range 10 {
			s := plain(100, clk.Ms())
			s.valueSize = 1000
			if _, err := l.AppendAsLeader(mkBatch(t, s), 0, OriginClient); err != nil {
				t.Fatal(err)
			}
			if size, fileSize, _ := fileTail(t, l); fileSize != size {
				t.Fatalf("after appends of 100 KB the file holds %d bytes for %d of data", fileSize, size)
			}
		}
	})
}

func TestWarmAheadTruncationCutsTheZeros(t *testing.T) {
	clk := newTestClock()
	l, want, _ := warmedLog(t, t.TempDir(), clk)
	defer l.Close()
	if err := l.TruncateTo(16 * 30); err != nil {
		t.Fatal(err)
	}
	if size, fileSize, _ := fileTail(t, l); fileSize != size {
		t.Fatalf("after truncation the file holds %d bytes for %d of data", fileSize, size)
	}
	want = append(want[:30], appendBig(t, l, clk, 20, time.Millisecond)...)
	holdsBatches(t, l, want)
	checkInvariants(t, l)
	if size, fileSize, zeros := fileTail(t, l); fileSize <= size || !zeros {
		t.Fatalf("appends after truncation do not warm ahead again: data %d, file %d", size, fileSize)
	}
}

func TestWarmAheadBacksOffWhenZeroWritesAreSlow(t *testing.T) {
	defer func(slow, backoff time.Duration) {
		warmSlowChunk, warmBackoff = slow, backoff
		warmOffUntil.Store(0)
		warmCost = 0
	}(warmSlowChunk, warmBackoff)
	// Every zero write is "slow": after the first, no segment warms ahead
	// until the back-off has passed.
	warmSlowChunk, warmBackoff = 0, time.Hour
	clk := newTestClock()
	l := openLog(t, t.TempDir(), warmConfig(), Options{Now: clk.Now})
	defer l.Close()
	appendBig(t, l, clk, 40, time.Millisecond)
	if !warmOff() {
		t.Fatal("warming is still on after a slow zero write")
	}
	other := openLog(t, t.TempDir(), warmConfig(), Options{Now: clk.Now})
	defer other.Close()
	appendBig(t, other, clk, 40, time.Millisecond)
	if size, fileSize, _ := fileTail(t, other); fileSize != size {
		t.Fatalf("another log warms ahead during the back-off: data %d, file %d", size, fileSize)
	}
	// Once the back-off has passed, warming is tried again.
	warmOffUntil.Store(0)
	warmSlowChunk = time.Hour
	appendBig(t, other, clk, 40, time.Millisecond)
	if size, fileSize, zeros := fileTail(t, other); fileSize <= size || !zeros {
		t.Fatalf("no warming after the back-off: data %d, file %d", size, fileSize)
	}
}
