package storage

import (
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/record"
)

func TestOffsetForTimestamp(t *testing.T) {
	clk := newTestClock()
	l := openLog(t, t.TempDir(), smallConfig(), Options{Now: clk.Now})
	defer l.Close()
	base := clk.Ms()
	// 30 batches of 3 records; batch i has timestamps base+10i .. base+10i+2,
	// except batch 12 whose records go back in time.
	for i := 0; i < 30; i++ {
		s := plain(3, base+int64(10*i))
		if i == 12 {
			s.ts = base + 500 // the largest timestamp of all, at offsets 36..38
		}
		if _, err := l.AppendAsLeader(mkBatch(t, s), int32(i/10), OriginClient); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		ts      int64
		wantOff int64
		wantTs  int64
		ok      bool
	}{
		{base - 100, 0, base, true},
		{base, 0, base, true},
		{base + 1, 1, base + 1, true},
		{base + 3, 3, base + 10, true},
		{base + 55, 18, base + 60, true},
		{base + 120, 36, base + 500, true}, // batch 12 holds the first record >= ts
		{base + 291, 36, base + 500, true},
		{base + 501, 37, base + 501, true},
		{base + 503, 0, 0, false},
	}
	for _, c := range cases {
		r, ok, err := l.OffsetForTimestamp(c.ts)
		if err != nil || ok != c.ok || (ok && (r.Offset != c.wantOff || r.Timestamp != c.wantTs)) {
			t.Errorf("ts %d: %+v %v %v, want offset %d ts %d", c.ts-base, r, ok, err, c.wantOff, c.wantTs-base)
		}
	}
	if r, ok, _ := l.OffsetForTimestamp(MaxTimestamp); !ok || r.Offset != 38 || r.Timestamp != base+502 || r.LeaderEpoch != 1 {
		t.Fatalf("max timestamp: %+v", r)
	}
	if r, ok, _ := l.OffsetForTimestamp(LatestTimestamp); !ok || r.Offset != 90 || r.LeaderEpoch != 2 {
		t.Fatalf("latest: %+v", r)
	}
	l.SetHighWatermark(90)
	if _, err := l.DeleteRecordsBefore(40); err != nil {
		t.Fatal(err)
	}
	if r, ok, _ := l.OffsetForTimestamp(EarliestTimestamp); !ok || r.Offset != 40 || r.LeaderEpoch != 1 {
		t.Fatalf("earliest: %+v", r)
	}
	// Below the log start offset nothing is returned.
	if r, ok, _ := l.OffsetForTimestamp(base); !ok || r.Offset != 40 {
		t.Fatalf("after delete records: %+v %v", r, ok)
	}
	// Still right after a restart (time indexes read back from disk).
	dir := l.Dir()
	l.Close()
	l2 := openLog(t, dir, smallConfig(), Options{Now: clk.Now, HadCleanShutdown: true, LogStartOffset: 40})
	defer l2.Close()
	// Batch 12 (offsets 36..38) is below the log start now.
	if r, ok, _ := l2.OffsetForTimestamp(base + 291); !ok || r.Offset != 88 {
		t.Fatalf("after restart: %+v", r)
	}
	if r, ok, _ := l2.OffsetForTimestamp(MaxTimestamp); !ok || r.Offset != 89 || r.Timestamp != base+292 {
		t.Fatalf("max after restart: %+v", r)
	}
}

func TestOffsetForTimestampLogAppendTime(t *testing.T) {
	clk := newTestClock()
	cfg := smallConfig()
	cfg.MessageTimestampType = record.LogAppendTime
	l := openLog(t, t.TempDir(), cfg, Options{Now: clk.Now})
	defer l.Close()
	for i := 0; i < 5; i++ {
		clk.Advance(time.Second)
		if _, err := l.AppendAsLeader(mkBatch(t, plain(2, 1)), 0, OriginClient); err != nil {
			t.Fatal(err)
		}
	}
	r, ok, err := l.OffsetForTimestamp(clk.Ms() - 1500)
	if err != nil || !ok || r.Offset != 6 || r.Timestamp != clk.Ms()-1000 {
		t.Fatalf("%+v %v %v", r, ok, err)
	}
}
