package storage

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage/producerstate"
)

// The model test drives a Log with random operations — leader and follower
// appends (idempotent, transactional, markers, MIRROR_PID_RESET, gaps,
// compression), epoch changes, truncations, rolls, flushes, retention,
// clean and unclean restarts with torn tails — and after every step checks
// the log against a plain in-memory model: the same batches byte for byte,
// the same offsets, the same leader epochs, the producer state a fresh
// replica would compute, and the invariants of log.go.
//
// Seeds are logged; rerun one with KMIRROR_SEED=<seed>. KMIRROR_LONG=1 runs
// many more seeds and steps.

type modelEpochs []EpochEntry

// assign is Kafka's LeaderEpochFileCache.assign, written independently of
// epochCache.
func (m modelEpochs) assign(epoch int32, off int64) modelEpochs {
	if n := len(m); n > 0 && m[n-1].Epoch == epoch && off >= m[n-1].StartOffset {
		return m
	}
	for len(m) > 0 && (m[len(m)-1].Epoch >= epoch || m[len(m)-1].StartOffset >= off) {
		m = m[:len(m)-1]
	}
	return append(m, EpochEntry{epoch, off})
}

func (m modelEpochs) truncateFromEnd(end int64) modelEpochs {
	for len(m) > 0 && m[len(m)-1].StartOffset >= end {
		m = m[:len(m)-1]
	}
	return m
}

func (m modelEpochs) truncateFromStart(start int64) modelEpochs {
	i := 0
	for i < len(m) && m[i].StartOffset <= start {
		i++
	}
	if i == 0 {
		return m
	}
	return append(modelEpochs{{m[i-1].Epoch, start}}, m[i:]...)
}

type logModel struct {
	batches  [][]byte // every batch physically in the log, in order
	logStart int64
	leo      int64
	hw       int64
	epochs   modelEpochs
}

func (m *logModel) visible() [][]byte {
	var out [][]byte
	for _, b := range m.batches {
		h, _ := record.ParseHeader(b)
		if h.LastOffset() >= m.logStart {
			out = append(out, b)
		}
	}
	return out
}

// keepBelow drops the batches holding offsets >= off and returns the end of
// the last one kept (-1 if none).
func (m *logModel) keepBelow(off int64) int64 {
	end := int64(-1)
	kept := m.batches[:0]
	for _, b := range m.batches {
		h, _ := record.ParseHeader(b)
		if h.LastOffset() >= off {
			break
		}
		kept = append(kept, b)
		end = h.NextOffset()
	}
	m.batches = kept
	return end
}

type modelRun struct {
	t         *testing.T
	rng       *rand.Rand
	clk       *testClock
	dir       string
	cfg       LogConfig
	l         *Log
	m         logModel
	epoch     int32 // current leader epoch
	nextPID   int64
	retention bool // this run deletes data; producer state is then not comparable to a replay
	deleted   bool
	log       []string
}

func (r *modelRun) note(format string, args ...any) {
	r.log = append(r.log, fmt.Sprintf(format, args...))
	if len(r.log) > 30 {
		r.log = r.log[1:]
	}
}

func (r *modelRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s\nlast steps:\n  %s", fmt.Sprintf(format, args...), joinLines(r.log))
}

func joinLines(s []string) string {
	var b bytes.Buffer
	for i, l := range s {
		if i > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString(l)
	}
	return b.String()
}

// producers is the producer state a fresh replica would compute from the
// model's batches.
func (r *modelRun) producers() map[int64]producerstate.Entry {
	out := make(map[int64]producerstate.Entry)
	for _, e := range replayProducers(r.t, r.m.batches) {
		out[e.ProducerID] = e
	}
	return out
}

// randomRecords builds one batch's worth of records.
func (r *modelRun) spec() batchSpec {
	s := plain(1+r.rng.IntN(6), r.clk.Ms()-int64(r.rng.IntN(1000)))
	s.valueSize = r.rng.IntN(200)
	s.codec = []record.Codec{record.CodecNone, record.CodecNone, record.CodecGzip, record.CodecLZ4, record.CodecZstd, record.CodecSnappy}[r.rng.IntN(6)]
	return s
}

// expectLeader stamps a copy of an input batch as the log must.
func expectLeader(b []byte, off int64, epoch int32) []byte {
	c := append([]byte(nil), b...)
	record.SetBaseOffset(c, off)
	record.SetPartitionLeaderEpoch(c, epoch)
	return c
}

func (r *modelRun) leaderAppend() {
	var inputs [][]byte
	origin := OriginClient
	ps := r.producers()
	switch k := r.rng.IntN(10); {
	case k < 4: // plain batches
		for n := 1 + r.rng.IntN(3); n > 0; n-- {
			inputs = append(inputs, mkBatch(r.t, r.spec()))
		}
	case k < 7: // an idempotent producer continues (or starts)
		pid := int64(1 + r.rng.IntN(3))
		if r.deleted {
			pid += 1000 * r.nextPID
		}
		s := r.spec()
		s.pid, s.epoch, s.seq = pid, 0, 0
		if e, ok := ps[pid]; ok && len(e.Batches) > 0 {
			s.epoch = e.ProducerEpoch
			s.seq = e.Batches[len(e.Batches)-1].LastSeq + 1
		}
		inputs = append(inputs, mkBatch(r.t, s))
	case k < 9: // a transactional producer: data, or its marker
		pid := int64(100 + r.rng.IntN(2))
		if r.deleted {
			pid += 1000 * r.nextPID
		}
		e, ok := ps[pid]
		if ok && e.CurrentTxnFirstOffset >= 0 && r.rng.IntN(2) == 0 {
			inputs = append(inputs, record.BuildEndTxnMarker(pid, e.ProducerEpoch,
				record.EndTxnMarker{Commit: r.rng.IntN(2) == 0, CoordinatorEpoch: max(e.CoordinatorEpoch, 0)}, r.clk.Ms(), 0))
			origin = OriginCoordinator
			break
		}
		s := r.spec()
		s.pid, s.epoch, s.seq, s.txn = pid, 0, 0, true
		if ok && len(e.Batches) > 0 {
			s.epoch = e.ProducerEpoch
			s.seq = e.Batches[len(e.Batches)-1].LastSeq + 1
		}
		inputs = append(inputs, mkBatch(r.t, s))
	default: // a failing-over mirror resets producer state
		inputs = append(inputs, record.BuildMirrorPIDReset(r.clk.Ms(), 0, "src"))
		origin = OriginCoordinator
	}
	var buf []byte
	var want [][]byte
	off := r.m.leo
	for _, b := range inputs {
		want = append(want, expectLeader(b, off, r.epoch))
		h, _ := record.ParseHeader(b)
		off += int64(h.LastOffsetDelta) + 1
		buf = append(buf, b...)
	}
	r.note("leader append %d batches at %d epoch %d origin %d", len(inputs), r.m.leo, r.epoch, origin)
	info, err := r.l.AppendAsLeader(buf, r.epoch, origin)
	if err != nil {
		r.fail("leader append: %v", err)
	}
	if info.FirstOffset != r.m.leo || info.LastOffset != off-1 || info.Duplicate {
		r.fail("leader append info %+v, want %d..%d", info, r.m.leo, off-1)
	}
	for _, w := range want {
		h, _ := record.ParseHeader(w)
		r.m.epochs = r.m.epochs.assign(r.epoch, h.BaseOffset)
	}
	r.m.batches = append(r.m.batches, want...)
	r.m.leo = off
	// A retry of the last idempotent batch is answered, not written.
	if h, _ := record.ParseHeader(inputs[0]); len(inputs) == 1 && h.HasProducerID() && !h.IsControl() && r.rng.IntN(3) == 0 {
		retry := append([]byte(nil), inputs[0]...)
		info2, err := r.l.AppendAsLeader(retry, r.epoch, OriginClient)
		if err != nil || !info2.Duplicate || info2.FirstOffset != info.FirstOffset {
			r.fail("retry: %+v %v", info2, err)
		}
		r.note("retry answered as duplicate")
	}
}

func (r *modelRun) followerAppend() {
	var buf []byte
	var want [][]byte
	off := r.m.leo
	if r.rng.IntN(4) == 0 {
		off += int64(r.rng.IntN(50)) // a compaction gap on the source
	}
	if r.rng.IntN(6) == 0 {
		r.epoch++
	}
	n := 1 + r.rng.IntN(4)
	for i := 0; i < n; i++ {
		var b []byte
		switch k := r.rng.IntN(10); {
		case k == 0:
			b = record.BuildMirrorPIDReset(r.clk.Ms(), r.epoch, "src")
		case k < 3:
			s := r.spec()
			s.pid, s.epoch, s.seq = int64(200+r.rng.IntN(3)), 0, int32(r.rng.IntN(1000))
			b = mkBatch(r.t, s)
		default:
			b = mkBatch(r.t, r.spec())
		}
		record.SetBaseOffset(b, off)
		record.SetPartitionLeaderEpoch(b, r.epoch)
		h, _ := record.ParseHeader(b)
		want = append(want, b)
		buf = append(buf, b...)
		off = h.NextOffset()
		if r.rng.IntN(5) == 0 {
			off += int64(r.rng.IntN(10))
		}
	}
	if r.rng.IntN(3) == 0 { // a fetch response ending in a partial batch
		extra := mkBatch(r.t, r.spec())
		buf = append(buf, extra[:r.rng.IntN(len(extra))]...)
	}
	first, _ := record.ParseHeader(want[0])
	r.note("follower append %d batches at %d (leo %d) epoch %d", n, first.BaseOffset, r.m.leo, r.epoch)
	info, err := r.l.AppendAsFollower(append([]byte(nil), buf...))
	if err != nil {
		r.fail("follower append: %v", err)
	}
	last, _ := record.ParseHeader(want[len(want)-1])
	if info.FirstOffset != first.BaseOffset || info.LastOffset != last.LastOffset() {
		r.fail("follower append info %+v", info)
	}
	for _, w := range want {
		h, _ := record.ParseHeader(w)
		r.m.epochs = r.m.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
	}
	r.m.batches = append(r.m.batches, want...)
	r.m.leo = last.NextOffset()
}

func (r *modelRun) truncate() {
	if r.m.leo == r.m.logStart {
		return
	}
	target := r.m.logStart + r.rng.Int64N(r.m.leo-r.m.logStart+1)
	if r.rng.IntN(3) == 0 {
		// A batch boundary, as followers truncate to.
		if vis := r.m.visible(); len(vis) > 0 {
			h, _ := record.ParseHeader(vis[r.rng.IntN(len(vis))])
			target = max(h.BaseOffset, r.m.logStart)
		}
	}
	segs := r.l.segments()
	segBase := segs[max(floorSegment(segs, target), 0)].base
	r.note("truncate to %d (leo %d, segment %d)", target, r.m.leo, segBase)
	if err := r.l.TruncateTo(target); err != nil {
		r.fail("truncate: %v", err)
	}
	if target >= r.m.leo {
		return
	}
	saved := append([][]byte(nil), r.m.batches...)
	end := r.m.keepBelow(target)
	if max(end, segBase) < r.m.logStart {
		// Nothing readable would remain: the log restarts at target.
		r.m.batches = saved
		r.m = logModel{logStart: target, leo: target, hw: target}
		return
	}
	r.m.leo = max(end, segBase)
	r.m.hw = min(r.m.hw, r.m.leo)
	r.m.epochs = r.m.epochs.truncateFromEnd(r.m.leo)
}

func (r *modelRun) truncateFully() {
	off := r.m.leo + int64(r.rng.IntN(100))
	r.note("truncate fully and start at %d", off)
	if err := r.l.TruncateFullyAndStartAt(off); err != nil {
		r.fail("truncate fully: %v", err)
	}
	r.m = logModel{logStart: off, leo: off, hw: off}
}

func (r *modelRun) deleteRecords() {
	if r.m.hw <= r.m.logStart {
		return
	}
	off := r.m.logStart + r.rng.Int64N(r.m.hw-r.m.logStart+1)
	r.note("delete records before %d", off)
	ls, err := r.l.DeleteRecordsBefore(off)
	if err != nil || ls != off {
		r.fail("delete records: %d %v", ls, err)
	}
	r.m.logStart = off
	r.m.epochs = r.m.epochs.truncateFromStart(off)
	r.dropBelowFirstSegment()
	r.deleted = true
	r.nextPID++
}

func (r *modelRun) retentionBySize() {
	cfg := r.cfg
	cfg.RetentionBytes = r.l.Size() / 2
	r.l.UpdateConfig(cfg)
	n, err := r.l.DeleteOldSegments()
	r.l.UpdateConfig(r.cfg)
	if err != nil {
		r.fail("retention: %v", err)
	}
	r.note("size retention deleted %d segments", n)
	if n == 0 {
		return
	}
	newStart := r.l.LogStartOffset()
	if newStart < r.m.logStart || newStart > r.m.hw {
		r.fail("retention moved the log start to %d (model start %d, hw %d)", newStart, r.m.logStart, r.m.hw)
	}
	r.m.logStart = newStart
	r.m.epochs = r.m.epochs.truncateFromStart(newStart)
	r.dropBelowFirstSegment()
	r.deleted = true
	r.nextPID++
}

// dropBelowFirstSegment forgets the model batches whose segments are gone.
func (r *modelRun) dropBelowFirstSegment() {
	first := r.l.segments()[0].base
	kept := r.m.batches[:0]
	for _, b := range r.m.batches {
		if h, _ := record.ParseHeader(b); h.BaseOffset >= first {
			kept = append(kept, b)
		}
	}
	r.m.batches = kept
}

func (r *modelRun) restart(clean bool) {
	rp, ls, hw := r.l.RecoveryPoint(), r.l.LogStartOffset(), r.l.HighWatermark()
	if clean {
		r.note("clean restart")
		if err := r.l.Close(); err != nil {
			r.fail("close: %v", err)
		}
	} else {
		segs := r.l.segments()
		active := segs[len(segs)-1]
		activePath := active.logPath
		// Bytes below the recovery point are durable; a crash may tear the
		// rest of the active segment at any byte.
		durable := int64(0)
		if rp > active.base {
			p, _, found, _ := active.translate(rp, active.size.Load())
			if found {
				durable = p
			} else {
				durable = active.size.Load()
			}
		}
		size := active.size.Load()
		crash(r.l)
		cut := size
		if size > durable && r.rng.IntN(2) == 0 {
			cut = durable + r.rng.Int64N(size-durable+1)
			if err := os.Truncate(activePath, cut); err != nil {
				r.fail("tear: %v", err)
			}
		}
		r.note("unclean restart (rp %d, active %d, cut at %d of %d)", rp, active.base, cut, size)
		// Model: batches of the active segment that do not end by the cut
		// are lost.
		pos := int64(0)
		kept := r.m.batches[:0]
		end := int64(-1)
		for _, b := range r.m.batches {
			h, _ := record.ParseHeader(b)
			if h.BaseOffset >= active.base {
				if pos+int64(len(b)) > cut {
					break
				}
				pos += int64(len(b))
			}
			kept = append(kept, b)
			end = h.NextOffset()
		}
		r.m.batches = kept
		r.m.leo = max(end, active.base)
		if r.rng.IntN(2) == 0 {
			rp = r.rng.Int64N(rp + 1) // a stale checkpoint: more to recover
		}
		// Recovery re-reads the segments from the one holding the recovery
		// point and assigns the leader epochs of their batches that are
		// newer than the (checkpointed) cache knows, as Kafka's does.
		from := segs[max(floorSegment(segs, rp), 0)].base
		for _, b := range r.m.batches {
			h, _ := record.ParseHeader(b)
			if h.BaseOffset < from || h.PartitionLeaderEpoch < 0 {
				continue
			}
			if n := len(r.m.epochs); n == 0 || h.PartitionLeaderEpoch > r.m.epochs[n-1].Epoch {
				r.m.epochs = r.m.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
			}
		}
	}
	if r.m.leo < r.m.logStart {
		// Everything readable was lost: the log restarts empty at its log
		// start offset (Kafka's deleteSegmentsIfLogStartGreaterThanLogEnd).
		r.m.batches, r.m.leo = nil, r.m.logStart
	}
	r.m.hw = min(max(hw, r.m.logStart), r.m.leo)
	r.m.epochs = r.m.epochs.truncateFromEnd(r.m.leo).truncateFromStart(r.m.logStart)
	r.l = openLog(r.t, r.dir, r.cfg, Options{Now: r.clk.Now, HadCleanShutdown: clean, RecoveryPoint: rp, LogStartOffset: ls, HighWatermark: hw,
		ProducerIDExpiration: 1000 * 24 * time.Hour})
}

func (r *modelRun) check(step int) {
	r.t.Helper()
	l, m := r.l, &r.m
	if l.LogEndOffset() != m.leo || l.LogStartOffset() != m.logStart || l.HighWatermark() != m.hw {
		r.fail("step %d: log start/end/hw %d/%d/%d, model %d/%d/%d", step, l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark(), m.logStart, m.leo, m.hw)
	}
	got, want := logBatches(r.t, l), m.visible()
	if len(got) != len(want) {
		r.fail("step %d: %d batches, model %d", step, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			gh, _ := record.ParseHeader(got[i])
			wh, _ := record.ParseHeader(want[i])
			r.fail("step %d: batch %d differs: %+v vs model %+v", step, i, gh, wh)
		}
	}
	ge := l.EpochEntries()
	if len(ge) != len(m.epochs) {
		r.fail("step %d: epochs %+v, model %+v", step, ge, m.epochs)
	}
	for i := range ge {
		if ge[i] != m.epochs[i] {
			r.fail("step %d: epochs %+v, model %+v", step, ge, m.epochs)
		}
	}
	if err := verifyInvariants(l); err != nil {
		r.fail("step %d: %v", step, err)
	}
	if !r.retention {
		// Producer state equals a replay of the log. Snapshots keep only a
		// producer's last batch, with the producer's last timestamp (Kafka's
		// format), so compare that batch's range.
		want := r.producers()
		got := l.ActiveProducers()
		if len(got) != len(want) {
			r.fail("step %d: %d producers, replay has %d: %+v vs %+v", step, len(got), len(want), got, want)
		}
		for _, g := range got {
			w := want[g.ProducerID]
			if g.ProducerEpoch != w.ProducerEpoch || g.CurrentTxnFirstOffset != w.CurrentTxnFirstOffset || g.CoordinatorEpoch != w.CoordinatorEpoch ||
				len(g.Batches) == 0 != (len(w.Batches) == 0) ||
				(len(g.Batches) > 0 && !sameBatchRange(g.Batches[len(g.Batches)-1], w.Batches[len(w.Batches)-1])) {
				r.fail("step %d: producer %d is %+v, replay says %+v", step, g.ProducerID, g, w)
			}
		}
	}
}

func runModel(t *testing.T, seed uint64, steps int, retention bool) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	cfg := smallConfig()
	cfg.SegmentBytes = int32(1024 + rng.IntN(4096))
	cfg.SegmentIndexBytes = int32(12 * (2 + rng.IntN(40)))
	cfg.IndexIntervalBytes = int32(rng.IntN(600))
	cfg.SegmentMs = 60_000
	cfg.RetentionMs = -1
	if rng.IntN(3) == 0 {
		cfg.FlushMessages = 1
	}
	r := &modelRun{t: t, rng: rng, clk: newTestClock(), dir: t.TempDir(), cfg: cfg, retention: retention}
	r.l = openLog(t, r.dir, cfg, Options{Now: r.clk.Now, ProducerIDExpiration: 1000 * 24 * time.Hour})
	defer func() { r.l.Close() }()
	for step := 0; step < steps; step++ {
		r.clk.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
		switch k := rng.IntN(100); {
		case k < 35:
			r.leaderAppend()
		case k < 55:
			r.followerAppend()
		case k < 60:
			r.epoch++
			r.note("new leader epoch %d at %d", r.epoch, r.m.leo)
			if err := r.l.AssignEpochStartOffset(r.epoch, r.m.leo); err != nil {
				r.fail("assign epoch: %v", err)
			}
			r.m.epochs = r.m.epochs.assign(r.epoch, r.m.leo)
		case k < 68:
			r.truncate()
		case k < 69:
			r.truncateFully()
		case k < 74:
			r.note("roll")
			if err := r.l.Roll(); err != nil {
				r.fail("roll: %v", err)
			}
		case k < 79:
			hw := r.m.logStart + rng.Int64N(r.m.leo-r.m.logStart+1)
			if rng.IntN(2) == 0 {
				hw = r.m.leo
			}
			r.note("high watermark %d", hw)
			if got := r.l.SetHighWatermark(hw); got != hw {
				r.fail("set hw %d kept %d", hw, got)
			}
			r.m.hw = hw
		case k < 83:
			r.note("flush")
			if err := r.l.Flush(); err != nil {
				r.fail("flush: %v", err)
			}
			if r.l.RecoveryPoint() != r.m.leo {
				r.fail("recovery point %d after flush, leo %d", r.l.RecoveryPoint(), r.m.leo)
			}
		case k < 87 && retention:
			r.deleteRecords()
		case k < 90 && retention:
			r.retentionBySize()
		case k < 94:
			r.restart(true)
		default:
			r.restart(false)
		}
		r.check(step)
	}
}

func modelSeeds(t *testing.T, n int) []uint64 {
	if s := os.Getenv("KMIRROR_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return []uint64{v}
	}
	base := uint64(time.Now().UnixNano())
	out := make([]uint64, n)
	for i := range out {
		out[i] = base + uint64(i)*7919
	}
	return out
}

func TestModel(t *testing.T) {
	seeds, steps := 4, 250
	if os.Getenv("KMIRROR_LONG") != "" {
		seeds, steps = 40, 1500
	}
	for _, seed := range modelSeeds(t, seeds) {
		retention := seed%2 == 1 // seeds alternate; a rerun reproduces
		t.Run(fmt.Sprintf("seed=%d/retention=%v", seed, retention), func(t *testing.T) {
			t.Logf("seed %d (rerun with KMIRROR_SEED=%d)", seed, seed)
			runModel(t, seed, steps, retention)
		})
	}
}

func sameBatchRange(a, b producerstate.BatchMetadata) bool {
	return a.FirstSeq == b.FirstSeq && a.LastSeq == b.LastSeq && a.FirstOffset == b.FirstOffset && a.LastOffset == b.LastOffset
}
