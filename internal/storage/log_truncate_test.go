package storage

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestTruncateTo(t *testing.T) {
	clk := newTestClock()
	cfg := smallConfig()
	cfg.SegmentBytes = 1024
	l := openLog(t, t.TempDir(), cfg, Options{Now: clk.Now})
	defer l.Close()
	// Epoch 1 for offsets 0..39, epoch 2 from 40.
	for i := int64(0); i < 20; i++ {
		ep := int32(1)
		if i >= 20/2 {
			ep = 2
		}
		if _, err := l.AppendAsFollower(followerBatch(t, 4*i, 4, ep, clk.Ms())); err != nil {
			t.Fatal(err)
		}
	}
	l.SetHighWatermark(80)
	segsBefore := l.NumSegments()
	if err := l.TruncateTo(50); err != nil { // inside the batch 48..51
		t.Fatal(err)
	}
	if l.LogEndOffset() != 48 || l.HighWatermark() != 48 {
		t.Fatalf("leo %d hw %d", l.LogEndOffset(), l.HighWatermark())
	}
	if l.NumSegments() >= segsBefore {
		t.Fatalf("segments %d, were %d", l.NumSegments(), segsBefore)
	}
	if got := l.EpochEntries(); len(got) != 2 || got[1] != (EpochEntry{2, 40}) {
		t.Fatalf("epochs %+v", got)
	}
	checkInvariants(t, l)
	if err := l.TruncateTo(40); err != nil {
		t.Fatal(err)
	}
	if got := l.EpochEntries(); len(got) != 1 {
		t.Fatalf("epochs after truncating the epoch start: %+v", got)
	}
	// Appending continues at the new end.
	if _, err := l.AppendAsFollower(followerBatch(t, 40, 2, 3, clk.Ms())); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, l)
	// Beyond the end: no-op.
	if err := l.TruncateTo(1000); err != nil || l.LogEndOffset() != 42 {
		t.Fatalf("no-op truncate: %v leo %d", err, l.LogEndOffset())
	}
	// Survives a restart (clean and unclean).
	dir := l.Dir()
	crash(l)
	l2 := openLog(t, dir, cfg, Options{Now: clk.Now})
	defer l2.Close()
	if l2.LogEndOffset() != 42 || len(logBatches(t, l2)) != 11 {
		t.Fatalf("after restart: leo %d", l2.LogEndOffset())
	}
	checkInvariants(t, l2)
}

func TestTruncateFullyAndDeleteRecords(t *testing.T) {
	clk := newTestClock()
	l := openLog(t, t.TempDir(), smallConfig(), Options{Now: clk.Now})
	defer l.Close()
	appendN(t, l, clk, 30, 2)
	l.SetHighWatermark(40)
	if _, err := l.DeleteRecordsBefore(41); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("delete beyond hw: %v", err)
	}
	ls, err := l.DeleteRecordsBefore(33)
	if err != nil || ls != 33 || l.LogStartOffset() != 33 {
		t.Fatalf("delete records: %d %v", ls, err)
	}
	if l.segments()[0].base > 33 {
		t.Fatalf("first segment %d beyond the log start", l.segments()[0].base)
	}
	if _, err := l.Read(32, 100, FetchLogEnd, true); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	r, err := l.Read(33, 1, FetchLogEnd, true)
	if err != nil || r.FirstOffset != 32 {
		t.Fatalf("read at log start: first %d err %v", r.FirstOffset, err)
	}
	r.Release()
	// The log start offset survives a restart through the checkpoint value.
	if err := l.TruncateFullyAndStartAt(1000); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 1000 || l.LogEndOffset() != 1000 || l.HighWatermark() != 1000 || l.NumSegments() != 1 || len(l.EpochEntries()) != 0 {
		t.Fatalf("after full truncation: start %d end %d hw %d", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark())
	}
	if _, err := l.AppendAsFollower(followerBatch(t, 1000, 2, 5, clk.Ms())); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, l)
	// Truncating below the log start truncates fully.
	if err := l.TruncateTo(500); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 500 || l.LogEndOffset() != 500 {
		t.Fatalf("truncate below start: %d %d", l.LogStartOffset(), l.LogEndOffset())
	}
	checkInvariants(t, l)
}

func TestRetention(t *testing.T) {
	clk := newTestClock()
	t.Run("time", func(t *testing.T) {
		cfg := smallConfig()
		cfg.RetentionMs = 60_000
		l := openLog(t, t.TempDir(), cfg, Options{Now: clk.Now})
		defer l.Close()
		appendN(t, l, clk, 20, 2) // old batches
		clk.Advance(2 * time.Minute)
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		appendN(t, l, clk, 3, 2) // recent batches
		// Nothing goes before the high watermark covers it.
		if n, err := l.DeleteOldSegments(); err != nil || n != 0 {
			t.Fatalf("deleted %d before hw (%v)", n, err)
		}
		l.SetHighWatermark(l.LogEndOffset())
		n, err := l.DeleteOldSegments()
		if err != nil || n == 0 {
			t.Fatalf("deleted %d (%v)", n, err)
		}
		if l.LogStartOffset() != 40 || l.NumSegments() != 1 {
			t.Fatalf("log start %d segments %d", l.LogStartOffset(), l.NumSegments())
		}
		// Everything expired: the log rolls and keeps an empty segment.
		clk.Advance(2 * time.Minute)
		if _, err := l.DeleteOldSegments(); err != nil {
			t.Fatal(err)
		}
		if l.LogStartOffset() != 46 || l.LogEndOffset() != 46 || l.NumSegments() != 1 {
			t.Fatalf("all expired: start %d end %d segments %d", l.LogStartOffset(), l.LogEndOffset(), l.NumSegments())
		}
		checkInvariants(t, l)
	})
	t.Run("size", func(t *testing.T) {
		cfg := smallConfig()
		cfg.RetentionBytes = 5000
		cfg.RetentionMs = -1
		l := openLog(t, t.TempDir(), cfg, Options{Now: clk.Now})
		defer l.Close()
		appendN(t, l, clk, 60, 2)
		l.SetHighWatermark(l.LogEndOffset())
		if _, err := l.DeleteOldSegments(); err != nil {
			t.Fatal(err)
		}
		if l.Size() > 5000+int64(smallConfig().SegmentBytes) || l.Size() < 5000-int64(smallConfig().SegmentBytes) {
			t.Fatalf("size %d after size retention", l.Size())
		}
		checkInvariants(t, l)
	})
	t.Run("compact policy keeps data", func(t *testing.T) {
		cfg := smallConfig()
		cfg.RetentionMs = 1
		cfg.CleanupPolicy = CleanupPolicy{Compact: true}
		l := openLog(t, t.TempDir(), cfg, Options{Now: clk.Now})
		defer l.Close()
		appendN(t, l, clk, 30, 2)
		l.SetHighWatermark(l.LogEndOffset())
		clk.Advance(time.Hour)
		if n, err := l.DeleteOldSegments(); err != nil || n != 0 {
			t.Fatalf("compacted topic lost %d segments (%v)", n, err)
		}
	})
}
