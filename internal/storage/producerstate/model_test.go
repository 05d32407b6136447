package producerstate

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// genProducer is what a well-behaved producer knows about itself.
type genProducer struct {
	epoch   int16
	nextSeq int32
	inTxn   bool
	seen    bool // has written since the last reset (so the manager knows it)
}

// TestRandomLogsReplayToTheSameState generates random valid traffic from a
// few producers (idempotent and transactional batches, markers, epoch bumps,
// MIRROR_PID_RESET, rejected bad batches) and checks:
//   - valid batches are never rejected and bad ones always are, leaving the
//     state unchanged;
//   - the live state matches what the producers themselves know (epoch,
//     last sequence, open transaction);
//   - a replay of the whole log from nothing gives the same state, and the
//     same .txnindex entries;
//   - reloading any snapshot and replaying the rest gives the same state,
//     except that batches older than the snapshot are forgotten.
func TestRandomLogsReplayToTheSameState(t *testing.T) {
	iterations := 40
	if os.Getenv("KMIRROR_LONG") != "" {
		iterations = 2000
	}
	for seed := uint64(1); seed <= uint64(iterations); seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { randomLogRun(t, seed) })
	}
}

func randomLogRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x6b6d6972726f72))
	dir := t.TempDir()
	l := newTestLog(t, dir, Options{})
	gen := map[int64]*genProducer{}
	for pid := int64(1); pid <= 4; pid++ {
		gen[pid] = &genProducer{}
	}
	coord := int32(0)
	var snapshots []int64

	dataBatch := func(pid int64) bt {
		g := gen[pid]
		n := int32(1 + rng.IntN(3))
		kind := "data"
		if g.inTxn || rng.IntN(3) == 0 {
			kind, g.inTxn = "txn", true
		}
		b := bt{kind: kind, pid: pid, epoch: g.epoch, seq: g.nextSeq, n: n}
		g.nextSeq += n
		g.seen = true
		return b
	}
	for step := 0; step < 60; step++ {
		pid := int64(1 + rng.IntN(4))
		g := gen[pid]
		switch r := rng.IntN(20); {
		case r < 10: // client data, one to three batches from random producers
			var bs []bt
			for i := 0; i < 1+rng.IntN(3); i++ {
				bs = append(bs, dataBatch(int64(1+rng.IntN(4))))
			}
			l.mustAppend(C, bs...)
		case r < 14: // transaction marker
			if !g.inTxn {
				continue
			}
			if rng.IntN(4) == 0 {
				coord++
			}
			b := commit(pid, g.epoch, coord)
			if rng.IntN(2) == 0 {
				b = abort(pid, g.epoch, coord)
			}
			l.mustAppend(Co, b)
			g.inTxn = false
		case r < 15: // epoch bump (InitProducerId) outside a transaction
			if g.inTxn {
				continue
			}
			g.epoch++
			g.nextSeq = 0
		case r < 16: // MIRROR_PID_RESET, possibly between other batches
			var bs []bt
			if rng.IntN(2) == 0 {
				bs = append(bs, dataBatch(pid))
			}
			bs = append(bs, reset())
			for _, gp := range gen {
				gp.inTxn, gp.seen = false, false
			}
			if rng.IntN(2) == 0 {
				bs = append(bs, dataBatch(pid))
			}
			l.mustAppend(R, bs...)
		case r < 18: // a bad batch: sequence gap or stale epoch
			cur, known := l.m.Producer(pid)
			if !g.seen || !known {
				continue
			}
			before := l.m.ActiveProducers()
			bad := bt{kind: "data", pid: pid, epoch: g.epoch, seq: g.nextSeq + 2, n: 1}
			if g.inTxn {
				bad.kind = "txn"
			}
			if cur.ProducerEpoch > 0 && rng.IntN(2) == 0 {
				bad.epoch = cur.ProducerEpoch - 1
			}
			if r := l.append(C, bad); r.err == nil {
				t.Fatalf("step %d: bad batch %+v accepted", step, bad)
			}
			if after := l.m.ActiveProducers(); !reflect.DeepEqual(before, after) {
				t.Fatalf("step %d: rejected batch changed the state", step)
			}
		default: // snapshot
			if err := l.m.TakeSnapshot(); err != nil {
				t.Fatal(err)
			}
			snapshots = append(snapshots, l.m.MapEndOffset())
		}
		checkAgainstGenerator(t, step, l.m, gen)
	}

	// Full replay from nothing.
	full := newTestLog(t, "", Options{})
	full.hist = l.hist
	full.replayInto(full.m, 0)
	if got, want := full.m.ActiveProducers(), l.m.ActiveProducers(); !reflect.DeepEqual(got, want) {
		t.Fatalf("full replay state\n got  %+v\n want %+v", got, want)
	}
	// Recompute the aborted-transaction entries through the replay.
	replayed := &testLog{t: t, m: newTestLog(t, "", Options{}).m}
	for _, b := range l.hist {
		replayed.append(R, b)
	}
	if !reflect.DeepEqual(replayed.aborted, l.aborted) {
		t.Fatalf("txn index entries differ on replay\n got  %+v\n want %+v", replayed.aborted, l.aborted)
	}
	wantFUO := fuoAfterHW(l.m, l.end)

	// Reload from every snapshot and replay the rest.
	for _, s := range snapshots {
		m := reload(t, copyDir(t, dir), 0, s)
		if m.MapEndOffset() != s {
			t.Fatalf("snapshot %d: MapEndOffset %d", s, m.MapEndOffset())
		}
		l.replayInto(m, s)
		got, want := m.ActiveProducers(), l.m.ActiveProducers()
		if len(got) != len(want) {
			t.Fatalf("snapshot %d: %d producers, want %d", s, len(got), len(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			if len(g.Batches) > len(w.Batches) || !reflect.DeepEqual(g.Batches, w.Batches[len(w.Batches)-len(g.Batches):]) {
				t.Fatalf("snapshot %d: producer %d batches %+v are not a suffix of %+v", s, g.ProducerID, g.Batches, w.Batches)
			}
			g.Batches, w.Batches = nil, nil
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("snapshot %d: producer\n got  %+v\n want %+v", s, g, w)
			}
		}
		if got := fuoAfterHW(m, l.end); got != wantFUO {
			t.Fatalf("snapshot %d: first unstable offset %d, want %d", s, got, wantFUO)
		}
	}
}

func checkAgainstGenerator(t *testing.T, step int, m *Manager, gen map[int64]*genProducer) {
	t.Helper()
	for pid, g := range gen {
		e, ok := m.Producer(pid)
		if !g.seen {
			if ok {
				t.Fatalf("step %d: producer %d present after a reset before writing again", step, pid)
			}
			continue
		}
		if !ok {
			t.Fatalf("step %d: producer %d missing", step, pid)
		}
		if e.ProducerEpoch > g.epoch || (e.CurrentTxnFirstOffset >= 0) != g.inTxn {
			t.Fatalf("step %d: producer %d state %+v, generator %+v", step, pid, e, *g)
		}
		if e.ProducerEpoch == g.epoch && len(e.Batches) > 0 && e.Batches[len(e.Batches)-1].LastSeq != g.nextSeq-1 {
			t.Fatalf("step %d: producer %d last sequence %d, generator next %d", step, pid, e.Batches[len(e.Batches)-1].LastSeq, g.nextSeq)
		}
	}
}

// fuoAfterHW is the first unstable offset once everything is replicated:
// only ongoing transactions remain (-1 if none).
func fuoAfterHW(m *Manager, hw int64) int64 {
	m.OnHighWatermarkUpdated(hw)
	off, ok := m.FirstUnstableOffset()
	if !ok {
		return -1
	}
	return off
}

func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	des, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join(src, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, de.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
