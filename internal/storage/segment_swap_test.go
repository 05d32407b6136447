package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/record"
)

// cleanFirstSegments imitates the cleaner: the first n segments are
// rewritten into one .cleaned segment keeping only batches with an even base
// offset. It returns the new segment, the old ones and the kept batches.
func cleanFirstSegments(t *testing.T, l *Log, n int) (*segment, []*segment, [][]byte) {
	t.Helper()
	old := append([]*segment(nil), l.segments()[:n]...)
	ns, err := l.newCleanedSegment(old[0].base)
	if err != nil {
		t.Fatal(err)
	}
	var kept [][]byte
	for _, s := range old {
		err := s.forEachBatch(func(h record.Header, batch []byte) error {
			if h.BaseOffset%2 == 0 {
				kept = append(kept, append([]byte(nil), batch...))
				return ns.appendBatches(batch)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return ns, old, kept
}

func TestReplaceSegments(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	l := openLog(t, dir, swapConfig(), Options{Now: clk.Now})
	all := appendN(t, l, clk, 60, 1) // one record per batch: offsets 0..59
	if l.NumSegments() < 4 {
		t.Fatalf("%d segments", l.NumSegments())
	}
	r, err := l.Read(0, 1<<20, FetchLogEnd, false) // held across the swap
	if err != nil {
		t.Fatal(err)
	}
	ns, old, kept := cleanFirstSegments(t, l, 2)
	rest := l.segments()[2:]
	if err := l.replaceSegments([]*segment{ns}, old); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, l)
	var want [][]byte
	want = append(want, kept...)
	for _, b := range all {
		if h := headerOf(t, b); h.BaseOffset >= rest[0].base {
			want = append(want, b)
		}
	}
	check := func(l *Log) {
		t.Helper()
		got := logBatches(t, l)
		if len(got) != len(want) {
			t.Fatalf("%d batches, want %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("batch %d differs", i)
			}
		}
		// A read at a removed (odd) offset returns the next kept batch.
		res, err := l.Read(1, 1, FetchLogEnd, true)
		if err != nil || res.FirstOffset != 2 {
			t.Fatalf("read in a compaction gap: %d %v", res.FirstOffset, err)
		}
		res.Release()
	}
	check(l)
	// The read made before the swap still sees the old bytes.
	if b, err := r.Bytes(); err != nil || !bytes.Equal(b, bytes.Join(all, nil)) {
		t.Fatalf("old read result: %v", err)
	}
	r.Release()
	for _, suf := range []string{".cleaned", ".swap", ".deleted"} {
		if m, _ := filepath.Glob(filepath.Join(dir, "*"+suf)); len(m) > 0 {
			t.Fatalf("leftover %v", m)
		}
	}
	crash(l)
	l2 := openLog(t, dir, swapConfig(), Options{Now: clk.Now}) // unclean: full recovery
	check(l2)
	checkInvariants(t, l2)
	l2.Close()
}

func TestInterruptedSwapIsCompleted(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	l := openLog(t, dir, swapConfig(), Options{Now: clk.Now})
	appendN(t, l, clk, 60, 1)
	ns, old, kept := cleanFirstSegments(t, l, 2)
	// The swap's first step only: new segment sealed, synced, renamed .swap;
	// then the process dies.
	if err := ns.seal(); err != nil {
		t.Fatal(err)
	}
	if err := ns.changeSuffix(CleanedFileSuffix, SwapFileSuffix); err != nil {
		t.Fatal(err)
	}
	ns.deleted.Store(true)
	ns.release()
	secondBase := old[1].base
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.swap")); len(m) < 2 {
		t.Fatalf("swap files %v", m)
	}
	l2 := openLog(t, dir, swapConfig(), Options{Now: clk.Now, HadCleanShutdown: true})
	defer l2.Close()
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		if strings.HasSuffix(de.Name(), ".swap") || (strings.HasPrefix(de.Name(), offsetFileName(secondBase)) && !strings.HasSuffix(de.Name(), ".snapshot")) {
			t.Fatalf("swap not completed: %s", de.Name())
		}
	}
	got := logBatches(t, l2)
	for i, b := range kept {
		if !bytes.Equal(got[i], b) {
			t.Fatalf("batch %d after completing the swap", i)
		}
	}
	checkInvariants(t, l2)
}

func swapConfig() LogConfig {
	c := smallConfig()
	c.SegmentBytes = 1024
	return c
}
