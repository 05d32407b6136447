package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/record"
)

func TestAppendAsLeaderValidation(t *testing.T) {
	clk := newTestClock()
	now := clk.Ms()
	good := func() []byte { return mkBatch(t, plain(2, now)) }
	corruptCRC := func() []byte { b := good(); b[len(b)-1] ^= 1; return b }
	tooLarge := func() []byte { s := plain(40, now); s.valueSize = 1024; return mkBatch(t, s) }
	control := func() []byte { return record.BuildMirrorPIDReset(now, 0, "src") }
	future := func() []byte { return mkBatch(t, plain(1, now+2*3600*1000)) }
	old := func() []byte { return mkBatch(t, plain(1, now-10_000)) }
	noSeq := func() []byte { s := plain(1, now); s.pid, s.epoch, s.seq = 5, 0, -1; return mkBatch(t, s) }
	gappy := func() []byte {
		recs := []record.Record{{Key: []byte("a"), OffsetDelta: 0}, {Key: []byte("b"), OffsetDelta: 2}}
		b, err := record.Build(record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: now}, recs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	nullKey := func() []byte {
		recs := []record.Record{{Value: []byte("v")}}
		b, err := record.Build(record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: now}, recs)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	latFromClient := func() []byte {
		b := good()
		record.SetLogAppendTime(b, now)
		return b
	}
	cases := []struct {
		name   string
		batch  func() []byte
		mutate func(*LogConfig)
		origin AppendOrigin
		want   error
	}{
		{"corrupt crc", corruptCRC, nil, OriginClient, kerr.CorruptMessage},
		{"partial batch", func() []byte { b := good(); return b[:len(b)-3] }, nil, OriginClient, kerr.CorruptMessage},
		{"trailing garbage", func() []byte { return append(good(), 1, 2, 3) }, nil, OriginClient, kerr.CorruptMessage},
		{"empty", func() []byte { return nil }, nil, OriginClient, kerr.InvalidRecord},
		{"too large", tooLarge, func(c *LogConfig) { c.MaxMessageBytes = 4000 }, OriginClient, kerr.MessageTooLarge},
		{"control from client", control, nil, OriginClient, kerr.InvalidRecord},
		{"timestamp too new", future, func(c *LogConfig) { c.MessageTimestampAfterMaxMs = 3600 * 1000 }, OriginClient, kerr.InvalidTimestamp},
		{"timestamp too old", old, func(c *LogConfig) { c.MessageTimestampBeforeMaxMs = 1000 }, OriginClient, kerr.InvalidTimestamp},
		{"producer without sequence", noSeq, nil, OriginClient, kerr.InvalidRecord},
		{"offset deltas with a gap", gappy, nil, OriginClient, kerr.InvalidRecord},
		{"compacted topic null key", nullKey, func(c *LogConfig) { c.CleanupPolicy = CleanupPolicy{Compact: true} }, OriginClient, kerr.InvalidRecord},
		{"log append time from producer", latFromClient, func(c *LogConfig) { c.MessageTimestampType = record.LogAppendTime }, OriginClient, kerr.InvalidTimestamp},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig()
			if tc.mutate != nil {
				tc.mutate(&cfg)
			}
			l := openLog(t, t.TempDir(), cfg, Options{Now: clk.Now})
			defer l.Close()
			if _, err := l.AppendAsLeader(good(), 0, OriginClient); err != nil {
				t.Fatal(err)
			}
			before := l.Size()
			_, err := l.AppendAsLeader(tc.batch(), 0, tc.origin)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if l.LogEndOffset() != 2 || l.Size() != before {
				t.Fatalf("log changed: leo %d size %d (was %d)", l.LogEndOffset(), l.Size(), before)
			}
			checkInvariants(t, l)
		})
	}
}

func TestAppendAsLeaderStampsAndRecompresses(t *testing.T) {
	clk := newTestClock()
	cfg := smallConfig()
	cfg.MessageTimestampType = record.LogAppendTime
	cfg.CompressionType = "zstd"
	l := openLog(t, t.TempDir(), cfg, Options{Now: clk.Now})
	defer l.Close()
	in := mkBatch(t, plain(5, clk.Ms()-5000))
	inRecs, _ := record.Records(in, 0)
	info, err := l.AppendAsLeader(in, 3, OriginClient)
	if err != nil {
		t.Fatal(err)
	}
	if info.LogAppendTime != clk.Ms() || info.MaxTimestamp != clk.Ms() {
		t.Fatalf("info %+v", info)
	}
	bs := logBatches(t, l)
	if len(bs) != 1 {
		t.Fatalf("%d batches", len(bs))
	}
	h := headerOf(t, bs[0])
	if h.Codec() != record.CodecZstd || h.TimestampType() != record.LogAppendTime || h.MaxTimestamp != clk.Ms() || h.PartitionLeaderEpoch != 3 {
		t.Fatalf("header %+v", h)
	}
	if err := record.ValidateRecords(bs[0], true, 0); err != nil {
		t.Fatal(err)
	}
	out, _ := record.Records(bs[0], 0)
	for i := range out {
		if !bytes.Equal(out[i].Key, inRecs[i].Key) || !bytes.Equal(out[i].Value, inRecs[i].Value) {
			t.Fatalf("record %d changed", i)
		}
	}
}

func TestAppendAsLeaderFixesMaxTimestamp(t *testing.T) {
	clk := newTestClock()
	l := openLog(t, t.TempDir(), smallConfig(), Options{Now: clk.Now})
	defer l.Close()
	b := mkBatch(t, plain(3, clk.Ms()))
	// A producer that wrote a wrong max timestamp (CRC recomputed to match).
	binary.BigEndian.PutUint64(b[record.MaxTimestampPos:], 1)
	binary.BigEndian.PutUint32(b[record.CRCPos:], record.ComputeCRC(b))
	if _, err := l.AppendAsLeader(b, 0, OriginClient); err != nil {
		t.Fatal(err)
	}
	h := headerOf(t, logBatches(t, l)[0])
	if h.MaxTimestamp != clk.Ms()+2 {
		t.Fatalf("max timestamp %d, want %d", h.MaxTimestamp, clk.Ms()+2)
	}
	if err := record.ValidateCRC(logBatches(t, l)[0]); err != nil {
		t.Fatal(err)
	}
}

func TestDuplicateAnsweredWithOriginalOffsets(t *testing.T) {
	clk := newTestClock()
	l := openLog(t, t.TempDir(), smallConfig(), Options{Now: clk.Now})
	defer l.Close()
	idem := func(seq int32, n int) []byte {
		s := plain(n, clk.Ms())
		s.pid, s.epoch, s.seq = 42, 0, seq
		return mkBatch(t, s)
	}
	if _, err := l.AppendAsLeader(mkBatch(t, plain(4, clk.Ms())), 0, OriginClient); err != nil {
		t.Fatal(err)
	}
	first, err := l.AppendAsLeader(idem(0, 3), 0, OriginClient)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(idem(3, 2), 0, OriginClient); err != nil {
		t.Fatal(err)
	}
	leo := l.LogEndOffset()
	size := l.Size()
	retry, err := l.AppendAsLeader(idem(0, 3), 0, OriginClient)
	if err != nil {
		t.Fatal(err)
	}
	if !retry.Duplicate || retry.FirstOffset != first.FirstOffset || retry.LastOffset != first.LastOffset {
		t.Fatalf("retry answered %+v, first was %+v", retry, first)
	}
	if l.LogEndOffset() != leo || l.Size() != size {
		t.Fatal("a duplicate was written")
	}
	// Out of order sequence is refused.
	if _, err := l.AppendAsLeader(idem(9, 1), 0, OriginClient); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("out of order: %v", err)
	}
	// Duplicates are recognised after a clean restart (snapshot) too.
	dir := l.Dir()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLog(t, dir, smallConfig(), Options{Now: clk.Now, HadCleanShutdown: true})
	defer l2.Close()
	retry2, err := l2.AppendAsLeader(idem(3, 2), 0, OriginClient)
	if err != nil || !retry2.Duplicate || retry2.FirstOffset != 7 {
		t.Fatalf("after restart: %+v %v", retry2, err)
	}
}

func TestAppendAsFollower(t *testing.T) {
	clk := newTestClock()
	l := openLog(t, t.TempDir(), smallConfig(), Options{Now: clk.Now})
	defer l.Close()
	var in []byte
	in = append(in, followerBatch(t, 0, 3, 1, clk.Ms())...)
	in = append(in, followerBatch(t, 3, 2, 1, clk.Ms())...)
	in = append(in, followerBatch(t, 10, 2, 2, clk.Ms())...) // compaction gap 5..9
	partial := followerBatch(t, 12, 2, 2, clk.Ms())
	in = append(in, partial[:20]...)
	info, err := l.AppendAsFollower(in)
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstOffset != 0 || info.LastOffset != 11 || l.LogEndOffset() != 12 {
		t.Fatalf("info %+v leo %d", info, l.LogEndOffset())
	}
	want := []EpochEntry{{1, 0}, {2, 10}}
	if got := l.EpochEntries(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("epochs %+v", got)
	}
	// Offsets and epochs kept as given.
	bs := logBatches(t, l)
	if h := headerOf(t, bs[2]); h.BaseOffset != 10 || h.PartitionLeaderEpoch != 2 {
		t.Fatalf("third batch %+v", h)
	}
	// Reading inside the gap returns the batch after it.
	res, err := l.Read(6, 1<<20, FetchLogEnd, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstOffset != 10 {
		t.Fatalf("read in gap: first offset %d", res.FirstOffset)
	}
	res.Release()
	// Below the log end: refused.
	_, err = l.AppendAsFollower(followerBatch(t, 11, 1, 2, clk.Ms()))
	if !errors.Is(err, ErrUnexpectedAppendOffset) || !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("below leo: %v", err)
	}
	// Only a partial batch: nothing happens.
	info, err = l.AppendAsFollower(partial[:30])
	if err != nil || info.FirstOffset != -1 {
		t.Fatalf("partial only: %+v %v", info, err)
	}
	// Out-of-order batches within one append: refused as corrupt.
	bad := append(followerBatch(t, 20, 2, 2, clk.Ms()), followerBatch(t, 20, 1, 2, clk.Ms())...)
	if _, err := l.AppendAsFollower(bad); !errors.Is(err, kerr.CorruptMessage) {
		t.Fatalf("out of order: %v", err)
	}
	checkInvariants(t, l)
}

func TestFollowerAppendAcrossHugeGapRolls(t *testing.T) {
	clk := newTestClock()
	l := openLog(t, t.TempDir(), smallConfig(), Options{Now: clk.Now})
	defer l.Close()
	far := int64(1) << 40
	in := append(followerBatch(t, 0, 2, 0, clk.Ms()), followerBatch(t, far, 2, 0, clk.Ms())...)
	if _, err := l.AppendAsFollower(in); err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() != 2 || l.segments()[1].base != far || l.LogEndOffset() != far+2 {
		t.Fatalf("segments %d, leo %d", l.NumSegments(), l.LogEndOffset())
	}
	checkInvariants(t, l)
	dir := l.Dir()
	l.Close()
	l2 := openLog(t, dir, smallConfig(), Options{Now: clk.Now})
	defer l2.Close()
	if l2.LogEndOffset() != far+2 || len(logBatches(t, l2)) != 2 {
		t.Fatalf("after unclean reopen: leo %d", l2.LogEndOffset())
	}
	checkInvariants(t, l2)
}

func TestMirrorPIDResetClearsProducers(t *testing.T) {
	clk := newTestClock()
	idem := func(pid int64) []byte {
		s := plain(2, clk.Ms())
		s.pid, s.epoch, s.seq = pid, 0, 0
		return mkBatch(t, s)
	}
	t.Run("leader", func(t *testing.T) {
		l := openLog(t, t.TempDir(), smallConfig(), Options{Now: clk.Now})
		defer l.Close()
		for _, pid := range []int64{1, 2} {
			if _, err := l.AppendAsLeader(idem(pid), 0, OriginClient); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(l.ActiveProducers()); n != 2 {
			t.Fatalf("%d producers", n)
		}
		if _, err := l.AppendAsLeader(record.BuildMirrorPIDReset(clk.Ms(), 0, "src"), 1, OriginClient); !errors.Is(err, kerr.InvalidRecord) {
			t.Fatalf("reset from a client: %v", err)
		}
		if _, err := l.AppendAsLeader(record.BuildMirrorPIDReset(clk.Ms(), 0, "src"), 1, OriginCoordinator); err != nil {
			t.Fatal(err)
		}
		if n := len(l.ActiveProducers()); n != 0 {
			t.Fatalf("%d producers after reset", n)
		}
		// The old producer may start over at any sequence after the reset.
		if _, err := l.AppendAsLeader(idem(1), 1, OriginClient); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("follower and recovery", func(t *testing.T) {
		dir := t.TempDir()
		l := openLog(t, dir, smallConfig(), Options{Now: clk.Now})
		var in []byte
		for i, pid := range []int64{1, 2} {
			b := idem(pid)
			record.SetBaseOffset(b, int64(2*i))
			in = append(in, b...)
		}
		reset := record.BuildMirrorPIDReset(clk.Ms(), 0, "src")
		record.SetBaseOffset(reset, 4)
		in = append(in, reset...)
		if _, err := l.AppendAsFollower(in); err != nil {
			t.Fatal(err)
		}
		if n := len(l.ActiveProducers()); n != 0 {
			t.Fatalf("%d producers after follower reset", n)
		}
		// A producer after the reset survives it.
		b := idem(3)
		record.SetBaseOffset(b, 5)
		if _, err := l.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
		// Unclean restart: no snapshot at the end, recovery replays the reset.
		crash(l)
		l2 := openLog(t, dir, smallConfig(), Options{Now: clk.Now})
		defer l2.Close()
		ps := l2.ActiveProducers()
		if len(ps) != 1 || ps[0].ProducerID != 3 {
			t.Fatalf("after recovery: %+v", ps)
		}
		if got, want := ps, replayProducers(t, logBatches(t, l2)); len(got) != len(want) || got[0].ProducerID != want[0].ProducerID {
			t.Fatalf("state %+v, replay %+v", got, want)
		}
	})
}

func TestAbortedTransactionsAndLSO(t *testing.T) {
	clk := newTestClock()
	l := openLog(t, t.TempDir(), smallConfig(), Options{Now: clk.Now})
	defer l.Close()
	txnBatch := func(pid int64, seq int32) []byte {
		s := plain(2, clk.Ms())
		s.pid, s.epoch, s.seq, s.txn = pid, 0, seq, true
		return mkBatch(t, s)
	}
	mustAppend := func(b []byte, origin AppendOrigin) AppendInfo {
		t.Helper()
		info, err := l.AppendAsLeader(b, 0, origin)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	mustAppend(mkBatch(t, plain(1, clk.Ms())), OriginClient) // 0
	a1 := mustAppend(txnBatch(7, 0), OriginClient)           // 1-2: pid 7 txn
	mustAppend(txnBatch(8, 0), OriginClient)                 // 3-4: pid 8 txn
	l.SetHighWatermark(l.LogEndOffset())
	if lso := l.LastStableOffset(); lso != a1.FirstOffset {
		t.Fatalf("lso %d, want %d", lso, a1.FirstOffset)
	}
	abort := mustAppend(record.BuildEndTxnMarker(7, 0, record.EndTxnMarker{Commit: false, CoordinatorEpoch: 1}, clk.Ms(), 0), OriginCoordinator) // 5
	l.SetHighWatermark(l.LogEndOffset())
	if lso := l.LastStableOffset(); lso != 3 {
		t.Fatalf("lso after abort %d, want 3 (pid 8 still open)", lso)
	}
	mustAppend(record.BuildEndTxnMarker(8, 0, record.EndTxnMarker{Commit: true, CoordinatorEpoch: 1}, clk.Ms(), 0), OriginCoordinator) // 6
	// The commit marker is not yet below the high watermark: the committed
	// transaction still holds the LSO at its first offset.
	if lso := l.LastStableOffset(); lso != 3 {
		t.Fatalf("lso before hw moves %d, want 3", lso)
	}
	l.SetHighWatermark(l.LogEndOffset())
	if lso := l.LastStableOffset(); lso != 7 {
		t.Fatalf("lso %d, want 7", lso)
	}
	res, err := l.Read(0, 1<<20, FetchTxnCommitted, false)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	if len(res.AbortedTxns) != 1 || res.AbortedTxns[0].ProducerID != 7 || res.AbortedTxns[0].FirstOffset != 1 || res.AbortedTxns[0].LastOffset != abort.FirstOffset {
		t.Fatalf("aborted %+v", res.AbortedTxns)
	}
	// A committed read that ends before the aborted transaction starts
	// reports nothing.
	res2, err := l.Read(0, 1, FetchTxnCommitted, true)
	if err != nil {
		t.Fatal(err)
	}
	defer res2.Release()
	if res2.FirstOffset != 0 || len(res2.AbortedTxns) != 0 {
		t.Fatalf("first batch only: %+v", res2.AbortedTxns)
	}
	// The txn index survives an unclean recovery.
	dir := l.Dir()
	crash(l)
	l2 := openLog(t, dir, smallConfig(), Options{Now: clk.Now, HighWatermark: 7})
	defer l2.Close()
	res3, err := l2.Read(0, 1<<20, FetchTxnCommitted, false)
	if err != nil {
		t.Fatal(err)
	}
	defer res3.Release()
	if len(res3.AbortedTxns) != 1 || res3.AbortedTxns[0].ProducerID != 7 {
		t.Fatalf("after recovery: %+v", res3.AbortedTxns)
	}
}

// TestLargeBatchValidation covers batches big enough for the CRC to be
// checked concurrently with the record walk.
func TestLargeBatchValidation(t *testing.T) {
	clk := newTestClock()
	cfg := smallConfig()
	cfg.MaxMessageBytes = 1 << 20
	cfg.SegmentBytes = 4 << 20
	l := openLog(t, t.TempDir(), cfg, Options{Now: clk.Now})
	defer l.Close()
	big := func() []byte {
		s := plain(200, clk.Ms())
		s.valueSize = 1000
		return mkBatch(t, s)
	}
	b := big()
	if len(b) < overlapCRCBytes {
		t.Fatalf("batch of %d bytes is too small for the test", len(b))
	}
	bad := big()
	bad[len(bad)/2] ^= 1
	if _, err := l.AppendAsLeader(bad, 0, OriginClient); !errors.Is(err, kerr.CorruptMessage) {
		t.Fatalf("corrupt large batch: %v", err)
	}
	// A bad CRC wins over what the record walk finds (here: a record count
	// that does not match).
	bad2 := big()
	binary.BigEndian.PutUint32(bad2[record.RecordsCountPos:], 7)
	if _, err := l.AppendAsLeader(bad2, 0, OriginClient); !errors.Is(err, kerr.CorruptMessage) {
		t.Fatalf("corrupt large batch with a wrong count: %v", err)
	}
	binary.BigEndian.PutUint64(b[record.MaxTimestampPos:], 5)
	binary.BigEndian.PutUint32(b[record.CRCPos:], record.ComputeCRC(b))
	if _, err := l.AppendAsLeader(b, 0, OriginClient); err != nil {
		t.Fatal(err)
	}
	got := logBatches(t, l)
	if len(got) != 1 || headerOf(t, got[0]).MaxTimestamp != clk.Ms()+199 || record.ValidateRecords(got[0], true, 0) != nil {
		t.Fatalf("large batch stored wrong: %+v", headerOf(t, got[0]))
	}
}

// TestLargeFollowerAppendWithBadCRC: the CRC of a large follower append is
// checked while it is written; a bad one leaves the log (and its file)
// unchanged.
func TestLargeFollowerAppendWithBadCRC(t *testing.T) {
	clk := newTestClock()
	cfg := smallConfig()
	cfg.SegmentBytes = 8 << 20
	l := openLog(t, t.TempDir(), cfg, Options{Now: clk.Now})
	defer l.Close()
	var in []byte
	for i := int64(0); i < 4; i++ {
		s := plain(100, clk.Ms())
		s.valueSize = 500
		s.baseOffset, s.leaderEp = 100*i, 1
		in = append(in, mkBatch(t, s)...)
	}
	if len(in) < overlapCRCBytes {
		t.Fatalf("append of %d bytes too small", len(in))
	}
	bad := append([]byte(nil), in...)
	bad[len(bad)-10] ^= 0x10 // in the last batch
	if _, err := l.AppendAsFollower(bad); !errors.Is(err, kerr.CorruptMessage) {
		t.Fatalf("bad crc: %v", err)
	}
	st, _ := l.active().log.Stat()
	if l.LogEndOffset() != 0 || l.Size() != 0 || st.Size() != 0 || len(l.EpochEntries()) != 0 || len(l.ActiveProducers()) != 0 {
		t.Fatalf("log changed: leo %d size %d file %d", l.LogEndOffset(), l.Size(), st.Size())
	}
	if _, err := l.AppendAsFollower(in); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 400 || len(logBatches(t, l)) != 4 {
		t.Fatalf("leo %d", l.LogEndOffset())
	}
	checkInvariants(t, l)
}

// A leader decompresses every compressed batch to validate its records: it
// must reuse its decompression buffer rather than allocate a batch's
// decompressed size on every append.
func TestLeaderValidationReusesDecompressionBuffers(t *testing.T) {
	clk := newTestClock()
	cfg := smallConfig()
	cfg.MaxMessageBytes = 1 << 20
	cfg.SegmentBytes = 64 << 20
	l := openLog(t, t.TempDir(), cfg, Options{Now: clk.Now})
	defer l.Close()
	s := plain(500, clk.Ms())
	s.valueSize, s.codec = 1000, record.CodecLZ4
	batch := mkBatch(t, s)
	// What decompressing the batch afresh costs.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := record.Records(batch, 0); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	fresh := after.TotalAlloc - before.TotalAlloc
	const rounds = 40
	in := make([]byte, len(batch))
	copy(in, batch)
	if _, err := l.AppendAsLeader(in, 0, OriginClient); err != nil { // warm up
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range rounds {
		copy(in, batch)
		if _, err := l.AppendAsLeader(in, 0, OriginClient); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	// sync.Pool may drop a buffer now and then (under the race detector,
	// one Put in four); without reuse every append would pay fresh.
	if got := after.TotalAlloc - before.TotalAlloc; got > rounds*fresh/2 {
		t.Errorf("%d appends of a %d-byte lz4 batch allocated %d bytes; decompressing it once allocates %d", rounds, len(batch), got, fresh)
	}
}

// TestLargeLeaderAppendValidatedWhileWritten covers appends big enough to be
// validated while they are written: every record rule still refuses the
// append with its error, the log (and its file) unchanged, and a bad CRC
// is reported before anything the record walk finds.
func TestLargeLeaderAppendValidatedWhileWritten(t *testing.T) {
	clk := newTestClock()
	now := clk.Ms()
	large := func(codec record.Codec, mutate func([]record.Record)) []byte {
		rng := rand.New(rand.NewPCG(1, 2))
		recs := make([]record.Record, 300)
		for i := range recs {
			v := make([]byte, 1000)
			for j := range v {
				v[j] = byte(rng.Uint32()) // incompressible: large with lz4 too
			}
			recs[i] = record.Record{TimestampDelta: int64(i), Key: []byte(fmt.Sprint("k", i)), Value: v}
		}
		record.NumberRecords(recs)
		if mutate != nil {
			mutate(recs)
		}
		b, err := record.Build(record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: now, Codec: codec}, recs)
		if err != nil {
			t.Fatal(err)
		}
		fixLastOffsetDelta(b)
		if len(b) < overlapCRCBytes {
			t.Fatalf("batch of %d bytes is too small for the test", len(b))
		}
		return b
	}
	gap := func(recs []record.Record) { shiftDeltas(recs, 150) }
	nullKey := func(recs []record.Record) { recs[299].Key = nil }
	tooOld := func(recs []record.Record) { recs[10].TimestampDelta = -3600 * 1000 }
	withBadCRC := func(b []byte) []byte { b[len(b)-1] ^= 1; return b }
	cases := []struct {
		name   string
		batch  []byte
		mutate func(*LogConfig)
		want   error
	}{
		{"offset gap", large(record.CodecNone, gap), nil, kerr.InvalidRecord},
		{"offset gap lz4", large(record.CodecLZ4, gap), nil, kerr.InvalidRecord},
		{"null key on a compacted topic", large(record.CodecNone, nullKey), func(c *LogConfig) { c.CleanupPolicy = CleanupPolicy{Compact: true} }, kerr.InvalidRecord},
		{"timestamp too old", large(record.CodecNone, tooOld), func(c *LogConfig) { c.MessageTimestampBeforeMaxMs = 1000 }, kerr.InvalidTimestamp},
		{"bad crc and a bad record", withBadCRC(large(record.CodecNone, gap)), nil, kerr.CorruptMessage},
		{"good batch then a bad one", append(large(record.CodecNone, nil), large(record.CodecNone, gap)...), nil, kerr.InvalidRecord},
		{"bad record then a bad crc", append(large(record.CodecNone, gap), withBadCRC(large(record.CodecNone, nil))...), nil, kerr.CorruptMessage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := smallConfig()
			cfg.MaxMessageBytes = 1 << 20
			cfg.SegmentBytes = 8 << 20
			if c.mutate != nil {
				c.mutate(&cfg)
			}
			l := openLog(t, t.TempDir(), cfg, Options{Now: clk.Now})
			defer l.Close()
			if _, err := l.AppendAsLeader(c.batch, 0, OriginClient); !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			st, _ := l.active().log.Stat()
			if l.LogEndOffset() != 0 || l.Size() != 0 || st.Size() != 0 || len(l.EpochEntries()) != 0 {
				t.Fatalf("log changed: leo %d size %d file %d", l.LogEndOffset(), l.Size(), st.Size())
			}
			// The log still takes good appends.
			if _, err := l.AppendAsLeader(large(record.CodecLZ4, nil), 0, OriginClient); err != nil {
				t.Fatal(err)
			}
			if l.LogEndOffset() != 300 {
				t.Fatalf("leo %d after a good append", l.LogEndOffset())
			}
			checkInvariants(t, l)
		})
	}
}

// A reader never sees a large append that its validation, made while the
// bytes are written, refuses.
func TestRefusedLargeAppendIsNeverVisible(t *testing.T) {
	clk := newTestClock()
	cfg := smallConfig()
	cfg.MaxMessageBytes = 1 << 20
	cfg.SegmentBytes = 64 << 20
	l := openLog(t, t.TempDir(), cfg, Options{Now: clk.Now})
	defer l.Close()
	s := plain(200, clk.Ms())
	s.valueSize = 1000
	good := mkBatch(t, s)
	recs, err := record.Records(good, 0)
	if err != nil {
		t.Fatal(err)
	}
	shiftDeltas(recs, 100)
	bad, err := record.Build(record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: clk.Ms()}, recs)
	if err != nil {
		t.Fatal(err)
	}
	fixLastOffsetDelta(bad)
	if _, err := l.AppendAsLeader(append([]byte(nil), good...), 0, OriginClient); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	seen := make(chan error, 1)
	go func() {
		var err error
		defer func() { seen <- err }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if leo := l.LogEndOffset(); leo != 200 {
				err = fmt.Errorf("log end offset %d", leo)
				return
			}
			res, rerr := l.Read(200, 1<<20, FetchLogEnd, true)
			if rerr != nil {
				err = rerr
				return
			}
			n := res.Size
			res.Release()
			if n != 0 {
				err = fmt.Errorf("read %d bytes past the log end", n)
				return
			}
		}
	}()
	for range 50 {
		if _, err := l.AppendAsLeader(append([]byte(nil), bad...), 0, OriginClient); !errors.Is(err, kerr.InvalidRecord) {
			t.Fatalf("bad batch: %v", err)
		}
	}
	close(stop)
	if err := <-seen; err != nil {
		t.Fatalf("a reader saw the refused append: %v", err)
	}
}

// shiftDeltas leaves a gap in the offset deltas before record from.
func shiftDeltas(recs []record.Record, from int) {
	for i := from; i < len(recs); i++ {
		recs[i].OffsetDelta++
	}
}

// fixLastOffsetDelta makes a batch's header consistent with its record
// count (numRecords-1), as a producer's header is, whatever its records'
// deltas are, so that only the record walk can tell them wrong.
func fixLastOffsetDelta(b []byte) {
	n := binary.BigEndian.Uint32(b[record.RecordsCountPos:])
	binary.BigEndian.PutUint32(b[record.LastOffsetDeltaPos:], n-1)
	binary.BigEndian.PutUint32(b[record.CRCPos:], record.ComputeCRC(b))
}
