package producerstate

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/record"
)

type recordHeader = record.Header

func TestRemoveExpiredProducers(t *testing.T) {
	l := newTestLog(t, "", Options{ProducerIDExpiration: time.Hour})
	old, recent := int64(1_000), int64(1_000+30*60*1000)
	l.mustAppend(C, bt{kind: "data", pid: 1, ts: old})
	l.mustAppend(C, bt{kind: "txn", pid: 2, ts: old})
	l.mustAppend(C, bt{kind: "data", pid: 3, ts: recent})

	l.m.RemoveExpiredProducers(time.UnixMilli(old + time.Hour.Milliseconds() - 1))
	if n := len(l.m.ActiveProducers()); n != 3 {
		t.Fatalf("before the expiration time: %d producers, want 3", n)
	}
	l.m.RemoveExpiredProducers(time.UnixMilli(old + time.Hour.Milliseconds()))
	checkState(t, l.m, map[int64]ps{
		2: {0, [][2]int32{{0, 0}}, 1, -1}, // ongoing transaction: never expires
		3: {0, [][2]int32{{0, 0}}, -1, -1},
	})
	// Producer 1 is unknown again: its next batch may use any sequence.
	l.mustAppend(C, data(1, 0, 77, 1))

	l.m.RemoveExpiredProducers(time.UnixMilli(recent + time.Hour.Milliseconds()))
	checkState(t, l.m, map[int64]ps{2: {0, [][2]int32{{0, 0}}, 1, -1}})
}

func TestFailedAppendIsDead(t *testing.T) {
	l := newTestLog(t, "", Options{})
	l.mustAppend(C, data(1, 0, 0, 1))
	a := l.m.NewAppend(C)
	h, ctl, ce := data(1, 0, 5, 1).header(1)
	if err := a.Add(h, ctl, ce); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("gap: %v", err)
	}
	h, ctl, ce = data(1, 0, 1, 1).header(1)
	if err := a.Add(h, ctl, ce); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("Add after a failure must repeat the failure, got %v", err)
	}
	l.m.Commit(a)
	if got := l.m.MapEndOffset(); got != 1 {
		t.Fatalf("failed append moved MapEndOffset to %d", got)
	}
	checkState(t, l.m, map[int64]ps{1: {0, [][2]int32{{0, 0}}, -1, -1}})
}

func TestCommitTwiceAndForeignAppend(t *testing.T) {
	l := newTestLog(t, "", Options{})
	other := newTestLog(t, "", Options{})
	a := other.m.NewAppend(C)
	h, ctl, ce := data(9, 0, 0, 1).header(0)
	if err := a.Add(h, ctl, ce); err != nil {
		t.Fatal(err)
	}
	l.m.Commit(a) // belongs to other.m: ignored
	if n := len(l.m.ActiveProducers()); n != 0 {
		t.Fatalf("foreign append applied: %d producers", n)
	}
	other.m.Commit(a)
	other.m.Commit(a) // second commit ignored, must not panic
	checkState(t, other.m, map[int64]ps{9: {0, [][2]int32{{0, 0}}, -1, -1}})
	if err := a.Add(h, ctl, ce); err == nil {
		t.Fatal("Add to a committed append succeeded")
	}
}

func TestResetsProducersAndCopies(t *testing.T) {
	l := newTestLog(t, "", Options{})
	a := l.m.NewAppend(R)
	if a.ResetsProducers() {
		t.Fatal("empty append resets")
	}
	h, ctl, ce := reset().header(0)
	if err := a.Add(h, ctl, ce); err != nil {
		t.Fatal(err)
	}
	if !a.ResetsProducers() {
		t.Fatal("ResetsProducers false after a MIRROR_PID_RESET batch")
	}
	l.m.Commit(a)

	// Returned entries are copies: changing them does not change the state.
	l.end = 1
	l.mustAppend(C, data(1, 0, 0, 1))
	e, ok := l.m.Producer(1)
	if !ok {
		t.Fatal("producer 1 missing")
	}
	e.Batches[0].LastSeq = 99
	if d, ok := l.m.FindDuplicate(mustHeader(data(1, 0, 0, 1))); !ok || d.LastSeq != 0 {
		t.Fatalf("state changed through a returned copy: %+v %v", d, ok)
	}
	if _, ok := l.m.Producer(2); ok {
		t.Fatal("unknown producer reported")
	}
}

func TestFindDuplicateIgnoresUncommittedAndNonIdempotent(t *testing.T) {
	l := newTestLog(t, "", Options{})
	a := l.m.NewAppend(C)
	h, ctl, ce := data(1, 0, 0, 1).header(0)
	if err := a.Add(h, ctl, ce); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.m.FindDuplicate(h); ok {
		t.Fatal("an uncommitted batch was reported as a duplicate")
	}
	l.m.Commit(a)
	if _, ok := l.m.FindDuplicate(h); !ok {
		t.Fatal("committed batch not found")
	}
	if _, ok := l.m.FindDuplicate(mustHeader(bt{kind: "plain"})); ok {
		t.Fatal("batch without producer id reported as duplicate")
	}
}

func mustHeader(b bt) recordHeader {
	h, _, _ := b.header(0)
	return h
}

// TestManyProducersInOneAppend covers appends that touch more producers than
// the linear-scan threshold, with a reset in the middle.
func TestManyProducersInOneAppend(t *testing.T) {
	l := newTestLog(t, "", Options{})
	var bs []bt
	for round := int32(0); round < 2; round++ {
		for pid := int64(1); pid <= 20; pid++ {
			bs = append(bs, data(pid, 0, round, 1))
		}
	}
	l.mustAppend(C, bs...)
	want := map[int64]ps{}
	for pid := int64(1); pid <= 20; pid++ {
		want[pid] = ps{0, [][2]int32{{0, 0}, {1, 1}}, -1, -1}
	}
	checkState(t, l.m, want)
	if r := l.append(C, data(1, 0, 2, 1), data(15, 0, 3, 1)); !errors.Is(r.err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("gap for producer 15: %v", r.err)
	}

	bs = bs[:0]
	for pid := int64(1); pid <= 12; pid++ {
		bs = append(bs, data(pid, 0, 2, 1))
	}
	bs = append(bs, reset())
	for pid := int64(5); pid <= 16; pid++ {
		bs = append(bs, data(pid, 0, 100, 1), data(pid, 0, 101, 1))
	}
	l.mustAppend(R, bs...)
	want = map[int64]ps{}
	for pid := int64(5); pid <= 16; pid++ {
		want[pid] = ps{0, [][2]int32{{100, 100}, {101, 101}}, -1, -1}
	}
	checkState(t, l.m, want)
	// After the reset the producers are validated again from their new state.
	if r := l.append(C, data(9, 0, 103, 1)); !errors.Is(r.err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("gap after reset: %v", r.err)
	}
}

func TestOnLogStartOffsetIncremented(t *testing.T) {
	l := newTestLog(t, "", Options{})
	l.mustAppend(C, txn(1, 0, 0, 1))  // 0
	l.mustAppend(Co, commit(1, 0, 0)) // 1
	l.mustAppend(C, data(2, 0, 0, 1)) // 2
	checkFUO(t, "before", l.m, 0)
	l.m.OnLogStartOffsetIncremented(2)
	checkFUO(t, "after deleting the marker", l.m, -1)
	if l.m.MapEndOffset() != 3 {
		t.Fatalf("MapEndOffset moved back to %d", l.m.MapEndOffset())
	}
	if len(l.m.ActiveProducers()) != 2 {
		t.Fatal("producers dropped with the log start")
	}
	l.m.OnLogStartOffsetIncremented(10)
	if l.m.MapEndOffset() != 10 {
		t.Fatalf("MapEndOffset %d, want 10", l.m.MapEndOffset())
	}
}
