package storage

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kmirror/kmirror/internal/record"
)

// FuzzSegmentRecovery feeds arbitrary bytes as the active segment file of a
// log that was not shut down cleanly. Open must not panic and must leave a
// valid log: invariants hold, reads work, appends continue, and a reopen
// gives the same log.
func FuzzSegmentRecovery(f *testing.F) {
	for _, seed := range fuzzSegmentSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		clk := newTestClock()
		cfg := smallConfig()
		l, err := Open(dir, TopicPartition{Topic: "fuzz", Partition: 0}, cfg, Options{Now: clk.Now, Logger: quietLogger()})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		checkInvariants(t, l)
		before := logBatches(t, l)
		leo := l.LogEndOffset()
		info, err := l.AppendAsLeader(mkBatch(t, plain(2, clk.Ms())), 0, OriginClient)
		if err != nil || info.FirstOffset != leo {
			t.Fatalf("append after recovery: %+v %v", info, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l2, err := Open(dir, TopicPartition{Topic: "fuzz", Partition: 0}, cfg, Options{Now: clk.Now, Logger: quietLogger()})
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		defer l2.Close()
		checkInvariants(t, l2)
		if got := logBatches(t, l2); len(got) != len(before)+1 || l2.LogEndOffset() != leo+2 {
			t.Fatalf("reopen: %d batches (had %d+1), leo %d", len(got), len(before), l2.LogEndOffset())
		}
	})
}

// fuzzSegmentSeeds are the in-code seeds (the committed corpus under
// testdata/fuzz/FuzzSegmentRecovery holds more).
func fuzzSegmentSeeds(tb testing.TB) [][]byte {
	var valid []byte
	off := int64(0)
	for i := 0; i < 3; i++ {
		s := plain(2, 1_700_000_000_000)
		s.baseOffset, s.leaderEp = off, int32(i)
		valid = append(valid, mkBatch(tb, s)...)
		off += 2
	}
	marker := record.BuildEndTxnMarker(5, 0, record.EndTxnMarker{CoordinatorEpoch: 1}, 1, 0)
	record.SetBaseOffset(marker, off)
	withMarker := append(append([]byte(nil), valid...), marker...)
	flipped := append([]byte(nil), valid...)
	flipped[len(flipped)/2] ^= 0x40
	return [][]byte{
		nil,
		valid,
		valid[:len(valid)-7],
		append(append([]byte(nil), valid...), make([]byte, 300)...),
		flipped,
		withMarker,
		{0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 2},
	}
}
