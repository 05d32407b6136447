package broker

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
)

func TestFetchLongPollWakesOnAppend(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("poll", 2, nil)
	req := fetchReq(12, fp("poll", 0, 0), fp("poll", 1, 0))
	req.MaxWaitMillis = 20_000
	type result struct {
		r   *kmsg.FetchResponse
		at  time.Time
		err error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := e.callErr(context.Background(), req)
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{r: decodeFetch(t, resp), at: time.Now()}
	}()
	select {
	case r := <-done:
		t.Fatalf("fetch with nothing to read returned at once: %+v", r)
	default:
	}
	start := time.Now()
	e.mustProduce("poll", 1, makeBatch(t, plainBatch(), "wake up"))
	produced := time.Now()
	var r result
	select {
	case r = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the long poll did not wake on the append")
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.at.Before(produced) && r.at.Before(start) {
		t.Fatal("fetch answered before the produce")
	}
	if waited := r.at.Sub(start); waited > 10*time.Second {
		t.Fatalf("woke after %v", waited)
	}
	var vals []string
	for _, tp := range r.r.Topics {
		for _, p := range tp.Partitions {
			v, _ := fetchedValues(t, p.RecordBatches)
			vals = append(vals, v...)
		}
	}
	if !slices.Equal(vals, []string{"wake up"}) {
		t.Fatalf("long poll returned %q", vals)
	}
}

func TestFetchLongPollTimesOutEmpty(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("idle", 1, nil)
	req := fetchReq(12, fp("idle", 0, 0))
	req.MaxWaitMillis = 80
	start := time.Now()
	p := onlyPartition(t, decodeFetch(t, e.call(req)))
	if el := time.Since(start); el < 80*time.Millisecond {
		t.Fatalf("returned after %v, before MaxWait", el)
	}
	if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 0 {
		t.Fatalf("empty long poll: %+v", p)
	}
}

func TestFetchLongPollEndsOnShutdown(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("idle", 1, nil)
	req := fetchReq(12, fp("idle", 0, 0))
	req.MaxWaitMillis = 600_000
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := e.callErr(context.Background(), req); err != nil {
			t.Error(err)
		}
	}()
	e.b.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the long poll")
	}
}

func TestFetchByteLimits(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("big", 2, nil)
	big := strings.Repeat("x", 2000)
	e.mustProduce("big", 0, makeBatch(t, plainBatch(), big))
	e.mustProduce("big", 0, makeBatch(t, plainBatch(), big))
	e.mustProduce("big", 1, makeBatch(t, plainBatch(), big))

	// The response limit is far below one batch: the first partition with
	// data still returns one whole batch (KIP-74), the others nothing.
	req := fetchReq(12, fp("big", 0, 0), fp("big", 1, 0))
	req.MaxBytes = 100
	r := decodeFetch(t, e.call(req))
	p0, p1 := r.Topics[0].Partitions[0], r.Topics[0].Partitions[1]
	v0, _ := fetchedValues(t, p0.RecordBatches)
	if len(v0) != 1 || len(p1.RecordBatches) != 0 {
		t.Fatalf("response limit: partition 0 got %d records, partition 1 %d bytes", len(v0), len(p1.RecordBatches))
	}
	// A partition limit below a batch, with room in the response: only
	// the first partition may exceed.
	req = fetchReq(12, fetchPart{topic: "big", partition: 0, maxBytes: 10, curEpoch: -1, lastEpoch: -1},
		fetchPart{topic: "big", partition: 1, maxBytes: 10, curEpoch: -1, lastEpoch: -1})
	r = decodeFetch(t, e.call(req))
	v0, _ = fetchedValues(t, r.Topics[0].Partitions[0].RecordBatches)
	if len(v0) != 1 || len(r.Topics[0].Partitions[1].RecordBatches) != 0 {
		t.Fatalf("partition limit: %d records and %d bytes", len(v0), len(r.Topics[0].Partitions[1].RecordBatches))
	}
	// Enough room: everything.
	r = decodeFetch(t, e.call(fetchReq(12, fp("big", 0, 0), fp("big", 1, 0))))
	v0, _ = fetchedValues(t, r.Topics[0].Partitions[0].RecordBatches)
	v1, _ := fetchedValues(t, r.Topics[0].Partitions[1].RecordBatches)
	if len(v0) != 2 || len(v1) != 1 {
		t.Fatalf("full fetch: %d and %d records", len(v0), len(v1))
	}
}

func TestFetchSessions(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("s", 3, nil)
	for p := int32(0); p < 3; p++ {
		e.mustProduce("s", p, makeBatch(t, plainBatch(), "first"))
	}
	// Full fetch opening a session: every partition is in the response.
	req := fetchReq(12, fp("s", 0, 0), fp("s", 1, 0), fp("s", 2, 0))
	req.SessionID, req.SessionEpoch = 0, 0
	r := decodeFetch(t, e.call(req))
	if r.ErrorCode != 0 || r.SessionID == 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 3 {
		t.Fatalf("full fetch: error %v session %d topics %+v", kerr.ErrorForCode(r.ErrorCode), r.SessionID, r.Topics)
	}
	sid := r.SessionID

	incr := func(epoch int32, parts []fetchPart, forget []int32) *kmsg.FetchResponse {
		t.Helper()
		req := fetchReq(12, parts...)
		if len(parts) == 0 {
			req.Topics = nil
		}
		req.SessionID, req.SessionEpoch = sid, epoch
		if len(forget) > 0 {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.Partitions = "s", forget
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
		}
		return decodeFetch(t, e.call(req))
	}
	// Incremental, positions moved past the data: nothing changed, so
	// nothing is listed.
	r = incr(1, []fetchPart{fp("s", 0, 1), fp("s", 1, 1), fp("s", 2, 1)}, nil)
	if r.ErrorCode != 0 || r.SessionID != sid || len(r.Topics) != 0 {
		t.Fatalf("incremental without news: %v session %d topics %+v", kerr.ErrorForCode(r.ErrorCode), r.SessionID, r.Topics)
	}
	// New data on partition 2 only: only it is listed.
	e.mustProduce("s", 2, makeBatch(t, plainBatch(), "second"))
	r = incr(2, nil, nil)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].Partition != 2 {
		t.Fatalf("incremental with news on 2: %+v", r.Topics)
	}
	if v, _ := fetchedValues(t, r.Topics[0].Partitions[0].RecordBatches); !slices.Equal(v, []string{"second"}) {
		t.Fatalf("incremental records %q", v)
	}
	// Forget partition 2, move it forward: data on it is no longer sent.
	e.mustProduce("s", 2, makeBatch(t, plainBatch(), "third"))
	r = incr(3, []fetchPart{fp("s", 2, 2)}, []int32{2})
	if len(r.Topics) != 0 {
		t.Fatalf("forgotten partition still sent: %+v", r.Topics)
	}
	// Data on partition 0 is sent from the session's cached position.
	e.mustProduce("s", 0, makeBatch(t, plainBatch(), "zero"))
	r = incr(4, nil, nil)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 || r.Topics[0].Partitions[0].Partition != 0 {
		t.Fatalf("cached position: %+v", r.Topics)
	}
	// A repeated (stale) epoch and an unknown session are errors.
	if r = incr(4, nil, nil); r.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("stale epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	req = fetchReq(12)
	req.Topics = nil
	req.SessionID, req.SessionEpoch = sid+1, 1
	if r = decodeFetch(t, e.call(req)); r.ErrorCode != kerr.FetchSessionIDNotFound.Code || r.SessionID != 0 {
		t.Fatalf("unknown session: %v %d", kerr.ErrorForCode(r.ErrorCode), r.SessionID)
	}
	// The session still works at its epoch; then the final epoch closes it.
	if r = incr(5, nil, nil); r.ErrorCode != 0 {
		t.Fatalf("epoch 5: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	req = fetchReq(12, fp("s", 0, 2))
	req.SessionID, req.SessionEpoch = sid, -1
	if r = decodeFetch(t, e.call(req)); r.ErrorCode != 0 || r.SessionID != 0 || len(r.Topics) != 1 {
		t.Fatalf("closing fetch: %v session %d", kerr.ErrorForCode(r.ErrorCode), r.SessionID)
	}
	if r = incr(6, nil, nil); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if n := e.b.fetchs.len(); n != 0 {
		t.Fatalf("%d sessions left", n)
	}
}

func TestFetchSessionsByTopicID(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createTopic("ids", 1, nil)
	req := fetchReq(13, fetchPart{id: id, partition: 0, maxBytes: 1 << 20, curEpoch: -1, lastEpoch: -1},
		fetchPart{id: metadata.RandomUuid(), partition: 0, maxBytes: 1 << 20, curEpoch: -1, lastEpoch: -1})
	req.SessionEpoch = 0
	r := decodeFetch(t, e.call(req))
	if len(r.Topics) != 2 || r.Topics[0].TopicID != id || r.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("fetch by id: %+v", r.Topics)
	}
	// A session opened with ids cannot go on without them.
	old := fetchReq(12)
	old.Topics = nil
	old.SessionID, old.SessionEpoch = r.SessionID, 1
	if r := decodeFetch(t, e.call(old)); r.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("id session used by name: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

func TestFetchSessionCacheEviction(t *testing.T) {
	e := newEnv(t, map[string]string{"max.incremental.fetch.session.cache.slots": "1"})
	e.createTopic("ev", 2, nil)
	open := func(follower bool, parts ...fetchPart) int32 {
		req := fetchReq(12, parts...)
		req.SessionEpoch = 0
		if follower {
			req.ReplicaID = 1
		}
		return decodeFetch(t, e.call(req)).SessionID
	}
	first := open(false, fp("ev", 0, 0))
	if first == 0 {
		t.Fatal("no session opened")
	}
	// The cache is full and the session is young: a consumer session of
	// the same size is not created.
	if id := open(false, fp("ev", 1, 0)); id != 0 {
		t.Fatalf("second consumer session %d created in a full cache", id)
	}
	// A follower session may evict a consumer session.
	e.createTopicWith("rep", 1, 1, []int32{1}, []int32{1}, nil)
	if id := open(true, fp("rep", 0, 0)); id == 0 || e.b.fetchs.len() != 1 {
		t.Fatalf("follower session not created by eviction: %d", id)
	}
}

func TestFetchReadCommittedWithAbortedTransaction(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("txn", 1, nil)
	part := e.partition("txn", 0)
	ctx := context.Background()
	appendClient := func(b []byte) int64 {
		t.Helper()
		info, err := part.AppendAsLeader(ctx, b, storage.OriginClient, 1, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return info.FirstOffset
	}
	marker := func(pid int64, commit bool) {
		t.Helper()
		m := record.BuildEndTxnMarker(pid, 0, record.EndTxnMarker{Commit: commit, CoordinatorEpoch: 1}, time.Now().UnixMilli(), 0)
		if _, err := part.AppendAsLeader(ctx, m, storage.OriginCoordinator, 1, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	appendClient(makeBatch(t, plainBatch(), "plain-0"))                                                       // 0
	abortedFirst := appendClient(makeBatch(t, batchOpts{pid: 100, epoch: 0, seq: 0, txn: true}, "aborted-1")) // 1
	appendClient(makeBatch(t, batchOpts{pid: 200, epoch: 0, seq: 0, txn: true}, "committed-2"))               // 2
	marker(100, false)                                                                                        // 3
	marker(200, true)                                                                                         // 4
	appendClient(makeBatch(t, plainBatch(), "plain-5"))                                                       // 5
	appendClient(makeBatch(t, batchOpts{pid: 300, epoch: 0, seq: 0, txn: true}, "open-6"))                    // 6
	appendClient(makeBatch(t, plainBatch(), "plain-7"))                                                       // 7

	req := fetchReq(12, fp("txn", 0, 0))
	req.IsolationLevel = 1
	p := onlyPartition(t, decodeFetch(t, e.call(req)))
	if p.ErrorCode != 0 || p.HighWatermark != 8 || p.LastStableOffset != 6 {
		t.Fatalf("read committed: %v hw %d lso %d", kerr.ErrorForCode(p.ErrorCode), p.HighWatermark, p.LastStableOffset)
	}
	if len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != 100 || p.AbortedTransactions[0].FirstOffset != abortedFirst {
		t.Fatalf("aborted transactions %+v", p.AbortedTransactions)
	}
	vals, offs := fetchedValues(t, p.RecordBatches)
	if !slices.Equal(vals, []string{"plain-0", "aborted-1", "committed-2", "plain-5"}) || offs[len(offs)-1] != 5 {
		t.Fatalf("read committed returned %q at %v (the client filters the aborted one)", vals, offs)
	}
	// READ_UNCOMMITTED reads to the high watermark, without the list.
	p = onlyPartition(t, decodeFetch(t, e.call(fetchReq(12, fp("txn", 0, 0)))))
	vals, _ = fetchedValues(t, p.RecordBatches)
	if len(vals) != 6 || p.AbortedTransactions != nil {
		t.Fatalf("read uncommitted: %q aborted %v", vals, p.AbortedTransactions)
	}
	// ListOffsets latest under READ_COMMITTED is the last stable offset.
	lo := listOffset(t, e, 7, "txn", 0, -1, 1, -1)
	if lo.Offset != 6 {
		t.Fatalf("read committed latest offset %d, want 6", lo.Offset)
	}
	if lo := listOffset(t, e, 7, "txn", 0, -1, 0, -1); lo.Offset != 8 {
		t.Fatalf("read uncommitted latest offset %d, want 8", lo.Offset)
	}
}

func TestFetchDivergingEpochAndFencing(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createTopic("div", 1, nil)
	e.mustProduce("div", 0, makeBatch(t, plainBatch(), "e0-a", "e0-b")) // offsets 0-1 in epoch 0
	// A leader change to the same broker bumps the leader epoch to 1,
	// starting at offset 2.
	leader := int32(testNode)
	e.meta.mustApply(t, &metadata.PartitionChangeRecord{TopicID: id, Partition: 0, Leader: &leader})
	if got := e.partition("div", 0).LeaderEpoch(); got != 1 {
		t.Fatalf("leader epoch %d", got)
	}
	e.mustProduce("div", 0, makeBatch(t, plainBatch(), "e1-a", "e1-b", "e1-c")) // offsets 2-4 in epoch 1

	// A fetcher that believes epoch 0 went up to offset 4 diverged: it must
	// truncate to 2, where epoch 0 ended here.
	r := onlyPartition(t, decodeFetch(t, e.call(fetchReq(12, fetchPart{topic: "div", offset: 4, maxBytes: 1 << 20, curEpoch: 1, lastEpoch: 0}))))
	if r.ErrorCode != 0 || r.DivergingEpoch.Epoch != 0 || r.DivergingEpoch.EndOffset != 2 || len(r.RecordBatches) != 0 {
		t.Fatalf("diverging: %v %+v, %d bytes", kerr.ErrorForCode(r.ErrorCode), r.DivergingEpoch, len(r.RecordBatches))
	}
	// An epoch above every epoch this leader knows has no end offset here:
	// OFFSET_OUT_OF_RANGE, as in Kafka.
	r = onlyPartition(t, decodeFetch(t, e.call(fetchReq(12, fetchPart{topic: "div", offset: 3, maxBytes: 1 << 20, curEpoch: -1, lastEpoch: 5}))))
	if r.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("unknown higher epoch: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.DivergingEpoch)
	}
	// Consistent fetchers get records.
	r = onlyPartition(t, decodeFetch(t, e.call(fetchReq(12, fetchPart{topic: "div", offset: 2, maxBytes: 1 << 20, curEpoch: 1, lastEpoch: 0}))))
	if v, _ := fetchedValues(t, r.RecordBatches); r.DivergingEpoch.Epoch != -1 || len(v) != 3 {
		t.Fatalf("consistent fetch: %+v %q", r.DivergingEpoch, v)
	}
	r = onlyPartition(t, decodeFetch(t, e.call(fetchReq(12, fetchPart{topic: "div", offset: 3, maxBytes: 1 << 20, curEpoch: 1, lastEpoch: 1}))))
	if v, _ := fetchedValues(t, r.RecordBatches); len(v) != 3 { // the batch holding offset 3 starts at 2
		t.Fatalf("fetch in the current epoch: %q", v)
	}
	// Fencing by the current leader epoch.
	for _, c := range []struct {
		epoch int32
		want  *kerr.Error
	}{{0, kerr.FencedLeaderEpoch}, {2, kerr.UnknownLeaderEpoch}} {
		r = onlyPartition(t, decodeFetch(t, e.call(fetchReq(12, fetchPart{topic: "div", maxBytes: 1 << 20, curEpoch: c.epoch, lastEpoch: -1}))))
		if r.ErrorCode != c.want.Code || r.HighWatermark != -1 || r.LogStartOffset != -1 {
			t.Fatalf("current epoch %d: %v hw %d", c.epoch, kerr.ErrorForCode(r.ErrorCode), r.HighWatermark)
		}
	}
	// v16 tells a fenced fetcher who leads, with the endpoint.
	full := decodeFetch(t, e.call(fetchReq(16, fetchPart{id: id, maxBytes: 1 << 20, curEpoch: 0, lastEpoch: -1})))
	p := onlyPartition(t, full)
	if p.CurrentLeader.LeaderID != testNode || p.CurrentLeader.LeaderEpoch != 1 || len(full.Brokers) != 1 || full.Brokers[0].Port != 9092 {
		t.Fatalf("v16 current leader %+v brokers %+v", p.CurrentLeader, full.Brokers)
	}
	// OffsetForLeaderEpoch agrees.
	ofe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ofe.Version, ofe.ReplicaID = 4, -1
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = "div"
	for _, c := range []struct{ cur, epoch int32 }{{1, 0}, {1, 1}, {-1, 7}, {0, 0}} {
		op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		op.CurrentLeaderEpoch, op.LeaderEpoch = c.cur, c.epoch
		ot.Partitions = append(ot.Partitions, op)
	}
	ofe.Topics = append(ofe.Topics, ot)
	or := e.call(ofe).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions
	want := []struct {
		code  int16
		epoch int32
		end   int64
	}{{0, 0, 2}, {0, 1, 5}, {0, -1, -1}, {kerr.FencedLeaderEpoch.Code, -1, -1}}
	for i, w := range want {
		if or[i].ErrorCode != w.code || or[i].LeaderEpoch != w.epoch || or[i].EndOffset != w.end {
			t.Fatalf("OffsetForLeaderEpoch %d: %+v, want %+v", i, or[i], w)
		}
	}
}

func TestFetchErrors(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("t", 1, nil)
	e.createTopicWith("elsewhere", 1, 2, []int32{2}, []int32{2}, nil)
	e.mustProduce("t", 0, makeBatch(t, plainBatch(), "a"))
	cases := []struct {
		name string
		part fetchPart
		want *kerr.Error
	}{
		{"offset beyond the log end", fp("t", 0, 5), kerr.OffsetOutOfRange},
		{"negative offset", fp("t", 0, -1), kerr.OffsetOutOfRange},
		{"unknown topic", fp("missing", 0, 0), kerr.UnknownTopicOrPartition},
		{"unknown partition", fp("t", 9, 0), kerr.UnknownTopicOrPartition},
		{"not hosted here", fp("elsewhere", 0, 0), kerr.NotLeaderForPartition},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := fetchReq(12, c.part)
			req.MaxWaitMillis = 60_000 // errors answer at once
			p := onlyPartition(t, decodeFetch(t, e.call(req)))
			if p.ErrorCode != c.want.Code {
				t.Fatalf("error %v, want %v", kerr.ErrorForCode(p.ErrorCode), c.want)
			}
		})
	}
	// Offset at the log end: an empty answer, no error.
	p := onlyPartition(t, decodeFetch(t, e.call(fetchReq(12, fp("t", 0, 1)))))
	if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 1 {
		t.Fatalf("fetch at the log end: %+v", p)
	}
}
