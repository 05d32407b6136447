package txn

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
)

func TestCommitAndAbortWriteMarkers(t *testing.T) {
	e := newEnv(t)
	a0, a1, b0 := tp("a", 0), tp("a", 1), tp("b", 0)
	p := e.initProducer("t1", time.Minute)
	if p.pid != 1000 || p.epoch != 0 {
		t.Fatalf("first producer: id %d epoch %d", p.pid, p.epoch)
	}
	p.mustAdd(a0, a1)
	p.send(a0, "x1", "x2")
	p.send(a1, "y1")
	p.mustAdd(b0, a0)
	p.send(b0, "z1")
	if err := p.addOffsets(3, "group-1"); err != nil {
		t.Fatal(err)
	}
	st := e.describe("t1")
	wantTopics := []kmsg.DescribeTransactionsResponseTransactionStateTopic{
		{Topic: OffsetsTopic, Partitions: []int32{e.c.offsetsPartition("group-1")}},
		{Topic: "a", Partitions: []int32{0, 1}},
		{Topic: "b", Partitions: []int32{0}},
	}
	if st.State != "Ongoing" || !reflect.DeepEqual(st.Topics, wantTopics) || st.StartTimestamp != e.clock.Now().UnixMilli() {
		t.Fatalf("ongoing: %+v", st)
	}
	if got := e.data.values(a0, true); len(got) != 0 {
		t.Fatalf("READ_COMMITTED sees an open transaction: %v", got)
	}
	if err := p.end(3, true); err != nil {
		t.Fatal(err)
	}
	st = e.waitState("t1", CompleteCommit, 0)
	if len(st.Topics) != 0 || st.ProducerEpoch != 0 {
		t.Fatalf("complete: %+v", st)
	}
	for _, tp := range []storage.TopicPartition{a0, a1, b0} {
		ms := e.data.markers(tp)
		if len(ms) != 1 || !ms[0].commit || ms[0].pid != p.pid || ms[0].epoch != 0 || ms[0].coordinatorEpoch != 1 {
			t.Errorf("%s markers: %+v, want one COMMIT", tp, ms)
		}
	}
	gp := e.c.offsetsPartition("group-1")
	if calls := e.data.groupCalls(); !reflect.DeepEqual(calls, []groupCall{{gp, p.pid, 0, 1, true}}) {
		t.Errorf("group completions: %+v", calls)
	}
	if got := e.data.values(a0, true); !slices.Equal(got, []string{"x1", "x2"}) {
		t.Errorf("READ_COMMITTED after commit: %v", got)
	}
	if l := e.data.log(b0); l.LastStableOffset() != l.LogEndOffset() {
		t.Errorf("b-0 LSO %d, LEO %d", l.LastStableOffset(), l.LogEndOffset())
	}

	// The next transaction of the same producer aborts.
	p.mustAdd(a0)
	p.send(a0, "x3")
	if err := p.end(3, false); err != nil {
		t.Fatal(err)
	}
	e.waitState("t1", CompleteAbort, 0)
	ms := e.data.markers(a0)
	if len(ms) != 2 || ms[1].commit || ms[1].epoch != 0 {
		t.Errorf("a-0 markers after abort: %+v", ms)
	}
	if n := len(e.data.markers(a1)); n != 1 {
		t.Errorf("a-1 is not part of the aborted transaction but has %d markers", n)
	}
	if got := e.data.values(a0, true); !slices.Equal(got, []string{"x1", "x2"}) {
		t.Errorf("READ_COMMITTED shows aborted data: %v", got)
	}
	if got := e.data.values(a0, false); !slices.Equal(got, []string{"x1", "x2", "x3"}) {
		t.Errorf("READ_UNCOMMITTED: %v", got)
	}
	// Retried ends answer as Kafka does.
	if err := p.end(3, false); err != nil {
		t.Errorf("retried abort: %v", err)
	}
	if err := p.end(3, true); !isErr(err, kerr.InvalidTxnState) {
		t.Errorf("commit after abort: %v", err)
	}
}

func TestFencing(t *testing.T) {
	e := newEnv(t)
	a0 := tp("a", 0)
	p1 := e.initProducer("t", time.Minute)
	p2 := e.initProducer("t", time.Minute)
	if p2.pid != p1.pid || p2.epoch != p1.epoch+1 {
		t.Fatalf("second producer: %d/%d after %d/%d", p2.pid, p2.epoch, p1.pid, p1.epoch)
	}
	for _, c := range []struct {
		version int16
		want    *kerr.Error
	}{{0, kerr.InvalidProducerEpoch}, {1, kerr.InvalidProducerEpoch}, {2, kerr.ProducerFenced}, {3, kerr.ProducerFenced}} {
		if err := p1.addVersion(c.version, a0)[a0]; !isErr(err, c.want) {
			t.Errorf("AddPartitionsToTxn v%d from the fenced producer: %v, want %v", c.version, err, c.want)
		}
		if err := p1.end(c.version, true); !isErr(err, c.want) {
			t.Errorf("EndTxn v%d from the fenced producer: %v, want %v", c.version, err, c.want)
		}
		if err := p1.addOffsets(c.version, "g"); !isErr(err, c.want) {
			t.Errorf("AddOffsetsToTxn v%d from the fenced producer: %v, want %v", c.version, err, c.want)
		}
	}

	// A new producer aborts the ongoing transaction of the old one first,
	// with a bumped epoch that fences it in the partitions.
	p2.mustAdd(a0)
	p2.send(a0, "zombie")
	if r := e.initPID(4, "t", time.Minute, -1, -1); r.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Fatalf("InitProducerId during a transaction: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	st := e.waitState("t", CompleteAbort, 0)
	if st.ProducerEpoch != 2 {
		t.Errorf("fenced epoch %d, want 2", st.ProducerEpoch)
	}
	if ms := e.data.markers(a0); len(ms) != 1 || ms[0].commit || ms[0].epoch != 2 {
		t.Errorf("markers: %+v", ms)
	}
	r := e.initPID(4, "t", time.Minute, -1, -1)
	if r.ErrorCode != 0 || r.ProducerID != p1.pid || r.ProducerEpoch != 3 {
		t.Fatalf("retried InitProducerId: %+v", r)
	}
	// The zombie can write nothing more.
	if err := e.data.produce(a0, p2.pid, p2.epoch, p2.seq[a0], "late"); !isErr(err, kerr.InvalidProducerEpoch) {
		t.Errorf("zombie write: %v", err)
	}
	if got := e.data.values(a0, true); len(got) != 0 {
		t.Errorf("READ_COMMITTED: %v", got)
	}

	// KIP-360: a producer that knows its id and epoch gets the next epoch;
	// one with an older epoch is fenced (INVALID_PRODUCER_EPOCH before v4).
	if r := e.initPID(4, "t", time.Minute, p1.pid, 3); r.ErrorCode != 0 || r.ProducerEpoch != 4 {
		t.Errorf("recovery with the current epoch: %+v", r)
	}
	if r := e.initPID(4, "t", time.Minute, p1.pid, 4); r.ErrorCode != 0 || r.ProducerEpoch != 5 {
		t.Errorf("second recovery: %+v", r)
	}
	if r := e.initPID(4, "t", time.Minute, p1.pid, 1); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Errorf("recovery with an old epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := e.initPID(3, "t", time.Minute, p1.pid, 1); r.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Errorf("recovery with an old epoch, v3: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := e.initPID(4, "t", time.Minute, 77, 0); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Errorf("recovery with another producer id: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := e.initPID(4, "t", time.Minute, p1.pid, -1); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("producer id without epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

func TestRequestErrors(t *testing.T) {
	e := newEnv(t)
	a0 := tp("a", 0)
	if r := e.initPID(4, "t", 16*time.Minute, -1, -1); r.ErrorCode != kerr.InvalidTransactionTimeout.Code || r.ProducerID != -1 {
		t.Errorf("timeout above transaction.max.timeout.ms: %+v", r)
	}
	if r := e.initPID(4, "t", 0, -1, -1); r.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Errorf("zero timeout: %+v", r)
	}
	if r := e.initPID(4, "", time.Minute, -1, -1); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("empty transactional id: %+v", r)
	}
	unknown := &producer{e: e, id: "nobody", pid: 5, epoch: 0}
	if err := unknown.addVersion(3, a0)[a0]; !isErr(err, kerr.InvalidProducerIDMapping) {
		t.Errorf("unknown id: %v", err)
	}
	if err := unknown.end(3, true); !isErr(err, kerr.InvalidProducerIDMapping) {
		t.Errorf("unknown id EndTxn: %v", err)
	}
	p := e.initProducer("t", time.Minute)
	if err := p.end(3, true); !isErr(err, kerr.InvalidTxnState) {
		t.Errorf("commit with nothing ongoing: %v", err)
	}
	wrong := &producer{e: e, id: "t", pid: p.pid + 1, epoch: p.epoch}
	if err := wrong.addVersion(3, a0)[a0]; !isErr(err, kerr.InvalidProducerIDMapping) {
		t.Errorf("wrong producer id: %v", err)
	}
	// A missing topic fails the request without touching the transaction.
	errs := p.addVersion(3, a0, tp("missing", 0), tp("a", 9))
	if !isErr(errs[a0], kerr.OperationNotAttempted) || !isErr(errs[tp("missing", 0)], kerr.UnknownTopicOrPartition) ||
		!isErr(errs[tp("a", 9)], kerr.UnknownTopicOrPartition) {
		t.Errorf("missing partitions: %v", errs)
	}
	if st := e.describe("t"); st.State != "Empty" {
		t.Errorf("state after a refused add: %s", st.State)
	}
	if st := e.describe("nobody"); st.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Errorf("describe unknown: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	if st := e.describe(""); st.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("describe empty id: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	e.pids.mu.Lock()
	e.pids.err = kerr.CoordinatorLoadInProgress
	e.pids.mu.Unlock()
	if r := e.initPID(4, "new", time.Minute, -1, -1); r.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		t.Errorf("no producer id available: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

func TestTimedOutTransactionIsAborted(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.AbortTimedOutInterval = time.Second })
	a0 := tp("a", 0)
	p := e.initProducer("slow", 10*time.Second)
	p.mustAdd(a0)
	p.send(a0, "never")
	l := e.data.log(a0)
	if l.LastStableOffset() != 0 {
		t.Fatalf("LSO %d while the transaction is open", l.LastStableOffset())
	}
	for range 9 {
		e.clock.Advance(time.Second)
	}
	if st := e.describe("slow"); st.State != "Ongoing" {
		t.Fatalf("aborted before its timeout: %s", st.State)
	}
	st := e.waitState("slow", CompleteAbort, time.Second)
	if st.ProducerEpoch != 1 {
		t.Errorf("epoch after the timeout abort: %d, want 1 (fenced)", st.ProducerEpoch)
	}
	if ms := e.data.markers(a0); len(ms) != 1 || ms[0].commit || ms[0].epoch != 1 {
		t.Errorf("markers: %+v", ms)
	}
	if l.LastStableOffset() != l.LogEndOffset() {
		t.Errorf("LSO %d did not move to the log end %d", l.LastStableOffset(), l.LogEndOffset())
	}
	if got := e.data.values(a0, true); len(got) != 0 {
		t.Errorf("READ_COMMITTED: %v", got)
	}
	if err := p.end(3, true); !isErr(err, kerr.ProducerFenced) {
		t.Errorf("commit of the timed-out producer: %v", err)
	}
}

func TestReloadCompletesPreparedTransaction(t *testing.T) {
	e := newEnv(t)
	a0, b0 := tp("a", 0), tp("b", 0)
	p := e.initProducer("t", time.Minute)
	p.mustAdd(a0, b0)
	p.send(a0, "1")
	p.send(b0, "2")
	e.data.failWith(b0, kerr.NotLeaderForPartition)
	if err := p.end(3, true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "marker in a-0", func() bool { return len(e.data.markers(a0)) == 1 })
	// b-0's marker may be written after a-0's: wait until b-0 has refused
	// it, or clearing the failure below could let this first attempt pass.
	waitFor(t, "b-0 refused its marker", func() bool { return e.data.refused(b0) > 0 })
	if st := e.describe("t"); st.State != "PrepareCommit" {
		t.Fatalf("state %s while b-0 has no marker", st.State)
	}
	if err := p.addVersion(3, a0)[a0]; !isErr(err, kerr.ConcurrentTransactions) {
		t.Errorf("add while completing: %v", err)
	}
	if err := p.end(3, true); !isErr(err, kerr.ConcurrentTransactions) {
		t.Errorf("retried commit while completing: %v", err)
	}
	if r := e.initPID(4, "t", time.Minute, -1, -1); r.ErrorCode != kerr.ConcurrentTransactions.Code {
		t.Errorf("InitProducerId while completing: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// The node restarts; b-0's leader is back.
	e.data.failWith(b0, nil)
	e.restart()
	e.waitState("t", CompleteCommit, 0)
	if ms := e.data.markers(b0); len(ms) != 1 || !ms[0].commit {
		t.Errorf("b-0 markers: %+v", ms)
	}
	for _, m := range e.data.markers(a0) {
		if !m.commit || m.epoch != 0 {
			t.Errorf("a-0 marker %+v", m)
		}
	}
	if got := e.data.values(b0, true); !slices.Equal(got, []string{"2"}) {
		t.Errorf("READ_COMMITTED b-0: %v", got)
	}
	// The producer carries on after the restart.
	p.mustAdd(a0)
	if err := p.end(3, true); err != nil {
		t.Fatal(err)
	}
	e.waitState("t", CompleteCommit, 0)
}

func TestRestartKeepsState(t *testing.T) {
	e := newEnv(t)
	a0 := tp("a", 0)
	p := e.initProducer("t", time.Minute)
	p.mustAdd(a0)
	e.restart()
	st := e.describe("t")
	if st.State != "Ongoing" || st.ProducerID != p.pid || st.ProducerEpoch != p.epoch || len(st.Topics) != 1 {
		t.Fatalf("after restart: %+v", st)
	}
	if err := p.end(3, true); err != nil {
		t.Fatal(err)
	}
	e.waitState("t", CompleteCommit, 0)
	// A new producer id is not handed out again after a restart.
	q := e.initProducer("u", time.Minute)
	if q.pid == p.pid {
		t.Errorf("producer id %d reused", q.pid)
	}
}

func TestExhaustedEpochRotatesProducerID(t *testing.T) {
	e := newEnv(t)
	// Write the state of an id whose epoch is exhausted, as if it had been
	// bumped 32766 times.
	id := "old-producer"
	old := &Txn{ID: id, ProducerID: 7, ProducerEpoch: 32766, LastProducerID: -1, LastProducerEpoch: -1,
		TimeoutMs: 60_000, State: CompleteCommit, StartTime: 1, LastUpdate: 2}
	appendTxnRecords(t, e, e.c.CoordinatorFor(id), txnRecord(old))
	e.restart()
	r := e.initPID(4, id, time.Minute, -1, -1)
	if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != 0 {
		t.Fatalf("InitProducerId with an exhausted epoch: %+v", r)
	}
	// KIP-360 retry with the exhausted epoch after the rotation: same answer.
	e.c.Close()
	e.start(true) // the previous id is not persisted: a retry now is fenced, as in Kafka after a move
	if r := e.initPID(4, id, time.Minute, 7, 32766); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Errorf("retry after the coordinator moved: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

func TestExhaustedEpochRetryOnSameCoordinator(t *testing.T) {
	e := newEnv(t)
	id := "old-producer"
	old := &Txn{ID: id, ProducerID: 7, ProducerEpoch: 32766, LastProducerID: -1, LastProducerEpoch: -1,
		TimeoutMs: 60_000, State: Empty, StartTime: -1, LastUpdate: 2}
	appendTxnRecords(t, e, e.c.CoordinatorFor(id), txnRecord(old))
	e.restart()
	r := e.initPID(4, id, time.Minute, 7, 32766)
	if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != 0 {
		t.Fatalf("rotation: %+v", r)
	}
	r = e.initPID(4, id, time.Minute, 7, 32766)
	if r.ErrorCode != 0 || r.ProducerID != 1000 || r.ProducerEpoch != 0 {
		t.Errorf("retry of the rotation: %+v", r)
	}
}

// appendTxnRecords writes records into a __transaction_state partition as
// a previous leader would have.
func appendTxnRecords(t *testing.T, e *env, partition int32, recs ...coordinator.Record) {
	t.Helper()
	l, err := e.host.Log(TransactionStateTopic, partition)
	if err != nil {
		t.Fatal(err)
	}
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
	}
	b, err := record.Build(record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: 1}, rs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Storage().AppendAsLeader(b, 1, storage.OriginCoordinator); err != nil {
		t.Fatal(err)
	}
	l.Storage().SetHighWatermark(l.Storage().LogEndOffset())
}

func TestMalformedRecordsAreSkippedOnLoad(t *testing.T) {
	e := newEnv(t)
	good := &Txn{ID: "good", ProducerID: 9, ProducerEpoch: 4, LastProducerID: -1, LastProducerEpoch: -1,
		TimeoutMs: 60_000, State: Empty, StartTime: -1, LastUpdate: 2}
	p := e.c.CoordinatorFor("good")
	appendTxnRecords(t, e, p,
		coordinator.Record{Key: []byte{0, 7, 1}, Value: []byte{1}},
		coordinator.Record{Key: EncodeKey("bad"), Value: []byte{0, 0, 0}},
		txnRecord(good),
	)
	e.restart()
	st := e.describe("good")
	if st.ErrorCode != 0 || st.ProducerID != 9 || st.ProducerEpoch != 4 {
		t.Errorf("good record after malformed ones: %+v", st)
	}
	if st := e.describe("bad"); st.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Errorf("malformed value loaded: %+v", st)
	}
}

func TestExpiredIDsAreRemoved(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.IDExpiration = time.Hour
		c.RemoveExpiredIDsInterval = time.Minute
	})
	e.initProducer("old", time.Minute)
	e.clock.Advance(30 * time.Minute)
	e.initProducer("young", time.Minute)
	waitFor(t, "old id expired", func() bool {
		if e.describe("old").ErrorCode == kerr.TransactionalIDNotFound.Code {
			return true
		}
		e.clock.Advance(time.Minute)
		return false
	})
	if st := e.describe("young"); st.ErrorCode != 0 {
		t.Errorf("young id: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	e.restart()
	if st := e.describe("old"); st.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Errorf("expired id back after restart: %+v", st)
	}
	if st := e.describe("young"); st.ErrorCode != 0 {
		t.Errorf("young id after restart: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	// An expired id starts afresh with a new producer id.
	p := e.initProducer("old", time.Minute)
	if p.epoch != 0 || p.pid == 1000 {
		t.Errorf("re-created id: %d/%d", p.pid, p.epoch)
	}
}

func TestCoordinatorMoves(t *testing.T) {
	e := newEnv(t)
	a0 := tp("a", 0)
	p := e.initProducer("t", time.Minute)
	p.mustAdd(a0)
	part := e.c.CoordinatorFor("t")
	e.host.Lead(TransactionStateTopic, part, false, 1)
	waitFor(t, "partition unloaded", func() bool {
		for _, ps := range e.c.rt.Partitions() {
			if ps.Partition == part {
				return false
			}
		}
		return true
	})
	if err := p.end(3, true); !isErr(err, kerr.NotCoordinator) {
		t.Errorf("EndTxn after the coordinator moved: %v", err)
	}
	if r := e.initPID(4, "t", time.Minute, -1, -1); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Errorf("InitProducerId: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if st := e.describe("t"); st.ErrorCode != kerr.NotCoordinator.Code {
		t.Errorf("describe: %v", kerr.ErrorForCode(st.ErrorCode))
	}
	// Leadership comes back at a higher epoch, after a load.
	l, err := e.host.Log(TransactionStateTopic, part)
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	l.HoldReads(gate)
	e.host.Lead(TransactionStateTopic, part, true, 2)
	waitFor(t, "loading", func() bool {
		for _, ps := range e.c.rt.Partitions() {
			if ps.Partition == part && ps.State == coordinator.PartitionLoading {
				return true
			}
		}
		return false
	})
	if err := p.end(3, true); !isErr(err, kerr.CoordinatorLoadInProgress) {
		t.Errorf("EndTxn while loading: %v", err)
	}
	list := kmsg.NewPtrListTransactionsRequest()
	if r := e.do(list).(*kmsg.ListTransactionsResponse); r.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		t.Errorf("ListTransactions while loading: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	close(gate)
	e.waitLoaded()
	if err := p.end(3, true); err != nil {
		t.Fatal(err)
	}
	e.waitState("t", CompleteCommit, 0)
	if ms := e.data.markers(a0); len(ms) != 1 || ms[0].coordinatorEpoch != 2 {
		t.Errorf("markers carry the new coordinator epoch: %+v", ms)
	}
}

func TestListAndDescribeTransactions(t *testing.T) {
	e := newEnv(t)
	a0 := tp("a", 0)
	empty := e.initProducer("empty", time.Minute)
	ongoing := e.initProducer("ongoing", 30*time.Second)
	ongoing.mustAdd(a0)
	started := e.clock.Now().UnixMilli()
	e.clock.Advance(10 * time.Second)
	done := e.initProducer("done", time.Minute)
	done.mustAdd(a0)
	if err := done.end(3, true); err != nil {
		t.Fatal(err)
	}
	e.waitState("done", CompleteCommit, 0)

	st := e.describe("ongoing")
	want := kmsg.NewDescribeTransactionsResponseTransactionState()
	want.TransactionalID, want.State, want.TimeoutMillis, want.StartTimestamp = "ongoing", "Ongoing", 30_000, started
	want.ProducerID, want.ProducerEpoch = ongoing.pid, 0
	want.Topics = []kmsg.DescribeTransactionsResponseTransactionStateTopic{{Topic: "a", Partitions: []int32{0}}}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("describe:\n got %+v\nwant %+v", st, want)
	}

	list := func(version int16, states []string, pids []int64, minDuration int64) ([]string, *kmsg.ListTransactionsResponse) {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version = version
		req.StateFilters, req.ProducerIDFilters, req.DurationFilterMillis = states, pids, minDuration
		resp := e.do(req).(*kmsg.ListTransactionsResponse)
		var ids []string
		for _, s := range resp.TransactionStates {
			ids = append(ids, s.TransactionalID+"="+s.TransactionState)
		}
		return ids, resp
	}
	for _, c := range []struct {
		name        string
		version     int16
		states      []string
		pids        []int64
		minDuration int64
		want        []string
		unknown     []string
	}{
		{"all", 0, nil, nil, 0, []string{"done=CompleteCommit", "empty=Empty", "ongoing=Ongoing"}, nil},
		{"by state", 0, []string{"Ongoing", "Empty"}, nil, 0, []string{"empty=Empty", "ongoing=Ongoing"}, nil},
		{"by producer", 0, nil, []int64{done.pid}, 0, []string{"done=CompleteCommit"}, nil},
		{"unknown state only", 0, []string{"Bogus"}, nil, 0, nil, []string{"Bogus"}},
		{"unknown and known state", 0, []string{"Bogus", "Ongoing"}, nil, 0, []string{"ongoing=Ongoing"}, []string{"Bogus"}},
		{"v0 ignores the duration", 0, []string{"Ongoing"}, nil, 60_000, []string{"ongoing=Ongoing"}, nil},
		{"running longer than 5s", 1, []string{"Ongoing", "CompleteCommit"}, nil, 5_000, []string{"ongoing=Ongoing"}, nil},
		{"running longer than 20s", 1, []string{"Ongoing"}, nil, 20_000, nil, nil},
		{"no duration filter", 1, nil, nil, -1, []string{"done=CompleteCommit", "empty=Empty", "ongoing=Ongoing"}, nil},
	} {
		ids, resp := list(c.version, c.states, c.pids, c.minDuration)
		if resp.ErrorCode != 0 || !slices.Equal(ids, c.want) || !slices.Equal(resp.UnknownStateFilters, c.unknown) {
			t.Errorf("%s: %v unknown %v (err %d), want %v unknown %v", c.name, ids, resp.UnknownStateFilters, resp.ErrorCode, c.want, c.unknown)
		}
	}
	_ = empty
}

func TestResolveCreatesTopic(t *testing.T) {
	e := newEnv(t)
	topic, part, err := e.c.Resolve(context.Background(), "my-txn")
	if err != nil || topic != TransactionStateTopic || part != coordinator.PartitionFor("my-txn", testPartitions) {
		t.Fatalf("Resolve: %s %d %v", topic, part, err)
	}
	specs := e.host.Topics()
	if len(specs) != 1 || specs[0].Name != TransactionStateTopic || specs[0].Partitions != testPartitions ||
		specs[0].Configs["cleanup.policy"] != "compact" || specs[0].Configs["min.insync.replicas"] != "2" ||
		specs[0].Configs["compression.type"] != "uncompressed" || specs[0].Configs["unclean.leader.election.enable"] != "false" {
		t.Errorf("created %+v", specs)
	}
	// The partition count follows the topic once it exists.
	e.meta.set(buildImage(t, map[int32]string{localNode: "127.0.0.1:1"},
		topicSpec{TransactionStateTopic, 7, localNode}, topicSpec{OffsetsTopic, 5, localNode}))
	if got := e.c.CoordinatorFor("my-txn"); got != coordinator.PartitionFor("my-txn", 7) {
		t.Errorf("CoordinatorFor with 7 partitions: %d", got)
	}
	if got := e.c.offsetsPartition("g"); got != coordinator.PartitionFor("g", 5) {
		t.Errorf("offsets partition with 5 partitions: %d", got)
	}
}

func TestConfigFromProperties(t *testing.T) {
	c, err := ConfigFromProperties(map[string]string{
		"node.id":                              "3",
		"transaction.state.log.num.partitions": "7",
		"transaction.max.timeout.ms":           "1000",
		"transactional.id.expiration.ms":       "60000",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
		"inter.broker.listener.name":                                  "INTERNAL",
		"unrelated":                                                   "x",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeID != 3 || c.TopicPartitions != 7 || c.MaxTimeout != time.Second || c.IDExpiration != time.Minute ||
		c.AbortTimedOutInterval != 500*time.Millisecond || c.InterBrokerListener != "INTERNAL" || c.TopicReplicationFactor != 3 {
		t.Errorf("config: %+v", c)
	}
	for _, bad := range []map[string]string{
		{"transaction.state.log.num.partitions": "0"},
		{"transaction.max.timeout.ms": "x"},
		{"transaction.state.log.replication.factor": "40000"},
	} {
		if _, err := ConfigFromProperties(bad); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	c, _ = ConfigFromProperties(map[string]string{"security.inter.broker.protocol": "SSL"})
	if c.InterBrokerListener != "SSL" {
		t.Errorf("listener from security.inter.broker.protocol: %s", c.InterBrokerListener)
	}
}

func TestFromBrokerConfig(t *testing.T) {
	bc, _, err := config.Load("", nil, map[string]string{
		"transaction.state.log.num.partitions":                        "12",
		"transaction.state.log.min.isr":                               "1",
		"transaction.max.timeout.ms":                                  "60000",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "250",
	})
	if err != nil {
		t.Fatal(err)
	}
	c := FromBrokerConfig(bc)
	if c.NodeID != bc.NodeID || c.TopicPartitions != 12 || c.TopicMinISR != 1 || c.MaxTimeout != time.Minute ||
		c.AbortTimedOutInterval != 250*time.Millisecond || c.IDExpiration != 7*24*time.Hour || c.InterBrokerListener == "" {
		t.Errorf("config: %+v", c)
	}
}

func TestWriteFailures(t *testing.T) {
	e := newEnv(t)
	a0 := tp("a", 0)
	p := e.initProducer("t", time.Minute)
	part := e.c.CoordinatorFor("t")
	l, err := e.host.Log(TransactionStateTopic, part)
	if err != nil {
		t.Fatal(err)
	}
	// Refused: nothing written, nothing changed, a retriable answer.
	l.FailNextAppend(kerr.NotEnoughReplicas)
	if err := p.addVersion(3, a0)[a0]; !isErr(err, kerr.CoordinatorNotAvailable) {
		t.Errorf("add refused for lack of replicas: %v", err)
	}
	if st := e.describe("t"); st.State != "Empty" {
		t.Errorf("state after a refused write: %s", st.State)
	}
	// Unknown outcome (the record is in the log, the commit wait timed
	// out): the client retries, the partition reloads and the log decides.
	l.FailAfterNextAppend(kerr.RequestTimedOut)
	if err := p.addVersion(3, a0)[a0]; !isErr(err, kerr.CoordinatorNotAvailable) {
		t.Errorf("add with an unknown outcome: %v", err)
	}
	e.waitLoaded()
	if st := e.describe("t"); st.State != "Ongoing" {
		t.Errorf("state after the reload: %s", st.State)
	}
	// Leadership lost under the coordinator's feet.
	e.host.Fence(TransactionStateTopic, part, 5)
	if err := p.end(3, true); !isErr(err, kerr.NotCoordinator) {
		t.Errorf("EndTxn on a fenced partition: %v", err)
	}
	e.host.Lead(TransactionStateTopic, part, true, 6)
	e.waitLoaded()
	if err := p.end(3, true); err != nil {
		t.Fatal(err)
	}
	e.waitState("t", CompleteCommit, 0)
	if ms := e.data.markers(a0); len(ms) != 1 || ms[0].coordinatorEpoch != 6 {
		t.Errorf("markers: %+v", ms)
	}
}
