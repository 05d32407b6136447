package storage

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestAppendReadRoundTrip(t *testing.T) {
	clk := newTestClock()
	dir := t.TempDir()
	l := openLog(t, dir, smallConfig(), Options{Now: clk.Now})
	var want [][]byte
	for i := 0; i < 50; i++ {
		b := mkBatch(t, plain(3, clk.Ms()))
		info, err := l.AppendAsLeader(b, 7, OriginClient)
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if info.FirstOffset != int64(i*3) || info.LastOffset != int64(i*3+2) || info.NumRecords != 3 {
			t.Fatalf("append %d: %+v", i, info)
		}
		want = append(want, append([]byte(nil), b...))
	}
	if l.LogEndOffset() != 150 {
		t.Fatalf("leo %d", l.LogEndOffset())
	}
	if l.NumSegments() < 3 {
		t.Fatalf("expected rolls, have %d segments", l.NumSegments())
	}
	got := logBatches(t, l)
	if len(got) != len(want) {
		t.Fatalf("read %d batches, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
		h := headerOf(t, got[i])
		if h.PartitionLeaderEpoch != 7 || h.BaseOffset != int64(3*i) {
			t.Fatalf("batch %d header %+v", i, h)
		}
	}
	checkInvariants(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir, smallConfig(), Options{Now: clk.Now, HadCleanShutdown: true, RecoveryPoint: 150})
	defer l2.Close()
	if l2.LogEndOffset() != 150 {
		t.Fatalf("reopened leo %d", l2.LogEndOffset())
	}
	got2 := logBatches(t, l2)
	if len(got2) != len(want) {
		t.Fatalf("reopened: %d batches", len(got2))
	}
	checkInvariants(t, l2)
	// Reads in the middle of a batch return the batch holding the offset.
	res, err := l2.Read(4, 1, FetchLogEnd, true)
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstOffset != 3 || res.Size != int64(len(want[1])) {
		t.Fatalf("mid-batch read: first %d size %d", res.FirstOffset, res.Size)
	}
	res.Release()
	if _, err := l2.Read(151, 100, FetchLogEnd, false); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("read past end: %v", err)
	}
}
