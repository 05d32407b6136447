package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/record"
)

// activeLogFile returns the path of the last segment's .log file.
func activeLogFile(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(m) == 0 {
		t.Fatal("no segment files")
	}
	return m[len(m)-1]
}

func TestRecoveryTruncatesTornTail(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig(), Options{Now: clk.Now})
	bs := appendN(t, l, clk, 25, 2)
	crash(l)
	// Tear the last batch in half.
	p := activeLogFile(t, dir)
	st, _ := os.Stat(p)
	if err := os.Truncate(p, st.Size()-int64(len(bs[24]))/2); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir, smallConfig(), Options{Now: clk.Now})
	defer l2.Close()
	if l2.LogEndOffset() != 48 {
		t.Fatalf("leo %d after a torn tail", l2.LogEndOffset())
	}
	got := logBatches(t, l2)
	if len(got) != 24 || !bytes.Equal(got[23], bs[23]) {
		t.Fatalf("%d batches", len(got))
	}
	checkInvariants(t, l2)
	// Appends continue right after the recovered end.
	if info, err := l2.AppendAsLeader(mkBatch(t, plain(1, clk.Ms())), 0, OriginClient); err != nil || info.FirstOffset != 48 {
		t.Fatalf("append after recovery: %+v %v", info, err)
	}
}

func TestRecoveryCutsAtCorruptBatchAndDropsLaterSegments(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig(), Options{Now: clk.Now})
	bs := appendN(t, l, clk, 40, 2)
	nsegs := l.NumSegments()
	if nsegs < 3 {
		t.Fatalf("want several segments, have %d", nsegs)
	}
	second := l.segments()[1]
	secondPath := second.logPath
	crash(l)
	// Flip a byte in the third batch of the second segment.
	f, err := os.OpenFile(secondPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	pos := int64(2*len(bs[0])) + 40
	var b [1]byte
	f.ReadAt(b[:], pos)
	b[0] ^= 0xff
	f.WriteAt(b[:], pos)
	f.Close()
	l2 := openLog(t, dir, smallConfig(), Options{Now: clk.Now}) // recovery point 0: everything checked
	defer l2.Close()
	if want := second.base + 4; l2.LogEndOffset() != want {
		t.Fatalf("leo %d, want %d", l2.LogEndOffset(), want)
	}
	if l2.NumSegments() != 2 {
		t.Fatalf("segments %d after the corrupt point", l2.NumSegments())
	}
	checkInvariants(t, l2)
}

func TestRecoveryTrustsFilesBelowRecoveryPoint(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig(), Options{Now: clk.Now})
	appendN(t, l, clk, 40, 2)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	rp := l.RecoveryPoint()
	if rp != 80 {
		t.Fatalf("recovery point %d after flush", rp)
	}
	appendN(t, l, clk, 5, 2)
	firstSeg := l.segments()[0].logPath
	crash(l)
	// Corrupt the first segment: below the recovery point nobody looks.
	f, _ := os.OpenFile(firstSeg, os.O_RDWR, 0)
	f.WriteAt([]byte{0xff}, 100)
	f.Close()
	l2 := openLog(t, dir, smallConfig(), Options{Now: clk.Now, RecoveryPoint: rp})
	defer l2.Close()
	if l2.LogEndOffset() != 90 {
		t.Fatalf("leo %d", l2.LogEndOffset())
	}
}

func TestCleanShutdownTrustsFilesAndRebuildsBrokenIndex(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig(), Options{Now: clk.Now})
	appendN(t, l, clk, 40, 2)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	idx, _ := filepath.Glob(filepath.Join(dir, "*.index"))
	// A broken index (size not a multiple of 8) and a missing one.
	if err := os.WriteFile(idx[0], []byte{1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(idx[1]); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir, smallConfig(), Options{Now: clk.Now, HadCleanShutdown: true})
	defer l2.Close()
	if l2.LogEndOffset() != 80 || len(logBatches(t, l2)) != 40 {
		t.Fatalf("leo %d", l2.LogEndOffset())
	}
	for _, s := range l2.segments() {
		if _, err := s.indexes(); err != nil {
			t.Fatal(err)
		}
	}
	checkInvariants(t, l2)
	st, err := os.Stat(idx[0])
	if err != nil || st.Size()%8 != 0 {
		t.Fatalf("index not rebuilt: %v", err)
	}
}

func TestLeftoverFilesAreCleaned(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig(), Options{Now: clk.Now})
	appendN(t, l, clk, 10, 2)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		"00000000000000000500.log.deleted", "00000000000000000500.index.deleted",
		"00000000000000000900.log.cleaned", "00000000000000000900.index.cleaned",
		"00000000000000000950.log.swap", // above a .cleaned base: an unfinished cleaning
		"leader-epoch-checkpoint.tmp",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l2 := openLog(t, dir, smallConfig(), Options{Now: clk.Now, HadCleanShutdown: true})
	defer l2.Close()
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		n := de.Name()
		if strings.HasSuffix(n, ".deleted") || strings.HasSuffix(n, ".cleaned") || strings.HasSuffix(n, ".swap") || strings.HasSuffix(n, ".tmp") {
			t.Fatalf("leftover %s survived", n)
		}
	}
	if l2.LogEndOffset() != 20 {
		t.Fatalf("leo %d", l2.LogEndOffset())
	}
}

func TestEpochCheckpointCorruptIsRebuilt(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig(), Options{Now: clk.Now})
	for i := int64(0); i < 10; i++ {
		if _, err := l.AppendAsFollower(followerBatch(t, 2*i, 2, int32(i/3), clk.Ms())); err != nil {
			t.Fatal(err)
		}
	}
	want := l.EpochEntries()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, LeaderEpochCheckpointFileName), []byte("0\n5\nnonsense\n"), 0o644)
	l2 := openLog(t, dir, smallConfig(), Options{Now: clk.Now, HadCleanShutdown: true})
	defer l2.Close()
	got := l2.EpochEntries()
	if len(got) != len(want) {
		t.Fatalf("rebuilt %+v, want %+v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("rebuilt %+v, want %+v", got, want)
		}
	}
}

func TestPreallocatedSegmentsRecover(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	cfg := smallConfig()
	cfg.Preallocate = true
	l := openLog(t, dir, cfg, Options{Now: clk.Now})
	appendN(t, l, clk, 30, 2)
	crash(l)
	l2 := openLog(t, dir, cfg, Options{Now: clk.Now})
	if l2.LogEndOffset() != 60 {
		t.Fatalf("leo %d", l2.LogEndOffset())
	}
	checkInvariants(t, l2)
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	// After a clean close every segment file is exactly its batches.
	l3 := openLog(t, dir, cfg, Options{Now: clk.Now, HadCleanShutdown: true})
	defer l3.Close()
	checkInvariants(t, l3)
	for _, s := range l3.segments() {
		st, _ := s.log.Stat()
		sc := newHeaderScanner(s.log, 0, st.Size())
		for sc.next() {
		}
		if sc.Err() != nil {
			t.Fatalf("segment %d: %v", s.base, sc.Err())
		}
		sc.release()
	}
}

// TestSegmentsParseWithKmsg reads our .log files back with franz-go's
// independent decoder (kmsg.RecordBatch) and checks the fields.
func TestSegmentsParseWithKmsg(t *testing.T) {
	testSegmentsParseWithKmsg(t, record.CodecNone)
	testSegmentsParseWithKmsg(t, record.CodecLZ4)
}
