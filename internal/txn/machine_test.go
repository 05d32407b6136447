package txn

import (
	"math"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/storage"
)

const (
	tid   = "txn-1"
	pid   = int64(100)
	maxTO = int32(900_000)
)

func tp(topic string, p int32) storage.TopicPartition {
	return storage.TopicPartition{Topic: topic, Partition: p}
}

// meta returns a Txn in state st for tid/pid at epoch.
func meta(st State, epoch int16, parts ...storage.TopicPartition) *Txn {
	t := &Txn{
		ID: tid, ProducerID: pid, ProducerEpoch: epoch,
		LastProducerID: NoProducerID, LastProducerEpoch: NoProducerEpoch,
		TimeoutMs: 60_000, State: st, StartTime: -1, LastUpdate: 1_000,
	}
	if st == Ongoing || st.Prepared() {
		t.Partitions = parts
		t.StartTime = 500
	}
	return t
}

func with(t *Txn, f func(*Txn)) *Txn {
	t = t.clone()
	f(t)
	return t
}

func initEv(f func(*InitProducerIDEvent)) InitProducerIDEvent {
	ev := InitProducerIDEvent{
		TransactionalID: tid, TimeoutMs: 60_000, MaxTimeoutMs: maxTO,
		ExpectedProducerID: NoProducerID, ExpectedEpoch: NoProducerEpoch,
		NewProducerID: NoProducerID, Now: 2_000,
	}
	if f != nil {
		f(&ev)
	}
	return ev
}

// want describes an expected transition: next nil means nothing is
// written; pid and epoch (checked when pid is set) answer InitProducerId.
type want struct {
	next    *Txn
	err     *kerr.Error
	pid     int64
	epoch   int16
	markers *MarkerJob
	need    bool
}

func check(t *testing.T, name string, got Transition, w want) {
	t.Helper()
	if got.Err != w.err {
		t.Errorf("%s: err %v, want %v", name, got.Err, w.err)
	}
	if got.NeedProducerID != w.need {
		t.Errorf("%s: NeedProducerID %v, want %v", name, got.NeedProducerID, w.need)
	}
	if w.next == nil {
		if got.Next != nil {
			t.Errorf("%s: writes %+v, want no write", name, *got.Next)
		}
	} else if got.Next == nil {
		t.Errorf("%s: no write, want %+v", name, *w.next)
	} else if !reflect.DeepEqual(got.Next, w.next) {
		t.Errorf("%s: next\n got %+v\nwant %+v", name, *got.Next, *w.next)
	}
	if w.pid != 0 && (got.ProducerID != w.pid || got.ProducerEpoch != w.epoch) {
		t.Errorf("%s: answers producer %d epoch %d, want %d %d", name, got.ProducerID, got.ProducerEpoch, w.pid, w.epoch)
	}
	if !reflect.DeepEqual(got.Markers, w.markers) {
		t.Errorf("%s: markers %+v, want %+v", name, got.Markers, w.markers)
	}
}

func TestInitProducerIDTransitions(t *testing.T) {
	a0, b1 := tp("a", 0), tp("b", 1)
	exhausted := int16(math.MaxInt16 - 1)
	for _, c := range []struct {
		name string
		cur  *Txn
		ev   InitProducerIDEvent
		want want
	}{
		{"empty transactional id", nil, initEv(func(e *InitProducerIDEvent) { e.TransactionalID = "" }),
			want{err: kerr.InvalidRequest}},
		{"zero timeout", nil, initEv(func(e *InitProducerIDEvent) { e.TimeoutMs = 0 }),
			want{err: kerr.InvalidTransactionTimeout}},
		{"timeout above transaction.max.timeout.ms", meta(Empty, 3), initEv(func(e *InitProducerIDEvent) { e.TimeoutMs = maxTO + 1 }),
			want{err: kerr.InvalidTransactionTimeout}},
		{"new id needs a producer id", nil, initEv(nil), want{need: true}},
		{"new id gets epoch 0", nil, initEv(func(e *InitProducerIDEvent) { e.NewProducerID = 7 }),
			want{next: &Txn{ID: tid, ProducerID: 7, ProducerEpoch: 0, LastProducerID: -1, LastProducerEpoch: -1,
				TimeoutMs: 60_000, State: Empty, StartTime: -1, LastUpdate: 2_000}, pid: 7, epoch: 0}},
		{"new id recovering with an old producer id (KIP-360)", nil, initEv(func(e *InitProducerIDEvent) {
			e.NewProducerID, e.ExpectedProducerID, e.ExpectedEpoch = 7, 55, 9
		}), want{next: &Txn{ID: tid, ProducerID: 7, ProducerEpoch: 0, LastProducerID: -1, LastProducerEpoch: -1,
			TimeoutMs: 60_000, State: Empty, StartTime: -1, LastUpdate: 2_000}, pid: 7, epoch: 0}},
		{"bump without expected epoch", meta(Empty, 3), initEv(nil),
			want{next: with(meta(Empty, 4), func(t *Txn) { t.LastUpdate = 2_000 }), pid: pid, epoch: 4}},
		{"bump after commit with expected epoch", meta(CompleteCommit, 3), initEv(func(e *InitProducerIDEvent) {
			e.ExpectedProducerID, e.ExpectedEpoch = pid, 3
		}), want{next: with(meta(Empty, 4), func(t *Txn) { t.LastProducerEpoch, t.LastUpdate = 3, 2_000 }), pid: pid, epoch: 4}},
		{"bump after abort takes the new timeout", meta(CompleteAbort, 3), initEv(func(e *InitProducerIDEvent) { e.TimeoutMs = 5_000 }),
			want{next: with(meta(Empty, 4), func(t *Txn) { t.TimeoutMs, t.LastUpdate = 5_000, 2_000 }), pid: pid, epoch: 4}},
		{"retry of a bump whose answer was lost", with(meta(Empty, 4), func(t *Txn) { t.LastProducerEpoch = 3 }),
			initEv(func(e *InitProducerIDEvent) { e.ExpectedProducerID, e.ExpectedEpoch = pid, 3 }),
			want{next: with(meta(Empty, 4), func(t *Txn) { t.LastProducerEpoch, t.LastUpdate = 3, 2_000 }), pid: pid, epoch: 4}},
		{"expected epoch too old", meta(Empty, 4), initEv(func(e *InitProducerIDEvent) { e.ExpectedProducerID, e.ExpectedEpoch = pid, 2 }),
			want{err: kerr.ProducerFenced}},
		{"expected producer id of someone else", meta(Empty, 4), initEv(func(e *InitProducerIDEvent) { e.ExpectedProducerID, e.ExpectedEpoch = 99, 4 }),
			want{err: kerr.ProducerFenced}},
		{"prepare commit under way", meta(PrepareCommit, 3, a0), initEv(nil), want{err: kerr.ConcurrentTransactions}},
		{"prepare abort under way", meta(PrepareAbort, 3, a0), initEv(nil), want{err: kerr.ConcurrentTransactions}},
		{"ongoing transaction is fenced and aborted first", meta(Ongoing, 3, a0, b1), initEv(nil),
			want{err: kerr.ConcurrentTransactions,
				next:    with(meta(PrepareAbort, 4, a0, b1), func(t *Txn) { t.LastUpdate = 2_000 }),
				markers: &MarkerJob{TransactionalID: tid, ProducerID: pid, ProducerEpoch: 4, Partitions: []storage.TopicPartition{a0, b1}}}},
		{"ongoing at the last epoch aborts without a bump", meta(Ongoing, math.MaxInt16, a0), initEv(nil),
			want{err: kerr.ConcurrentTransactions,
				next:    with(meta(PrepareAbort, math.MaxInt16, a0), func(t *Txn) { t.LastUpdate = 2_000 }),
				markers: &MarkerJob{TransactionalID: tid, ProducerID: pid, ProducerEpoch: math.MaxInt16, Partitions: []storage.TopicPartition{a0}}}},
		{"exhausted epoch needs a producer id", meta(Empty, exhausted), initEv(nil), want{need: true}},
		{"exhausted epoch rotates the producer id", meta(CompleteCommit, exhausted), initEv(func(e *InitProducerIDEvent) { e.NewProducerID = 200 }),
			want{next: with(meta(Empty, 0), func(t *Txn) { t.ProducerID, t.LastProducerID, t.LastUpdate = 200, pid, 2_000 }), pid: 200, epoch: 0}},
		{"exhausted epoch with expected epoch records it", meta(Empty, exhausted), initEv(func(e *InitProducerIDEvent) {
			e.NewProducerID, e.ExpectedProducerID, e.ExpectedEpoch = 200, pid, exhausted
		}), want{next: with(meta(Empty, 0), func(t *Txn) {
			t.ProducerID, t.LastProducerID, t.LastProducerEpoch, t.LastUpdate = 200, pid, exhausted, 2_000
		}), pid: 200, epoch: 0}},
		{"retry of a rotation whose answer was lost", with(meta(Empty, 0), func(t *Txn) {
			t.ProducerID, t.LastProducerID, t.LastProducerEpoch = 200, pid, exhausted
		}), initEv(func(e *InitProducerIDEvent) { e.ExpectedProducerID, e.ExpectedEpoch = pid, exhausted }),
			want{next: with(meta(Empty, 0), func(t *Txn) {
				t.ProducerID, t.LastProducerID, t.LastProducerEpoch, t.LastUpdate = 200, pid, exhausted, 2_000
			}), pid: 200, epoch: 0}},
		{"old producer id with an unexhausted epoch is fenced", with(meta(Empty, 0), func(t *Txn) {
			t.ProducerID, t.LastProducerID = 200, pid
		}), initEv(func(e *InitProducerIDEvent) { e.ExpectedProducerID, e.ExpectedEpoch = pid, 5 }),
			want{err: kerr.ProducerFenced}},
	} {
		check(t, c.name, Handle(c.cur, c.ev), c.want)
	}
}

func TestAddPartitionsTransitions(t *testing.T) {
	a0, a1, b0 := tp("a", 0), tp("a", 1), tp("b", 0)
	ev := func(epoch int16, parts ...storage.TopicPartition) AddPartitionsEvent {
		return AddPartitionsEvent{TransactionalID: tid, ProducerID: pid, ProducerEpoch: epoch, Partitions: parts, Now: 3_000}
	}
	ongoing := func(start int64, parts ...storage.TopicPartition) *Txn {
		return with(meta(Ongoing, 2, parts...), func(t *Txn) { t.StartTime, t.LastUpdate = start, 3_000 })
	}
	for _, c := range []struct {
		name string
		cur  *Txn
		ev   AddPartitionsEvent
		want want
	}{
		{"empty transactional id", meta(Empty, 2), AddPartitionsEvent{ProducerID: pid, ProducerEpoch: 2}, want{err: kerr.InvalidRequest}},
		{"unknown transactional id", nil, ev(2, a0), want{err: kerr.InvalidProducerIDMapping}},
		{"other producer id", meta(Empty, 2), AddPartitionsEvent{TransactionalID: tid, ProducerID: 5, ProducerEpoch: 2}, want{err: kerr.InvalidProducerIDMapping}},
		{"older epoch", meta(Empty, 2), ev(1, a0), want{err: kerr.ProducerFenced}},
		{"newer epoch", meta(Empty, 2), ev(3, a0), want{err: kerr.ProducerFenced}},
		{"commit under way", meta(PrepareCommit, 2, a0), ev(2, b0), want{err: kerr.ConcurrentTransactions}},
		{"abort under way", meta(PrepareAbort, 2, a0), ev(2, b0), want{err: kerr.ConcurrentTransactions}},
		{"first partitions start the transaction", meta(Empty, 2), ev(2, b0, a0, b0), want{next: ongoing(3_000, a0, b0)}},
		{"after a commit a new transaction starts", with(meta(CompleteCommit, 2), func(t *Txn) { t.StartTime = 100 }), ev(2, a1),
			want{next: ongoing(3_000, a1)}},
		{"after an abort a new transaction starts", meta(CompleteAbort, 2), ev(2, a1), want{next: ongoing(3_000, a1)}},
		{"partitions already in the transaction", meta(Ongoing, 2, a0, b0), ev(2, b0), want{}},
		{"more partitions keep the start time", meta(Ongoing, 2, a0, b0), ev(2, a1, a0), want{next: ongoing(500, a0, a1, b0)}},
	} {
		check(t, c.name, Handle(c.cur, c.ev), c.want)
	}
}

func TestEndTxnTransitions(t *testing.T) {
	a0 := tp("a", 0)
	ev := func(epoch int16, commit bool) EndTxnEvent {
		return EndTxnEvent{TransactionalID: tid, ProducerID: pid, ProducerEpoch: epoch, Commit: commit, Now: 4_000}
	}
	prepared := func(st State) *Txn {
		return with(meta(st, 2, a0), func(t *Txn) { t.LastUpdate = 4_000 })
	}
	for _, c := range []struct {
		name string
		cur  *Txn
		ev   EndTxnEvent
		want want
	}{
		{"empty transactional id", meta(Ongoing, 2, a0), EndTxnEvent{ProducerID: pid, ProducerEpoch: 2}, want{err: kerr.InvalidRequest}},
		{"unknown transactional id", nil, ev(2, true), want{err: kerr.InvalidProducerIDMapping}},
		{"other producer id", meta(Ongoing, 2, a0), EndTxnEvent{TransactionalID: tid, ProducerID: 1, ProducerEpoch: 2}, want{err: kerr.InvalidProducerIDMapping}},
		{"fenced producer", meta(Ongoing, 3, a0), ev(2, true), want{err: kerr.ProducerFenced}},
		{"epoch from the future", meta(Ongoing, 3, a0), ev(4, false), want{err: kerr.ProducerFenced}},
		{"commit", meta(Ongoing, 2, a0), ev(2, true), want{next: prepared(PrepareCommit),
			markers: &MarkerJob{TransactionalID: tid, ProducerID: pid, ProducerEpoch: 2, Commit: true, Partitions: []storage.TopicPartition{a0}}}},
		{"abort", meta(Ongoing, 2, a0), ev(2, false), want{next: prepared(PrepareAbort),
			markers: &MarkerJob{TransactionalID: tid, ProducerID: pid, ProducerEpoch: 2, Partitions: []storage.TopicPartition{a0}}}},
		{"retried commit after completion", meta(CompleteCommit, 2), ev(2, true), want{}},
		{"abort after commit", meta(CompleteCommit, 2), ev(2, false), want{err: kerr.InvalidTxnState}},
		{"retried abort after completion", meta(CompleteAbort, 2), ev(2, false), want{}},
		{"commit after abort", meta(CompleteAbort, 2), ev(2, true), want{err: kerr.InvalidTxnState}},
		{"retried commit while completing", meta(PrepareCommit, 2, a0), ev(2, true), want{err: kerr.ConcurrentTransactions}},
		{"abort while committing", meta(PrepareCommit, 2, a0), ev(2, false), want{err: kerr.InvalidTxnState}},
		{"retried abort while completing", meta(PrepareAbort, 2, a0), ev(2, false), want{err: kerr.ConcurrentTransactions}},
		{"commit while aborting", meta(PrepareAbort, 2, a0), ev(2, true), want{err: kerr.InvalidTxnState}},
		{"commit with nothing ongoing", meta(Empty, 2), ev(2, true), want{err: kerr.InvalidTxnState}},
		{"abort with nothing ongoing", meta(Empty, 2), ev(2, false), want{err: kerr.InvalidTxnState}},
	} {
		check(t, c.name, Handle(c.cur, c.ev), c.want)
	}
}

func TestCompleteTransitions(t *testing.T) {
	a0 := tp("a", 0)
	done := func(st State) *Txn {
		return with(meta(st, 2), func(t *Txn) { t.StartTime, t.LastUpdate = 500, 5_000 })
	}
	ev := func(epoch int16, commit bool) CompleteEvent {
		return CompleteEvent{ProducerID: pid, ProducerEpoch: epoch, Commit: commit, Now: 5_000}
	}
	for _, c := range []struct {
		name string
		cur  *Txn
		ev   CompleteEvent
		want want
	}{
		{"commit completes", meta(PrepareCommit, 2, a0), ev(2, true), want{next: done(CompleteCommit)}},
		{"abort completes", meta(PrepareAbort, 2, a0), ev(2, false), want{next: done(CompleteAbort)}},
		{"stale epoch", meta(PrepareCommit, 3, a0), ev(2, true), want{err: kerr.InvalidTxnState}},
		{"other result", meta(PrepareCommit, 2, a0), ev(2, false), want{err: kerr.InvalidTxnState}},
		{"already complete", meta(CompleteCommit, 2), ev(2, true), want{err: kerr.InvalidTxnState}},
		{"id gone", nil, ev(2, true), want{err: kerr.InvalidTxnState}},
		{"other producer", with(meta(PrepareCommit, 2, a0), func(t *Txn) { t.ProducerID = 1 }), ev(2, true), want{err: kerr.InvalidTxnState}},
	} {
		check(t, c.name, Handle(c.cur, c.ev), c.want)
	}
}

func TestTimerTransitions(t *testing.T) {
	a0 := tp("a", 0)
	// meta's transactions start at 500 with a 60 s timeout.
	fenced := with(meta(PrepareAbort, 3, a0), func(t *Txn) { t.LastUpdate = 60_501 })
	dead := func(st State) *Txn {
		return with(meta(st, 2), func(t *Txn) { t.State, t.LastUpdate = Dead, 100_000 })
	}
	for _, c := range []struct {
		name string
		cur  *Txn
		ev   Event
		want want
	}{
		{"ongoing past its timeout is fenced and aborted", meta(Ongoing, 2, a0), TimeoutEvent{Now: 60_501},
			want{next: fenced, markers: &MarkerJob{TransactionalID: tid, ProducerID: pid, ProducerEpoch: 3, Partitions: []storage.TopicPartition{a0}}}},
		{"ongoing exactly at its timeout", meta(Ongoing, 2, a0), TimeoutEvent{Now: 60_500}, want{}},
		{"empty never times out", meta(Empty, 2), TimeoutEvent{Now: 1e9}, want{}},
		{"prepared never times out", meta(PrepareCommit, 2, a0), TimeoutEvent{Now: 1e9}, want{}},
		{"unknown id", nil, TimeoutEvent{Now: 1e9}, want{}},
		{"idle empty id expires", meta(Empty, 2), ExpireEvent{Now: 100_000, ExpirationMs: 99_000}, want{next: dead(Empty)}},
		{"idle committed id expires", meta(CompleteCommit, 2), ExpireEvent{Now: 100_000, ExpirationMs: 99_000}, want{next: dead(CompleteCommit)}},
		{"idle aborted id expires", meta(CompleteAbort, 2), ExpireEvent{Now: 100_000, ExpirationMs: 99_000}, want{next: dead(CompleteAbort)}},
		{"recently used id stays", meta(Empty, 2), ExpireEvent{Now: 100_000, ExpirationMs: 99_001}, want{}},
		{"ongoing id never expires", meta(Ongoing, 2, a0), ExpireEvent{Now: 1e9, ExpirationMs: 1}, want{}},
		{"preparing id never expires", meta(PrepareAbort, 2, a0), ExpireEvent{Now: 1e9, ExpirationMs: 1}, want{}},
	} {
		check(t, c.name, Handle(c.cur, c.ev), c.want)
	}
}

func TestVerify(t *testing.T) {
	a0, a1 := tp("a", 0), tp("a", 1)
	for _, c := range []struct {
		name  string
		cur   *Txn
		pid   int64
		epoch int16
		top   *kerr.Error
		per   []*kerr.Error
	}{
		{"unknown id", nil, pid, 2, kerr.InvalidProducerIDMapping, nil},
		{"other producer", meta(Ongoing, 2, a0), 9, 2, kerr.InvalidProducerIDMapping, nil},
		{"fenced producer", meta(Ongoing, 3, a0), pid, 2, kerr.ProducerFenced, nil},
		{"completing", meta(PrepareCommit, 2, a0), pid, 2, kerr.ConcurrentTransactions, nil},
		{"ongoing", meta(Ongoing, 2, a0), pid, 2, nil, []*kerr.Error{nil, kerr.TransactionAbortable}},
		{"nothing ongoing", meta(CompleteCommit, 2), pid, 2, nil, []*kerr.Error{kerr.TransactionAbortable, kerr.TransactionAbortable}},
	} {
		top, per := Verify(c.cur, tid, c.pid, c.epoch, []storage.TopicPartition{a0, a1})
		if top != c.top || !reflect.DeepEqual(per, c.per) {
			t.Errorf("%s: got %v %v, want %v %v", c.name, top, per, c.top, c.per)
		}
	}
	if top, _ := Verify(meta(Ongoing, 2, a0), "", pid, 2, nil); top != kerr.InvalidRequest {
		t.Errorf("empty id: %v", top)
	}
}

// TestTransitionsDoNotMutate checks that a transition never changes the
// installed metadata: a failed write must leave it as it was.
func TestTransitionsDoNotMutate(t *testing.T) {
	a0, b0 := tp("a", 0), tp("b", 0)
	for _, c := range []struct {
		cur *Txn
		ev  Event
	}{
		{meta(Ongoing, 2, a0), AddPartitionsEvent{TransactionalID: tid, ProducerID: pid, ProducerEpoch: 2, Partitions: []storage.TopicPartition{b0}, Now: 9}},
		{meta(Ongoing, 2, a0), EndTxnEvent{TransactionalID: tid, ProducerID: pid, ProducerEpoch: 2, Commit: true, Now: 9}},
		{meta(Ongoing, 2, a0), initEv(nil)},
		{meta(Empty, 2), initEv(nil)},
		{meta(PrepareCommit, 2, a0), CompleteEvent{ProducerID: pid, ProducerEpoch: 2, Commit: true, Now: 9}},
		{meta(Ongoing, 2, a0), TimeoutEvent{Now: 1e9}},
		{meta(Empty, 2), ExpireEvent{Now: 1e9, ExpirationMs: 1}},
	} {
		before := c.cur.clone()
		tr := Handle(c.cur, c.ev)
		if tr.Next == nil {
			t.Fatalf("%T: expected a write", c.ev)
		}
		if !reflect.DeepEqual(before, c.cur) {
			t.Errorf("%T changed the current metadata: %+v → %+v", c.ev, *before, *c.cur)
		}
	}
}

func TestStateNames(t *testing.T) {
	for s := Empty; s <= PrepareEpochFence; s++ {
		got, ok := ParseState(s.String())
		if !ok || got != s {
			t.Errorf("ParseState(%q) = %v %v", s.String(), got, ok)
		}
	}
	if _, ok := ParseState("ongoing"); ok {
		t.Error("state names are case-sensitive in Kafka")
	}
	if State(9).String() != "Unknown(9)" {
		t.Errorf("unknown state: %s", State(9))
	}
}
