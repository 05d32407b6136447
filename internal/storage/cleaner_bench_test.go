package storage

import (
	"fmt"
	"testing"

	"github.com/kmirror/kmirror/internal/record"
)

// BenchmarkCleanerPass measures one cleaning pass over a log of 200k
// records (100-byte values, 10k keys, lz4 batches of 100 records, 1 MiB
// segments), from a fresh copy of the log each iteration.
func BenchmarkCleanerPass(b *testing.B) {
	clk := newTestClock()
	cfg := DefaultLogConfig()
	cfg.CleanupPolicy = CleanupPolicy{Compact: true}
	cfg.SegmentBytes = 1 << 20
	cfg.FileDeleteDelayMs = 0
	cfg.MessageTimestampAfterMaxMs = 1 << 62
	src := openLog(b, b.TempDir(), cfg, Options{Now: clk.Now})
	value := string(make([]byte, 100))
	n := 0
	for i := 0; i < 2000; i++ {
		recs := make([]kv, 100)
		for j := range recs {
			recs[j] = put(fmt.Sprintf("key-%05d", n%10_000), value)
			n++
		}
		s := plain(0, clk.Ms())
		s.codec = record.CodecLZ4
		if _, err := src.AppendAsLeader(kvBatch(b, s, recs...), 0, OriginClient); err != nil {
			b.Fatal(err)
		}
	}
	if err := src.Roll(); err != nil {
		b.Fatal(err)
	}
	src.SetHighWatermark(src.LogEndOffset())
	batches := logBatches(b, src)
	src.Close()
	b.ResetTimer()
	var bytes int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		l := openLog(b, b.TempDir(), cfg, Options{Now: clk.Now})
		for _, bt := range batches {
			if _, err := l.AppendAsFollower(bt); err != nil {
				b.Fatal(err)
			}
		}
		if err := l.Roll(); err != nil {
			b.Fatal(err)
		}
		l.SetHighWatermark(l.LogEndOffset())
		size := l.Size()
		c := newCleaner(128<<20, 0.9, nil, quietLogger())
		b.StartTimer()
		_, st, err := c.clean(l, -1, clk.Now())
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		bytes += size
		if st.recordsKept != 10_000 {
			b.Fatalf("kept %d records", st.recordsKept)
		}
		l.Close()
		b.StartTimer()
	}
	b.SetBytes(bytes / int64(b.N))
}
