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

// FuzzIndexFiles feeds arbitrary bytes as the .index and .timeindex of a
// valid segment after a clean shutdown (when indexes are trusted). Open must
// not panic, and every read must still return exactly the segment's batches:
// a broken index is detected and rebuilt, never believed.
func FuzzIndexFiles(f *testing.F) {
	f.Add([]byte{}, []byte{})
	f.Add([]byte{0, 0, 0, 5, 0, 0, 1, 0}, []byte{0, 0, 1, 0x8b, 0xcf, 0xe5, 0x68, 0, 0, 0, 0, 5})
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 9, 0, 0, 0, 8}, make([]byte, 24))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0}, []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, offIdx, timeIdx []byte) {
		dir := t.TempDir()
		clk := newTestClock()
		var want [][]byte
		var seg []byte
		for i := int64(0); i < 12; i++ {
			s := plain(3, clk.Ms()+10*i)
			s.baseOffset = 3 * i
			b := mkBatch(t, s)
			want = append(want, b)
			seg = append(seg, b...)
		}
		os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), seg, 0o644)
		os.WriteFile(filepath.Join(dir, "00000000000000000000.index"), offIdx, 0o644)
		os.WriteFile(filepath.Join(dir, "00000000000000000000.timeindex"), timeIdx, 0o644)
		l, err := Open(dir, TopicPartition{Topic: "fuzz", Partition: 0}, smallConfig(), Options{Now: clk.Now, Logger: quietLogger(), HadCleanShutdown: true})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		defer l.Close()
		for off := int64(0); off < 36; off++ {
			r, err := l.Read(off, 1, FetchLogEnd, true)
			if err != nil {
				t.Fatalf("read %d: %v", off, err)
			}
			b, err := r.Bytes()
			r.Release()
			if err != nil || string(b) != string(want[off/3]) {
				t.Fatalf("read %d returned the wrong batch (%v)", off, err)
			}
		}
		// A plausible but wrong time index (entries in order, just not the
		// segment's) can mislead a timestamp search, as in Kafka; it must
		// not fail it.
		if _, _, err := l.OffsetForTimestamp(clk.Ms() + 45); err != nil {
			t.Fatalf("offset for timestamp: %v", err)
		}
		// Appends continue (rebuilding the active segment's index if the
		// reads found it wrong), and the log reads back whole.
		if _, err := l.AppendAsLeader(mkBatch(t, plain(2, clk.Ms())), 0, OriginClient); err != nil {
			t.Fatalf("append: %v", err)
		}
		if got := logBatches(t, l); len(got) != len(want)+1 || l.LogEndOffset() != 38 {
			t.Fatalf("after append: %d batches, leo %d", len(got), l.LogEndOffset())
		}
	})
}

// FuzzCheckpointFiles parses arbitrary bytes as each of the text files of a
// log directory: no panic, and whatever parses formats back to something
// that parses the same.
func FuzzCheckpointFiles(f *testing.F) {
	for _, s := range []string{
		"0\n2\nt 0 5\nu 3 9\n", "0\n1\n3 100\n", "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ",
		"#c\nversion=1\ncluster.id=x\nnode.id=3\n", "0\n99999999999999\n", "", "0\n1\na b c d\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if lines, err := parseCheckpoint("f", data, 3); err == nil {
			if back, err := parseCheckpoint("f", formatCheckpoint(joinFields(lines)), 3); err != nil || len(back) != len(lines) {
				t.Fatalf("offset checkpoint round trip: %v", err)
			}
		}
		_, _ = parseCheckpoint("f", data, 2)
		if id, err := parsePartitionMetadata(data); err == nil {
			if back, err := parsePartitionMetadata(formatPartitionMetadata(id)); err != nil || back != id {
				t.Fatalf("partition metadata round trip: %v", err)
			}
		}
		_, _ = parseProperties(data)
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, MetaPropertiesFileName), data, 0o644)
		_, _ = ReadMetaProperties(dir)
		os.WriteFile(filepath.Join(dir, LeaderEpochCheckpointFileName), data, 0o644)
		_, _ = loadEpochCache(dir)
		os.WriteFile(filepath.Join(dir, CleanShutdownFileName), data, 0o644)
		_, _, _ = readCleanShutdownMarker(dir)
	})
}

func joinFields(lines [][]string) []string {
	out := make([]string, len(lines))
	for i, f := range lines {
		for j, s := range f {
			if j > 0 {
				out[i] += " "
			}
			out[i] += s
		}
	}
	return out
}
