package storage

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/record"
)

// The cleaner model test drives a compacted log with random keyed writes,
// tombstones, idempotent and transactional producers (commits and aborts),
// MIRROR_PID_RESET batches, rolls, cleaning passes (with a large or a tiny
// offset map), clock advances past delete horizons, and clean and unclean
// restarts, and compares the log with a model that remembers every record
// written:
//
//   - every record in the log is one that was written, at its offset;
//   - the log's key → value view (records of aborted or open transactions
//     left out, tombstones deleting) equals the model's at every step;
//   - after a pass, no record of an aborted transaction is left below the
//     cleaner checkpoint;
//   - the compacted bytes replicate to a follower;
//   - after the final passes (transactions closed, everything rolled,
//     horizons passed) the log holds exactly the latest live record of each
//     key, at the offset it was written at.
//
// Seeds are logged; rerun one with KMIRROR_SEED=<seed>. KMIRROR_LONG=1 runs
// many more seeds and steps.

type txnOutcome int8

const (
	txnOpen txnOutcome = iota
	txnCommitted
	txnAborted
)

type modelRecord struct {
	key   string
	value []byte // nil: tombstone
	txn   int    // transaction id; 0 for records outside transactions
}

type cleanerModel struct {
	t        *testing.T
	rng      *rand.Rand
	ct       *cleanerTest
	records  map[int64]modelRecord
	outcomes map[int]txnOutcome
	nextTxn  int
	openTxn  map[int64]int   // producer → its open transaction
	seq      map[int64]int32 // producer → next sequence
	pidBase  int64           // producer ids change after a MIRROR_PID_RESET
	steps    []string
}

func (m *cleanerModel) note(format string, args ...any) {
	m.steps = append(m.steps, fmt.Sprintf(format, args...))
	if len(m.steps) > 25 {
		m.steps = m.steps[1:]
	}
}

func (m *cleanerModel) fail(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("%s\nlast steps:\n  %s", fmt.Sprintf(format, args...), joinLines(m.steps))
}

// visible reports whether a record counts in the key → value view.
func (m *cleanerModel) visible(r modelRecord) bool {
	return r.txn == 0 || m.outcomes[r.txn] == txnCommitted
}

// view applies records in offset order.
func (m *cleanerModel) view(offsets []int64) map[string]string {
	sort.Slice(offsets, func(i, j int) bool { return offsets[i] < offsets[j] })
	v := make(map[string]string)
	for _, off := range offsets {
		r := m.records[off]
		if !m.visible(r) {
			continue
		}
		if r.value == nil {
			delete(v, r.key)
		} else {
			v[r.key] = string(r.value)
		}
	}
	return v
}

func (m *cleanerModel) randomRecords() []kv {
	n := 1 + m.rng.IntN(4)
	var recs []kv
	for range n {
		k := fmt.Sprintf("k%02d", m.rng.IntN(15))
		if m.rng.IntN(7) == 0 {
			recs = append(recs, tomb(k))
		} else {
			recs = append(recs, put(k, fmt.Sprintf("v%d", m.rng.IntN(1_000_000))))
		}
	}
	return recs
}

func (m *cleanerModel) spec() batchSpec {
	s := plain(0, m.ct.clk.Ms())
	s.codec = []record.Codec{record.CodecNone, record.CodecNone, record.CodecLZ4, record.CodecZstd, record.CodecGzip, record.CodecSnappy}[m.rng.IntN(6)]
	return s
}

// write appends a data batch and remembers its records.
func (m *cleanerModel) write(s batchSpec, txn int, recs []kv) {
	m.t.Helper()
	base := m.ct.append(kvBatch(m.t, s, recs...))
	for i, r := range recs {
		mr := modelRecord{key: r.key, txn: txn}
		if !r.tomb {
			mr.value = []byte(r.value)
		}
		m.records[base+int64(i)] = mr
	}
	m.note("write %d records at %d (producer %d, txn %d)", len(recs), base, s.pid, txn)
}

func (m *cleanerModel) step() {
	ct := m.ct
	switch k := m.rng.IntN(100); {
	case k < 30:
		m.write(m.spec(), 0, m.randomRecords())
	case k < 42: // an idempotent producer
		pid := m.pidBase + int64(1+m.rng.IntN(2))
		s := m.spec()
		s.pid, s.epoch, s.seq = pid, 0, m.seq[pid]
		recs := m.randomRecords()
		m.seq[pid] += int32(len(recs))
		m.write(s, 0, recs)
	case k < 62: // a transactional producer: data or its marker
		pid := m.pidBase + int64(100+m.rng.IntN(2))
		id, open := m.openTxn[pid]
		if open && m.rng.IntN(2) == 0 {
			commit := m.rng.IntN(2) == 0
			ct.append(record.BuildEndTxnMarker(pid, 0, record.EndTxnMarker{Commit: commit}, ct.clk.Ms(), 0))
			m.outcomes[id] = map[bool]txnOutcome{true: txnCommitted, false: txnAborted}[commit]
			delete(m.openTxn, pid)
			m.note("end txn %d of %d: commit=%v", id, pid, commit)
			return
		}
		if !open {
			m.nextTxn++
			id = m.nextTxn
			m.openTxn[pid] = id
			m.outcomes[id] = txnOpen
		}
		s := m.spec()
		s.pid, s.epoch, s.seq, s.txn = pid, 0, m.seq[pid], true
		recs := m.randomRecords()
		m.seq[pid] += int32(len(recs))
		m.write(s, id, recs)
	case k < 64: // a mirror failover barrier, between transactions
		if len(m.openTxn) > 0 {
			return
		}
		ct.append(record.BuildMirrorPIDReset(ct.clk.Ms(), 0, "src"))
		m.pidBase += 1000
		m.note("MIRROR_PID_RESET")
	case k < 76:
		ct.roll()
		m.note("roll")
	case k < 90:
		m.clean()
	case k < 95:
		d := time.Duration(m.rng.Int64N(2*ct.cfg.DeleteRetentionMs)) * time.Millisecond
		ct.clk.Advance(d)
		m.note("advance %v", d)
	default:
		if m.rng.IntN(2) == 0 {
			ct.reopen()
			m.note("clean restart")
		} else {
			crash(ct.l)
			ct.l = openLog(m.t, ct.dir, ct.cfg, Options{Now: ct.clk.Now})
			m.note("unclean restart")
		}
		ct.l.SetHighWatermark(ct.l.LogEndOffset())
		checkInvariants(m.t, ct.l)
	}
}

func (m *cleanerModel) clean() {
	m.t.Helper()
	cp, st, err := m.ct.c.clean(m.ct.l, m.ct.cp, m.ct.clk.Now())
	if err != nil {
		m.fail("clean: %v", err)
	}
	m.note("clean from %d: checkpoint %d, %d of %d records kept", m.ct.cp, cp, st.recordsKept, st.recordsRead)
	m.ct.cp = cp
	if err := verifyInvariants(m.ct.l); err != nil {
		m.fail("after clean: %v", err)
	}
	m.check()
	for _, lr := range dataRecords(m.t, m.ct.l) {
		if r := m.records[lr.offset]; lr.offset < cp && r.txn != 0 && m.outcomes[r.txn] == txnAborted {
			m.fail("aborted record at %d survived below the checkpoint %d", lr.offset, cp)
		}
	}
}

// check compares the log's records and view with the model.
func (m *cleanerModel) check() {
	m.t.Helper()
	var offs, all []int64
	for _, r := range dataRecords(m.t, m.ct.l) {
		want, ok := m.records[r.offset]
		if !ok || want.key != string(r.key) || (want.value == nil) != (r.value == nil) || string(want.value) != string(r.value) {
			m.fail("record %s was never written at its offset (model: %+v)", r, want)
		}
		offs = append(offs, r.offset)
	}
	for off := range m.records {
		all = append(all, off)
	}
	got, want := m.view(offs), m.view(all)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		m.fail("key view differs\n got %v\nwant %v", got, want)
	}
}

// finish closes transactions, makes everything cleanable, passes the
// horizons and checks the log is exactly the latest live record per key.
func (m *cleanerModel) finish() {
	ct := m.ct
	for pid, id := range m.openTxn {
		ct.append(record.BuildEndTxnMarker(pid, 0, record.EndTxnMarker{Commit: true}, ct.clk.Ms(), 0))
		m.outcomes[id] = txnCommitted
	}
	m.openTxn = map[int64]int{}
	for i := 0; i < 2; i++ {
		ct.roll()
		m.write(m.spec(), 0, []kv{put(fmt.Sprintf("final-%d", i), "x")})
		ct.roll()
		m.write(m.spec(), 0, []kv{put(fmt.Sprintf("active-%d", i), "y")})
		ct.cleanFully()
		m.check()
		ct.clk.Advance(2 * time.Duration(ct.cfg.DeleteRetentionMs) * time.Millisecond)
	}
	latest := make(map[string]int64)
	offs := make([]int64, 0, len(m.records))
	for off := range m.records {
		offs = append(offs, off)
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	for _, off := range offs {
		if r := m.records[off]; m.visible(r) {
			latest[r.key] = off
		}
	}
	var want []string
	for k, off := range latest {
		if r := m.records[off]; r.value != nil {
			want = append(want, fmt.Sprintf("%d:%s=%s", off, k, r.value))
		}
	}
	var got []string
	for _, r := range dataRecords(m.t, ct.l) {
		got = append(got, r.String())
	}
	sort.Strings(want)
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		m.fail("after the final passes\n got %v\nwant %v", got, want)
	}
}

func runCleanerModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	cfg := compactConfig()
	cfg.SegmentBytes = int32(512 + rng.IntN(2048))
	cfg.DeleteRetentionMs = 10_000
	ct := newCleanerTest(t, cfg)
	if rng.IntN(2) == 0 {
		ct.c = newCleaner(int64(5+rng.IntN(20))*offsetSlotSize, 0.9, nil, quietLogger())
	}
	m := &cleanerModel{t: t, rng: rng, ct: ct, records: map[int64]modelRecord{}, outcomes: map[int]txnOutcome{},
		openTxn: map[int64]int{}, seq: map[int64]int32{}}
	for i := 0; i < steps; i++ {
		m.step()
		if i%50 == 49 {
			f := replicate(t, ct.l, cfg, ct.clk)
			if !sameBatches(logBatches(t, f), logBatches(t, ct.l)) {
				m.fail("a follower's copy differs")
			}
			f.Close()
		}
	}
	m.finish()
}

func TestCleanerModel(t *testing.T) {
	seeds, steps := 8, 200
	if os.Getenv("KMIRROR_LONG") != "" {
		seeds, steps = 300, 800
	}
	if s := os.Getenv("KMIRROR_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		runCleanerModel(t, seed, steps)
		return
	}
	base := uint64(time.Now().UnixNano())
	for i := 0; i < seeds; i++ {
		seed := base + uint64(i)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Logf("seed %d", seed)
			runCleanerModel(t, seed, steps)
		})
	}
}
