package storage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/record"
)

// TestCleanerKeepsLatestValuePerKey writes several versions of a few keys
// over many segments and checks one pass leaves exactly the latest version
// of each key at its original offset, batches left whole are byte-identical,
// the gaps read through Read and replicate to a follower.
func TestCleanerKeepsLatestValuePerKey(t *testing.T) {
	ct := newCleanerTest(t, compactConfig())
	var before [][]byte
	for round := 0; round < 6; round++ {
		for k := 0; k < 5; k++ {
			ct.put(put(fmt.Sprintf("k%d", k), fmt.Sprintf("v%d-%d", k, round)))
		}
	}
	ct.put(put("k0", "final0"), put("k9", "only9")) // offsets 30, 31
	ct.roll()                                       // everything becomes cleanable
	ct.put(put("k1", "active1"))                    // offset 32, in the active segment
	before = logBatches(t, ct.l)
	if ct.l.NumSegments() < 4 {
		t.Fatalf("%d segments; the test wants several", ct.l.NumSegments())
	}
	// k1's newest value is in the active segment, which is never cleaned:
	// its previous one stays too.
	latest := []string{"26:k1=v1-5", "27:k2=v2-5", "28:k3=v3-5", "29:k4=v4-5", "30:k0=final0", "31:k9=only9", "32:k1=active1"}
	st := ct.clean()
	if ct.cp != 32 {
		t.Fatalf("checkpoint %d, want 32 (the active segment's base)", ct.cp)
	}
	if st.recordsKept >= st.recordsRead {
		t.Fatalf("stats %+v", st)
	}
	wantRecords(t, ct.l, latest...)
	// The batches kept whole are byte for byte the ones written.
	orig := batchesByBase(t, before)
	for _, b := range logBatches(t, ct.l) {
		h := headerOf(t, b)
		if h.BaseOffset == 26 || h.BaseOffset == 30 || h.BaseOffset == 32 {
			if !bytes.Equal(b, orig[h.BaseOffset]) {
				t.Fatalf("batch %d changed although all its records were kept", h.BaseOffset)
			}
		}
	}
	// Reads at removed offsets land on the next kept batch (which may be an
	// empty one the cleaner keeps at the end of a rewritten group).
	kept := logBatches(t, ct.l)
	for off := int64(0); off <= 32; off++ {
		want := int64(-1)
		for _, b := range kept {
			if h := headerOf(t, b); h.LastOffset() >= off {
				want = h.BaseOffset
				break
			}
		}
		r, err := ct.l.Read(off, 1, FetchHighWatermark, true)
		if err != nil || r.FirstOffset != want {
			t.Fatalf("read at %d: first %d, want %d, %v", off, r.FirstOffset, want, err)
		}
		r.Release()
	}
	// A follower takes the compacted bytes as they are.
	f := replicate(t, ct.l, ct.cfg, ct.clk)
	defer f.Close()
	got, want := logBatches(t, f), logBatches(t, ct.l)
	if len(got) != len(want) {
		t.Fatalf("follower has %d batches, leader %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("follower batch %d differs", i)
		}
	}
	if f.LogEndOffset() != ct.l.LogEndOffset() {
		t.Fatalf("follower LEO %d, leader %d", f.LogEndOffset(), ct.l.LogEndOffset())
	}
	checkInvariants(t, f)
	// A second pass with nothing dirty changes nothing.
	again := logBatches(t, ct.l)
	ct.clean()
	if after := logBatches(t, ct.l); len(after) != len(again) {
		t.Fatal("a pass without dirty data changed the log")
	}
	// The result survives a restart, clean and unclean.
	ct.reopen()
	wantRecords(t, ct.l, latest...)
	crash(ct.l)
	ct.l = openLog(t, ct.dir, ct.cfg, Options{Now: ct.clk.Now})
	wantRecords(t, ct.l, latest...)
	checkInvariants(t, ct.l)
}

// TestCleanerRebuildsBatchesKeepingIdentity checks a batch that loses some
// records keeps its offsets, codec, producer fields and absolute record
// timestamps.
func TestCleanerRebuildsBatchesKeepingIdentity(t *testing.T) {
	for _, codec := range []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			ct := newCleanerTest(t, compactConfig())
			s := plain(0, ct.clk.Ms())
			s.codec, s.pid, s.epoch, s.seq = codec, 7, 3, 0
			ct.append(kvBatch(t, s, put("a", "1"), put("b", "1"), put("c", "1"), put("d", "1"))) // 0..3
			before := recordsOf(t, logBatches(t, ct.l))
			ct.put(put("a", "2"), put("d", "2")) // 4, 5: a and d of the first batch go, including its last record
			ct.roll()
			ct.clean()
			bs := logBatches(t, ct.l)
			h := headerOf(t, bs[0])
			if h.BaseOffset != 0 || h.LastOffset() != 3 || h.NumRecords != 2 || h.Codec() != codec ||
				h.ProducerID != 7 || h.ProducerEpoch != 3 || h.BaseSequence != 0 || h.LastSequence() != 3 || h.HasDeleteHorizon() {
				t.Fatalf("rebuilt header %+v", h)
			}
			rs := recordsOf(t, bs[:1])
			if len(rs) != 2 || rs[0].offset != 1 || rs[1].offset != 2 {
				t.Fatalf("records %v", describe(rs))
			}
			// Absolute timestamps are unchanged.
			tsOf := func(batch []byte, off int64) int64 {
				var ts int64 = -1
				hh := headerOf(t, batch)
				_ = record.ForEachRecord(batch, 0, func(r record.Record) error {
					if hh.BaseOffset+int64(r.OffsetDelta) == off {
						ts = hh.BaseTimestamp + r.TimestampDelta
					}
					return nil
				})
				return ts
			}
			_ = before
			if got, want := tsOf(bs[0], 2), s.ts+2; got != want {
				t.Fatalf("record 2 timestamp %d, want %d", got, want)
			}
			if h.MaxTimestamp != s.ts+2 {
				t.Fatalf("max timestamp %d, want %d", h.MaxTimestamp, s.ts+2)
			}
		})
	}
}

// TestCleanerDropsRecordsWithoutKey: a topic switched to compaction drops
// its keyless records, as Kafka's cleaner does.
func TestCleanerDropsRecordsWithoutKey(t *testing.T) {
	cfg := compactConfig()
	del := cfg
	del.CleanupPolicy = CleanupPolicy{Delete: true}
	ct := newCleanerTest(t, cfg)
	ct.l.UpdateConfig(del)
	ct.put(kv{noKey: true, value: "x"}, put("a", "1"), kv{noKey: true, value: "y"}) // 0..2
	ct.put(kv{noKey: true, value: "z"})                                             // 3
	ct.l.UpdateConfig(cfg)
	ct.put(put("b", "1")) // 4
	ct.roll()
	st := ct.clean()
	if st.keylessDropped != 3 {
		t.Fatalf("keyless dropped %d, want 3", st.keylessDropped)
	}
	wantRecords(t, ct.l, "1:a=1", "4:b=1")
}

// TestCleanerTombstonesTwoPhases: a tombstone removes the older values of
// its key, gets a delete horizon on the first pass, and disappears on a pass
// after the horizon.
func TestCleanerTombstonesTwoPhases(t *testing.T) {
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 60_000
	ct := newCleanerTest(t, cfg)
	ct.put(put("a", "1"), put("b", "1")) // 0, 1
	ct.put(tomb("a"))                    // 2
	ct.roll()
	t0 := ct.clk.Ms()
	ct.clean()
	wantRecords(t, ct.l, "1:b=1", "2:a=<nil>")
	h := headerOf(t, logBatches(t, ct.l)[1])
	if !h.HasDeleteHorizon() || h.BaseTimestamp != t0+60_000 {
		t.Fatalf("tombstone batch: horizon %v at %d, want %d", h.HasDeleteHorizon(), h.BaseTimestamp, t0+60_000)
	}
	// The record keeps its timestamp although the base timestamp moved.
	if rs := recordsOf(t, logBatches(t, ct.l)[1:2]); len(rs) != 1 {
		t.Fatal(rs)
	}
	// Before the horizon, a new pass (new dirty data) keeps the tombstone.
	ct.clk.Advance(59_999 * time.Millisecond)
	ct.put(put("c", "1")) // 3
	ct.roll()
	ct.clean()
	wantRecords(t, ct.l, "1:b=1", "2:a=<nil>", "3:c=1")
	// At the horizon it goes.
	ct.clk.Advance(1e6)
	ct.put(put("d", "1")) // 4
	ct.roll()
	ct.clean()
	wantRecords(t, ct.l, "1:b=1", "3:c=1", "4:d=1")
}

// TestCleanerCompactionLag: segments with records newer than
// min.compaction.lag.ms are not cleaned; a dirty record older than
// max.compaction.lag.ms makes the log need cleaning whatever its ratio.
func TestCleanerCompactionLag(t *testing.T) {
	cfg := compactConfig()
	cfg.MinCompactionLagMs = 10_000
	ct := newCleanerTest(t, cfg)
	ct.put(put("a", "1")) // 0
	ct.put(put("a", "2")) // 1
	ct.roll()
	ct.clk.Advance(20_000 * time.Millisecond)
	ct.put(put("a", "3")) // 2: newer than the lag
	ct.roll()
	ct.put(put("z", "1")) // active
	ct.clean()
	if ct.cp != 2 {
		t.Fatalf("checkpoint %d, want 2 (the segment within the lag is uncleanable)", ct.cp)
	}
	wantRecords(t, ct.l, "1:a=2", "2:a=3", "3:z=1")
	ct.clk.Advance(10_001 * time.Millisecond)
	ct.clean()
	wantRecords(t, ct.l, "2:a=3", "3:z=1")

	// max.compaction.lag.ms
	cfg = compactConfig()
	cfg.MaxCompactionLagMs = 5_000
	ct = newCleanerTest(t, cfg)
	ct.put(put("a", "1"))
	ct.roll()
	ct.put(put("b", "1"))
	o, err := ct.l.cleanOffsets(-1, ct.clk.Ms())
	if err != nil || o.needNow || o.cleanableBytes == 0 {
		t.Fatalf("offsets %+v %v", o, err)
	}
	ct.clk.Advance(5_001 * time.Millisecond)
	if o, _ = ct.l.cleanOffsets(-1, ct.clk.Ms()); !o.needNow {
		t.Fatalf("a dirty record older than max.compaction.lag.ms: %+v", o)
	}
	// Once cleaned, the record is clean: nothing is needed now.
	ct.clean()
	if o, _ = ct.l.cleanOffsets(ct.cp, ct.clk.Ms()); o.needNow || o.cleanableBytes != 0 {
		t.Fatalf("after cleaning: %+v", o)
	}
}

// TestCleanerStopsAtHighWatermarkAndLSO: nothing at or above the high
// watermark or an open transaction is cleaned.
func TestCleanerStopsAtHighWatermarkAndLSO(t *testing.T) {
	ct := newCleanerTest(t, compactConfig())
	ct.put(put("a", "1")) // 0
	ct.roll()
	ct.put(put("a", "2")) // 1
	ct.roll()
	ct.put(put("a", "3")) // 2
	ct.roll()
	ct.l.SetHighWatermark(1) // only segment 0 is below it
	ct.clean()
	if ct.cp != 1 {
		t.Fatalf("checkpoint %d, want 1: the segment holding the high watermark is uncleanable", ct.cp)
	}
	wantRecords(t, ct.l, "0:a=1", "1:a=2", "2:a=3")
	ct.l.SetHighWatermark(2)
	ct.clean()
	wantRecords(t, ct.l, "1:a=2", "2:a=3")

	// An open transaction bounds the cleaning by the LSO.
	ct = newCleanerTest(t, compactConfig())
	ct.put(put("a", "1")) // 0
	ct.roll()
	s := plain(0, ct.clk.Ms())
	s.pid, s.epoch, s.seq, s.txn = 5, 0, 0, true
	ct.append(kvBatch(t, s, put("b", "1"))) // 1: transaction open
	ct.roll()
	ct.put(put("a", "2")) // 2
	ct.roll()
	ct.put(put("a", "3")) // 3
	ct.roll()
	if lso := ct.l.LastStableOffset(); lso != 1 {
		t.Fatalf("LSO %d", lso)
	}
	ct.clean()
	wantRecords(t, ct.l, "0:a=1", "1:b=1", "2:a=2", "3:a=3")
	ct.append(record.BuildEndTxnMarker(5, 0, record.EndTxnMarker{Commit: true}, ct.clk.Ms(), 0)) // 4
	ct.roll()
	ct.clean()
	wantRecords(t, ct.l, "1:b=1", "3:a=3")
}

// TestCleanerTransactions: aborted data goes at once; the ABORT marker and
// its .txnindex entry stay while a pass still meets the transaction's
// batches, then the marker gets a horizon and goes after it; a COMMIT
// marker stays while its transaction has records.
func TestCleanerTransactions(t *testing.T) {
	cfg := compactConfig()
	cfg.DeleteRetentionMs = 1000
	ct := newCleanerTest(t, cfg)
	txn := func(pid int64, seq int32, recs ...kv) []byte {
		s := plain(0, ct.clk.Ms())
		s.pid, s.epoch, s.seq, s.txn = pid, 0, seq, true
		return kvBatch(t, s, recs...)
	}
	marker := func(pid int64, commit bool) []byte {
		return record.BuildEndTxnMarker(pid, 0, record.EndTxnMarker{Commit: commit}, ct.clk.Ms(), 0)
	}
	ct.append(txn(1, 0, put("k1", "aborted"))) // 0
	ct.append(marker(1, false))                // 1: ABORT
	ct.append(txn(1, 1, put("k9", "z")))       // 2: producer 1's last data batch
	ct.append(marker(1, true))                 // 3: COMMIT
	ct.put(put("k1", "b"))                     // 4
	ct.roll()
	ct.put(put("x", "1"))
	ct.clean()
	wantRecords(t, ct.l, "2:k9=z", "4:k1=b", "5:x=1")
	ctl, _ := controlOffsets(t, ct.l)
	if fmt.Sprint(ctl) != "[1 3]" {
		t.Fatalf("markers %v after pass 1, want [1 3]", ctl)
	}
	aborted := func() int {
		n := 0
		for _, s := range ct.l.segments() {
			all, err := s.txn.All()
			if err != nil {
				t.Fatal(err)
			}
			n += len(all)
		}
		return n
	}
	if n := aborted(); n != 1 {
		t.Fatalf("%d aborted transactions indexed after pass 1, want 1", n)
	}
	// READ_COMMITTED readers still learn of the aborted transaction.
	r, err := ct.l.Read(0, 1<<20, FetchTxnCommitted, true)
	if err != nil || len(r.AbortedTxns) != 1 || r.AbortedTxns[0].ProducerID != 1 {
		t.Fatalf("aborted txns %+v %v", r.AbortedTxns, err)
	}
	r.Release()

	// Pass 2 meets no batch of the aborted transaction: the marker gets a
	// horizon and its index entry is dropped.
	ct.roll()
	ct.clean()
	ctl, _ = controlOffsets(t, ct.l)
	if fmt.Sprint(ctl) != "[1 3]" {
		t.Fatalf("markers %v after pass 2", ctl)
	}
	abortMarker := batchesByBase(t, logBatches(t, ct.l))[1]
	if h := headerOf(t, abortMarker); !h.HasDeleteHorizon() {
		t.Fatal("the ABORT marker has no delete horizon after pass 2")
	}
	if n := aborted(); n != 0 {
		t.Fatalf("%d aborted transactions indexed after pass 2, want 0", n)
	}
	if m, err := record.ParseEndTxnMarker(abortMarker); err != nil || m.Commit {
		t.Fatalf("rebuilt marker %+v %v", m, err)
	}
	// After the horizon the ABORT marker goes; the COMMIT stays (its
	// transaction's record k9 is still there).
	ct.clk.Advance(2000 * time.Millisecond)
	ct.put(put("y", "1"))
	ct.roll()
	ct.clean()
	ctl, _ = controlOffsets(t, ct.l)
	if fmt.Sprint(ctl) != "[3]" {
		t.Fatalf("markers %v after the horizon, want [3]", ctl)
	}
	// Once k9 is overwritten, producer 1's last data batch is kept empty
	// (producer 1 is active), and a pass meeting it keeps the COMMIT marker
	// too, as Kafka does.
	ct.put(put("k9", "new"))
	ct.roll()
	ct.clean()
	ct.roll()
	ct.clean()
	ctl, _ = controlOffsets(t, ct.l)
	if fmt.Sprint(ctl) != "[3]" {
		t.Fatalf("markers %v while producer 1 is active, want [3]", ctl)
	}
	data := batchesByBase(t, logBatches(t, ct.l))
	if h := headerOf(t, data[2]); h.NumRecords != 0 || h.ProducerID != 1 || !h.IsTransactional() || h.LastSequence() != 1 {
		t.Fatalf("producer 1's last batch: %+v", h)
	}
	// Once producer 1 expires, its empty batch goes, then the COMMIT marker
	// gets a horizon and goes after it.
	ct.clk.Advance(48 * time.Hour)
	ct.l.RemoveExpiredProducers()
	for i := 0; i < 3; i++ {
		ct.clk.Advance(2000 * time.Millisecond)
		ct.put(put("w", fmt.Sprint(i)))
		ct.roll()
		ct.clean()
	}
	ctl, emptied := controlOffsets(t, ct.l)
	if len(ctl) != 0 || len(emptied) != 0 {
		t.Fatalf("markers %v, emptied %v after producer 1 expired", ctl, emptied)
	}
	if _, ok := batchesByBase(t, logBatches(t, ct.l))[2]; ok {
		t.Fatal("the expired producer's empty batch is still there")
	}
}

// TestCleanerKeepsLastBatchOfProducer: a producer's last batch survives as
// an empty batch when its records are superseded, so producer state rebuilt
// from the compacted log (after a restart or on a follower) still recognises
// a retry of it.
func TestCleanerKeepsLastBatchOfProducer(t *testing.T) {
	ct := newCleanerTest(t, compactConfig())
	s := plain(0, ct.clk.Ms())
	s.pid, s.epoch, s.seq = 42, 2, 0
	first := kvBatch(t, s, put("a", "1"), put("b", "1")) // 0, 1: seq 0..1
	ct.append(append([]byte(nil), first...))
	s.seq = 2
	last := kvBatch(t, s, put("a", "2"), put("b", "2")) // 2, 3: seq 2..3
	ct.append(append([]byte(nil), last...))
	ct.put(put("a", "3"), put("b", "3")) // 4, 5: supersede everything
	ct.roll()
	ct.put(put("z", "1"))
	ct.clean()
	wantRecords(t, ct.l, "4:a=3", "5:b=3", "6:z=1")
	bs := batchesByBase(t, logBatches(t, ct.l))
	if _, ok := bs[0]; ok {
		t.Fatal("the producer's older batch was kept")
	}
	h := headerOf(t, bs[2])
	if h.NumRecords != 0 || h.LastOffset() != 3 || h.ProducerID != 42 || h.ProducerEpoch != 2 || h.BaseSequence != 2 || h.LastSequence() != 3 {
		t.Fatalf("kept empty batch %+v", h)
	}
	retry := func(l *Log) {
		t.Helper()
		info, err := l.AppendAsLeader(append([]byte(nil), last...), 0, OriginClient)
		if err != nil || !info.Duplicate || info.FirstOffset != 2 || info.LastOffset != 3 {
			t.Fatalf("retry of the last batch: %+v %v", info, err)
		}
	}
	retry(ct.l)
	// After an unclean restart without producer snapshots the state is
	// rebuilt from the compacted bytes alone.
	crash(ct.l)
	snaps, _ := filepath.Glob(filepath.Join(ct.dir, "*.snapshot"))
	for _, p := range snaps {
		os.Remove(p)
	}
	ct.l = openLog(t, ct.dir, ct.cfg, Options{Now: ct.clk.Now})
	retry(ct.l)
	// So does a follower's.
	f := replicate(t, ct.l, ct.cfg, ct.clk)
	defer f.Close()
	ps := f.ActiveProducers()
	if len(ps) != 1 || ps[0].ProducerID != 42 || len(ps[0].Batches) == 0 || ps[0].Batches[len(ps[0].Batches)-1].LastSeq != 3 {
		t.Fatalf("follower producer state %+v", ps)
	}
}

// TestCleanerKeepsMirrorPIDReset: a MIRROR_PID_RESET batch is never removed
// or changed, so producer state rebuilt from the compacted log forgets the
// producers before it, as it did before compaction.
func TestCleanerKeepsMirrorPIDReset(t *testing.T) {
	ct := newCleanerTest(t, compactConfig())
	s := plain(0, ct.clk.Ms())
	s.pid, s.epoch, s.seq = 9, 0, 0
	ct.append(kvBatch(t, s, put("a", "1"))) // 0: producer 9
	reset := record.BuildMirrorPIDReset(ct.clk.Ms(), 0, "src")
	ct.append(append([]byte(nil), reset...)) // 1
	ct.put(put("a", "2"))                    // 2
	ct.roll()
	ct.put(put("z", "1"))
	ct.clean()
	wantRecords(t, ct.l, "2:a=2", "3:z=1")
	bs := batchesByBase(t, logBatches(t, ct.l))
	got, ok := bs[1]
	if !ok {
		t.Fatal("MIRROR_PID_RESET removed")
	}
	want := append([]byte(nil), reset...)
	record.SetBaseOffset(want, 1)
	record.SetPartitionLeaderEpoch(want, 0)
	if !bytes.Equal(got, want) {
		t.Fatal("MIRROR_PID_RESET changed")
	}
	// Many passes later, long after any horizon, it is still there.
	for i := 0; i < 3; i++ {
		ct.clk.Advance(farFuture)
		ct.put(put("a", fmt.Sprint(i)))
		ct.roll()
		ct.clean()
	}
	if _, ok := batchesByBase(t, logBatches(t, ct.l))[1]; !ok {
		t.Fatal("MIRROR_PID_RESET removed by a later pass")
	}
	f := replicate(t, ct.l, ct.cfg, ct.clk)
	defer f.Close()
	if ps := f.ActiveProducers(); len(ps) != 0 {
		t.Fatalf("producers before the reset came back: %+v", ps)
	}
}

// TestCleanerBoundedMap: with a map far too small for the dirty keys, each
// pass cleans up to where the map filled, and the passes converge on the
// same result as one pass with a large map.
func TestCleanerBoundedMap(t *testing.T) {
	run := func(memory int64) (*cleanerTest, int) {
		ct := newCleanerTest(t, compactConfig())
		ct.c = newCleaner(memory, 0.9, nil, quietLogger())
		for round := 0; round < 4; round++ {
			for k := 0; k < 20; k++ {
				if (k+round)%7 == 0 {
					ct.put(tomb(fmt.Sprintf("k%02d", k)))
				} else {
					ct.put(put(fmt.Sprintf("k%02d", k), fmt.Sprintf("v%d", round)))
				}
			}
		}
		ct.roll()
		ct.put(put("active", "x"))
		return ct, ct.cleanFully()
	}
	big, bigPasses := run(1 << 20)
	small, smallPasses := run(5 * offsetSlotSize) // 5 slots: 4 keys per pass
	if bigPasses != 1 {
		t.Fatalf("large map took %d passes", bigPasses)
	}
	if smallPasses < 5 {
		t.Fatalf("tiny map took %d passes; it cannot hold 20 keys", smallPasses)
	}
	g, w := dataRecords(t, small.l), dataRecords(t, big.l)
	if describe(g) != describe(w) {
		t.Fatalf("tiny map result\n%s\nlarge map result\n%s", describe(g), describe(w))
	}
	if len(w) != 21 {
		t.Fatalf("%d records survive, want one per key: %s", len(w), describe(w))
	}
}

// TestCleanerSwapKeepsOpenReads: a read result taken before a pass keeps
// returning the old bytes after the swap.
func TestCleanerSwapKeepsOpenReads(t *testing.T) {
	ct := newCleanerTest(t, compactConfig())
	for i := 0; i < 30; i++ {
		ct.put(put(fmt.Sprintf("k%d", i%3), fmt.Sprint(i)))
	}
	ct.roll()
	r, err := ct.l.Read(0, 1<<20, FetchHighWatermark, true)
	if err != nil {
		t.Fatal(err)
	}
	old, err := r.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	ct.clean()
	if len(dataRecords(t, ct.l)) != 3 {
		t.Fatal("not compacted")
	}
	again, err := r.Bytes()
	if err != nil || !bytes.Equal(again, old) {
		t.Fatalf("read result after the swap: %v", err)
	}
	r.Release()
	if m, _ := filepath.Glob(filepath.Join(ct.dir, "*.deleted")); len(m) > 0 {
		t.Fatalf("files of replaced segments left: %v", m)
	}
}

// TestCleanerAbandonsPass: a pass stopped by its abort channel, or whose log
// was truncated or lost segments to retention before the swap, leaves the
// log as it was and no cleaner files behind.
func TestCleanerAbandonsPass(t *testing.T) {
	setup := func() (*cleanerTest, [][]byte) {
		ct := newCleanerTest(t, compactConfig())
		for i := 0; i < 40; i++ {
			ct.put(put(fmt.Sprintf("k%d", i%4), fmt.Sprint(i)))
		}
		ct.roll()
		ct.put(put("z", "z"))
		return ct, logBatches(t, ct.l)
	}
	check := func(ct *cleanerTest, before [][]byte, err error) {
		t.Helper()
		if !errors.Is(err, errCleaningAborted) {
			t.Fatalf("error %v, want errCleaningAborted", err)
		}
		after := logBatches(t, ct.l)
		if len(after) != len(before) {
			t.Fatalf("%d batches after an abandoned pass, %d before", len(after), len(before))
		}
		for _, suf := range []string{CleanedFileSuffix, SwapFileSuffix} {
			if m, _ := filepath.Glob(filepath.Join(ct.dir, "*"+suf)); len(m) > 0 {
				t.Fatalf("left %v", m)
			}
		}
		checkInvariants(t, ct.l)
	}
	t.Run("stop", func(t *testing.T) {
		ct, before := setup()
		stop := make(chan struct{})
		close(stop)
		ct.c.abort = stop
		_, _, err := ct.c.clean(ct.l, -1, ct.clk.Now())
		check(ct, before, err)
	})
	t.Run("truncation", func(t *testing.T) {
		ct, _ := setup()
		ct.c.beforeSwap = func(l *Log, _ *segment, _ []*segment) error {
			return l.TruncateTo(l.LogEndOffset() - 1)
		}
		_, _, err := ct.c.clean(ct.l, -1, ct.clk.Now())
		check(ct, logBatches(t, ct.l), err)
		if len(dataRecords(t, ct.l)) != 40 {
			t.Fatal("records lost")
		}
	})
	t.Run("retention", func(t *testing.T) {
		ct, _ := setup()
		ct.c.beforeSwap = func(l *Log, _ *segment, _ []*segment) error {
			_, err := l.DeleteRecordsBefore(l.segments()[1].base)
			return err
		}
		_, _, err := ct.c.clean(ct.l, -1, ct.clk.Now())
		check(ct, logBatches(t, ct.l), err)
	})
}

// TestCleanerCheckpointOutOfRange: a checkpoint outside [logStart, LEO]
// restarts from the log start.
func TestCleanerCheckpointOutOfRange(t *testing.T) {
	ct := newCleanerTest(t, compactConfig())
	ct.put(put("a", "1"))
	ct.put(put("a", "2"))
	ct.roll()
	ct.put(put("b", "1"))
	for _, cp := range []int64{-1, 1000} {
		o, err := ct.l.cleanOffsets(cp, ct.clk.Ms())
		if err != nil || o.firstDirty != 0 || o.checkpointReset != (cp >= 0) {
			t.Fatalf("checkpoint %d: %+v %v", cp, o, err)
		}
	}
	ct.cp = 1000
	ct.clean()
	wantRecords(t, ct.l, "1:a=2", "2:b=1")
}

// TestGroupSegments checks groups respect segment.bytes and offsets
// representable from the group's base.
func TestGroupSegments(t *testing.T) {
	mk := func(base, size int64) *segment {
		s := &segment{base: base}
		s.size.Store(size)
		return s
	}
	cfg := compactConfig()
	cfg.SegmentBytes = 100
	segs := []*segment{mk(0, 40), mk(10, 40), mk(20, 40), mk(30, 0), mk(40, 100), mk(50, 10), mk(1<<32, 10), mk(1<<32+5, 10), mk(1<<32+100, 0)}
	var got []string
	for _, g := range groupSegments(segs, cfg) {
		var bases []string
		for _, s := range g {
			bases = append(bases, fmt.Sprint(s.base))
		}
		got = append(got, strings.Join(bases, ","))
	}
	// 20,30 stops at 40 by size; 50 alone: 1<<32 is not representable from 50.
	want := "[0,10 20,30 40 50 4294967296,4294967301]"
	if fmt.Sprint(got) != want {
		t.Fatalf("groups %v, want %v", got, want)
	}
}
