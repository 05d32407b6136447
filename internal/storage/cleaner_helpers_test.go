package storage

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/record"
)

// kv is one record of a test batch: a key and a value, a tombstone (nil
// value) or a record without a key.
type kv struct {
	key, value string
	tomb       bool
	noKey      bool
}

func put(k, v string) kv { return kv{key: k, value: v} }
func tomb(k string) kv   { return kv{key: k, tomb: true} }

// kvBatch builds a batch of the given records with the header fields of s
// (records, valueSize, keyPrefix and nullValue are ignored).
func kvBatch(t testing.TB, s batchSpec, recs ...kv) []byte {
	t.Helper()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{TimestampDelta: int64(i), Value: []byte(r.value)}
		if !r.noKey {
			rs[i].Key = []byte(r.key)
		}
		if r.tomb {
			rs[i].Value = nil
		}
	}
	record.NumberRecords(rs)
	b, err := record.Build(record.BatchSpec{
		BaseOffset:           s.baseOffset,
		PartitionLeaderEpoch: s.leaderEp,
		ProducerID:           s.pid,
		ProducerEpoch:        s.epoch,
		BaseSequence:         s.seq,
		Transactional:        s.txn,
		Codec:                s.codec,
		BaseTimestamp:        s.ts,
	}, rs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// compactConfig is smallConfig with cleanup.policy=compact and small
// segments, so that a few dozen records span several segments.
func compactConfig() LogConfig {
	c := smallConfig()
	c.CleanupPolicy = CleanupPolicy{Compact: true}
	c.SegmentBytes = 1024
	c.MinCleanableDirtyRatio = 0.5
	c.DeleteRetentionMs = 1000
	return c
}

// cleanerTest is a compacted log with a clock and a cleaner whose
// checkpoint the test keeps, as the Manager would.
type cleanerTest struct {
	t   *testing.T
	clk *testClock
	dir string
	cfg LogConfig
	l   *Log
	c   *cleaner
	cp  int64 // cleaner checkpoint; -1 none
}

func newCleanerTest(t *testing.T, cfg LogConfig) *cleanerTest {
	ct := &cleanerTest{t: t, clk: newTestClock(), dir: t.TempDir(), cfg: cfg, cp: -1}
	ct.l = openLog(t, ct.dir, cfg, Options{Now: ct.clk.Now})
	ct.c = newCleaner(1<<20, 0.9, nil, quietLogger())
	t.Cleanup(func() {
		if ct.l != nil {
			ct.l.Close()
		}
	})
	return ct
}

// append appends as leader (markers with OriginCoordinator) and moves the
// high watermark to the log end; it returns the batch's base offset.
func (ct *cleanerTest) append(b []byte) int64 {
	ct.t.Helper()
	h := headerOf(ct.t, b)
	origin := OriginClient
	if h.IsControl() {
		origin = OriginCoordinator
	}
	info, err := ct.l.AppendAsLeader(b, 0, origin)
	if err != nil {
		ct.t.Fatalf("append: %v", err)
	}
	ct.l.SetHighWatermark(ct.l.LogEndOffset())
	return info.FirstOffset
}

// put appends one plain batch of records.
func (ct *cleanerTest) put(recs ...kv) int64 {
	ct.t.Helper()
	return ct.append(kvBatch(ct.t, plain(0, ct.clk.Ms()), recs...))
}

func (ct *cleanerTest) roll() {
	ct.t.Helper()
	if err := ct.l.Roll(); err != nil {
		ct.t.Fatal(err)
	}
}

// clean runs one pass and advances the checkpoint.
func (ct *cleanerTest) clean() cleanStats {
	ct.t.Helper()
	cp, st, err := ct.c.clean(ct.l, ct.cp, ct.clk.Now())
	if err != nil {
		ct.t.Fatalf("clean: %v", err)
	}
	ct.cp = cp
	checkInvariants(ct.t, ct.l)
	return st
}

// cleanFully runs passes until the checkpoint stops moving and returns how
// many made progress.
func (ct *cleanerTest) cleanFully() int {
	ct.t.Helper()
	for n := 0; ; n++ {
		before := ct.cp
		ct.clean()
		if ct.cp == before {
			return n
		}
		if n > 10000 {
			ct.t.Fatal("cleaning does not converge")
		}
	}
}

// reopen closes the log cleanly and opens it again.
func (ct *cleanerTest) reopen() {
	ct.t.Helper()
	hw := ct.l.HighWatermark()
	if err := ct.l.Close(); err != nil {
		ct.t.Fatal(err)
	}
	ct.l = openLog(ct.t, ct.dir, ct.cfg, Options{Now: ct.clk.Now, HadCleanShutdown: true, HighWatermark: hw})
}

// logRecord is one record of the log with its batch's header.
type logRecord struct {
	offset     int64
	key, value []byte
	h          record.Header
}

func (r logRecord) String() string {
	v := "<nil>"
	if r.value != nil {
		v = string(r.value)
	}
	return fmt.Sprintf("%d:%s=%s", r.offset, r.key, v)
}

// recordsOf decodes every record of the batches.
func recordsOf(t testing.TB, batches [][]byte) []logRecord {
	t.Helper()
	var out []logRecord
	for _, b := range batches {
		h := headerOf(t, b)
		if err := record.ValidateRecords(b, false, 0); err != nil {
			t.Fatalf("batch at %d: %v", h.BaseOffset, err)
		}
		err := record.ForEachRecord(b, 0, func(r record.Record) error {
			out = append(out, logRecord{offset: h.BaseOffset + int64(r.OffsetDelta), key: r.Key, value: r.Value, h: h})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// dataRecords returns the records of the log's data batches.
func dataRecords(t testing.TB, l *Log) []logRecord {
	t.Helper()
	var out []logRecord
	for _, r := range recordsOf(t, logBatches(t, l)) {
		if !r.h.IsControl() {
			out = append(out, r)
		}
	}
	return out
}

// describe renders records for failure messages.
func describe(rs []logRecord) string {
	var b bytes.Buffer
	for i, r := range rs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(r.String())
	}
	return b.String()
}

// wantRecords checks the log's data records are exactly want
// ("offset:key=value", "offset:key=<nil>" for tombstones).
func wantRecords(t testing.TB, l *Log, want ...string) {
	t.Helper()
	got := dataRecords(t, l)
	var gs []string
	for _, r := range got {
		gs = append(gs, r.String())
	}
	if fmt.Sprint(gs) != fmt.Sprint(want) {
		t.Fatalf("records\n got %v\nwant %v", gs, want)
	}
}

// controlOffsets returns the base offsets of the log's control batches with
// records, and of the emptied ones.
func controlOffsets(t testing.TB, l *Log) (withRecords, emptied []int64) {
	t.Helper()
	for _, b := range logBatches(t, l) {
		h := headerOf(t, b)
		if !h.IsControl() {
			continue
		}
		if h.NumRecords == 0 {
			emptied = append(emptied, h.BaseOffset)
		} else {
			withRecords = append(withRecords, h.BaseOffset)
		}
	}
	return withRecords, emptied
}

// batchesByBase indexes batches by base offset.
func batchesByBase(t testing.TB, batches [][]byte) map[int64][]byte {
	t.Helper()
	m := make(map[int64][]byte)
	for _, b := range batches {
		m[headerOf(t, b).BaseOffset] = b
	}
	return m
}

// replicate appends the log's batches to a fresh log as a follower would,
// and returns it.
func replicate(t testing.TB, l *Log, cfg LogConfig, clk *testClock) *Log {
	t.Helper()
	f := openLog(t, t.TempDir(), cfg, Options{Now: clk.Now})
	if ls := l.LogStartOffset(); ls > 0 {
		if err := f.TruncateFullyAndStartAt(ls); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range logBatches(t, l) {
		if _, err := f.AppendAsFollower(b); err != nil {
			t.Fatalf("follower append: %v", err)
		}
	}
	return f
}

// farFuture is a clock advance past any delete horizon of the tests.
const farFuture = 365 * 24 * time.Hour
