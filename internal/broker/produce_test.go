package broker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
)

func TestProduceFetchRoundTripEveryCodec(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("codecs", 1, nil)
	codecs := []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}
	var want []string
	for i, c := range codecs {
		o := plainBatch()
		o.codec = c
		vals := []string{c.String() + "-a", c.String() + "-b", strings.Repeat(c.String(), 100)}
		base := e.mustProduce("codecs", 0, makeBatch(t, o, vals...))
		if base != int64(3*i) {
			t.Fatalf("%v: base offset %d, want %d", c, base, 3*i)
		}
		want = append(want, vals...)
	}
	for _, v := range []int16{4, 11, 12, 13, 17} {
		req := fetchReq(v, fp("codecs", 0, 0))
		if v >= 13 {
			req = fetchReq(v, fetchPart{id: e.topicID("codecs"), partition: 0, maxBytes: 1 << 20, curEpoch: -1, lastEpoch: -1})
		}
		r := decodeFetch(t, e.call(req))
		p := onlyPartition(t, r)
		if p.ErrorCode != 0 {
			t.Fatalf("v%d: %v", v, kerr.ErrorForCode(p.ErrorCode))
		}
		got, offs := fetchedValues(t, p.RecordBatches)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("v%d: values %q, want %q", v, got, want)
		}
		for i, o := range offs {
			if o != int64(i) {
				t.Fatalf("v%d: offsets %v", v, offs)
			}
		}
		if p.HighWatermark != 15 || p.LastStableOffset != 15 || (v >= 5 && p.LogStartOffset != 0) {
			t.Fatalf("v%d: hw %d lso %d logStart %d", v, p.HighWatermark, p.LastStableOffset, p.LogStartOffset)
		}
		if p.AbortedTransactions != nil {
			t.Fatalf("v%d: READ_UNCOMMITTED got aborted transactions %v", v, p.AbortedTransactions)
		}
		if v >= 11 && p.PreferredReadReplica != -1 {
			t.Fatalf("preferred read replica %d", p.PreferredReadReplica)
		}
	}
}

func TestProducePartitionErrors(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("t", 1, nil)
	e.createTopic("small", 1, map[string]string{"max.message.bytes": "200"})
	e.createTopic("appendtime", 1, map[string]string{"message.timestamp.type": "LogAppendTime"})
	e.createTopic("minisr", 1, map[string]string{"min.insync.replicas": "2"})
	e.createTopicWith("led-elsewhere", 1, 2, []int32{2, 1}, []int32{2, 1}, nil)
	e.createTopicWith(offsetsTopic, 1, 1, []int32{1}, []int32{1}, nil)
	e.createTopic("mirrored", 1, nil)
	ok := makeBatch(t, plainBatch(), "v")
	zstd := plainBatch()
	zstd.codec = record.CodecZstd
	txn := batchOpts{pid: 5, epoch: 0, seq: 0, txn: true}

	cases := []struct {
		name    string
		version int16
		acks    int16
		topic   string
		part    int32
		records []byte
		want    *kerr.Error
		msg     bool // an ErrorMessage is expected
	}{
		{"unknown topic", 9, 1, "nope", 0, ok, kerr.UnknownTopicOrPartition, true},
		{"unknown partition", 9, 1, "t", 7, ok, kerr.UnknownTopicOrPartition, true},
		{"empty record set", 9, 1, "t", 0, nil, kerr.InvalidRecord, true},
		{"two batches", 9, 1, "t", 0, append(append([]byte{}, ok...), ok...), kerr.InvalidRecord, true},
		{"magic 1", 9, 1, "t", 0, []byte("not a record batch at all, longer than sixty one bytes of header....."), kerr.InvalidRecord, true},
		{"bad crc", 9, 1, "t", 0, flipLastByte(ok), kerr.CorruptMessage, true},
		{"partial batch", 9, 1, "t", 0, ok[:len(ok)-3], kerr.CorruptMessage, true},
		{"zstd before v7", 6, 1, "t", 0, makeBatch(t, zstd, "z"), kerr.UnsupportedCompressionType, false},
		{"zstd from v7", 7, 1, "t", 0, makeBatch(t, zstd, "z"), nil, false},
		{"invalid acks", 9, 2, "t", 0, ok, kerr.InvalidRequiredAcks, true},
		{"internal topic", 9, 1, offsetsTopic, 0, ok, kerr.InvalidTopicException, true},
		{"too large", 9, 1, "small", 0, makeBatch(t, plainBatch(), strings.Repeat("x", 500)), kerr.MessageTooLarge, true},
		{"transactional without coordinator", 9, 1, "t", 0, makeBatch(t, txn, "x"), kerr.InvalidTxnState, true},
		{"not leader", 9, 1, "led-elsewhere", 0, ok, kerr.NotLeaderForPartition, true},
		{"min isr with acks all", 9, -1, "minisr", 0, ok, kerr.NotEnoughReplicas, true},
		{"min isr with acks 1", 9, 1, "minisr", 0, ok, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rp := e.produce(c.version, c.acks, c.topic, c.part, c.records)
			if got := kerr.ErrorForCode(rp.ErrorCode); got != errorOrNil(c.want) {
				t.Fatalf("error %v (%s), want %v", got, deref(rp.ErrorMessage), c.want)
			}
			if c.want != nil {
				if rp.BaseOffset != -1 || rp.LogAppendTime != -1 || rp.LogStartOffset != -1 {
					t.Fatalf("failed partition has offsets: %+v", rp)
				}
				if c.msg && rp.ErrorMessage == nil {
					t.Fatalf("no error message")
				}
			} else if rp.BaseOffset < 0 || rp.LogStartOffset != 0 {
				t.Fatalf("success without offsets: %+v", rp)
			}
		})
	}

	t.Run("admin client may write internal topics", func(t *testing.T) {
		cid := adminClientID
		e.rc.Header.ClientID = &cid
		defer func() { e.rc.Header.ClientID = nil }()
		if rp := e.produce(9, 1, offsetsTopic, 0, ok); rp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(rp.ErrorCode))
		}
	})

	t.Run("current leader and endpoints from v10", func(t *testing.T) {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 10, 1, 1000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "led-elsewhere"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = ok
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := e.call(req).(*kmsg.ProduceResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != 2 || p.CurrentLeader.LeaderEpoch != 0 {
			t.Fatalf("partition %+v", p)
		}
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 2 || resp.Brokers[0].Host != "broker2" || resp.Brokers[0].Port != 9192 || deref(resp.Brokers[0].Rack) != "rack-b" {
			t.Fatalf("node endpoints %+v", resp.Brokers)
		}
	})

	t.Run("read-only partition", func(t *testing.T) {
		reason := errf(kerr.InvalidRequest, "topic mirrored is mirrored by mirror m1 and is read-only")
		e.partition("mirrored", 0).SetReadOnly(reason)
		rp := e.produce(9, 1, "mirrored", 0, ok)
		if rp.ErrorCode != kerr.InvalidRequest.Code || !strings.Contains(deref(rp.ErrorMessage), "mirror m1") {
			t.Fatalf("read-only produce: %v %s", kerr.ErrorForCode(rp.ErrorCode), deref(rp.ErrorMessage))
		}
		// Coordinator-origin appends are not refused.
		if _, err := e.partition("mirrored", 0).AppendAsLeader(context.Background(), ok, storage.OriginCoordinator, 1, time.Second); err != nil {
			t.Fatal(err)
		}
		e.partition("mirrored", 0).SetReadOnly(nil)
		if rp := e.produce(9, 1, "mirrored", 0, ok); rp.ErrorCode != 0 || rp.BaseOffset != 1 {
			t.Fatalf("writable again: %+v", rp)
		}
	})

	t.Run("log append time", func(t *testing.T) {
		before := time.Now().UnixMilli()
		rp := e.produce(9, 1, "appendtime", 0, ok)
		if rp.ErrorCode != 0 || rp.LogAppendTime < before {
			t.Fatalf("LogAppendTime %d (error %v), want >= %d", rp.LogAppendTime, kerr.ErrorForCode(rp.ErrorCode), before)
		}
		p := onlyPartition(t, decodeFetch(t, e.call(fetchReq(11, fp("appendtime", 0, 0)))))
		h, err := record.ParseHeader(p.RecordBatches)
		if err != nil || h.TimestampType() != record.LogAppendTime || h.MaxTimestamp != rp.LogAppendTime {
			t.Fatalf("stored batch %+v, %v", h, err)
		}
	})
}

func flipLastByte(b []byte) []byte {
	c := append([]byte(nil), b...)
	c[len(c)-1] ^= 0xff
	return c
}

func errorOrNil(e *kerr.Error) error {
	if e == nil {
		return nil
	}
	return e
}

func TestProduceAcksZero(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("t", 1, nil)
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks = 9, 0
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = makeBatch(t, plainBatch(), "a")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := e.callErr(context.Background(), req)
	if err != nil || resp != nil {
		t.Fatalf("acks=0: %v %v, want no response", resp, err)
	}
	if got := e.partition("t", 0).Log().LogEndOffset(); got != 1 {
		t.Fatalf("log end %d after acks=0 produce", got)
	}
	req.Topics[0].Topic = "missing"
	if _, err := e.callErr(context.Background(), req); err == nil {
		t.Fatal("a failed acks=0 produce must close the connection")
	}
}

func TestIdempotentProduceRetryGetsOriginalOffset(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("idem", 1, nil)
	init := e.call(&kmsg.InitProducerIDRequest{Version: 4, ProducerID: -1, ProducerEpoch: -1}).(*kmsg.InitProducerIDResponse)
	if init.ErrorCode != 0 || init.ProducerID < 0 || init.ProducerEpoch != 0 {
		t.Fatalf("init producer id: %+v", init)
	}
	pid := init.ProducerID
	b0 := makeBatch(t, batchOpts{pid: pid, epoch: 0, seq: 0}, "a", "b", "c")
	b1 := makeBatch(t, batchOpts{pid: pid, epoch: 0, seq: 3}, "d")
	if off := e.mustProduce("idem", 0, b0); off != 0 {
		t.Fatalf("first batch at %d", off)
	}
	if off := e.mustProduce("idem", 0, b1); off != 3 {
		t.Fatalf("second batch at %d", off)
	}
	// The retry of the first batch is answered with its original offset
	// and written nowhere.
	retry := makeBatch(t, batchOpts{pid: pid, epoch: 0, seq: 0}, "a", "b", "c")
	if off := e.mustProduce("idem", 0, retry); off != 0 {
		t.Fatalf("retried batch answered with offset %d, want 0", off)
	}
	if leo := e.partition("idem", 0).Log().LogEndOffset(); leo != 4 {
		t.Fatalf("log end %d after a duplicate, want 4", leo)
	}
	gap := e.produce(11, -1, "idem", 0, makeBatch(t, batchOpts{pid: pid, epoch: 0, seq: 9}, "x"))
	if gap.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("sequence gap: %v", kerr.ErrorForCode(gap.ErrorCode))
	}
	// A newer epoch of the producer fences the older one.
	if off := e.mustProduce("idem", 0, makeBatch(t, batchOpts{pid: pid, epoch: 1, seq: 0}, "e")); off != 4 {
		t.Fatalf("new epoch at %d", off)
	}
	stale := e.produce(11, -1, "idem", 0, makeBatch(t, batchOpts{pid: pid, epoch: 0, seq: 4}, "zombie"))
	if stale.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("stale producer epoch: %v", kerr.ErrorForCode(stale.ErrorCode))
	}
	p := onlyPartition(t, decodeFetch(t, e.call(fetchReq(12, fp("idem", 0, 0)))))
	vals, _ := fetchedValues(t, p.RecordBatches)
	if strings.Join(vals, "") != "abcde" {
		t.Fatalf("log holds %q", vals)
	}
}

func TestProduceAcksAllWaitsForTheISR(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopicWith("rf2", 1, 1, []int32{1, 2}, []int32{1, 2}, nil)
	part := e.partition("rf2", 0)

	// Follower 2 never fetched: the high watermark cannot move and the
	// produce times out, keeping the offset it was appended at.
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 9, -1, 50
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "rf2"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = makeBatch(t, plainBatch(), "first")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	start := time.Now()
	got := e.call(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if got.ErrorCode != kerr.RequestTimedOut.Code || got.BaseOffset != 0 {
		t.Fatalf("acks=all without the follower: %v base %d", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Fatal("returned before the timeout")
	}
	if hw := part.Log().HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d, want 0", hw)
	}

	// A produce waits; the follower's fetch at the new log end commits it.
	req.TimeoutMillis = 30_000
	req.Topics[0].Partitions[0].Records = makeBatch(t, plainBatch(), "second")
	done := make(chan kmsg.ProduceResponseTopicPartition, 1)
	go func() {
		resp, err := e.callErr(context.Background(), req)
		if err != nil {
			t.Error(err)
			close(done)
			return
		}
		done <- resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}()
	pollUntil(t, "the second append", func() bool { return part.Log().LogEndOffset() == 2 })
	select {
	case r := <-done:
		t.Fatalf("acks=all answered before the follower caught up: %+v", r)
	default:
	}
	follower := fetchReq(15, fetchPart{id: e.topicID("rf2"), partition: 0, offset: 2, maxBytes: 1 << 20, curEpoch: -1, lastEpoch: 0})
	follower.ReplicaState.ID, follower.ReplicaState.Epoch = 2, 11
	fr := onlyPartition(t, decodeFetch(t, e.call(follower)))
	if fr.ErrorCode != 0 || fr.HighWatermark != 2 {
		t.Fatalf("follower fetch: %v hw %d", kerr.ErrorForCode(fr.ErrorCode), fr.HighWatermark)
	}
	select {
	case r := <-done:
		if r.ErrorCode != 0 || r.BaseOffset != 1 {
			t.Fatalf("acks=all after the follower caught up: %v base %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("acks=all produce did not complete after the follower caught up")
	}
	if pos := part.FollowerPositions()[2]; pos != 2 {
		t.Fatalf("follower position %d", pos)
	}
	// A fetch from a broker that is no replica is refused.
	follower.ReplicaState.ID = 3
	if fr := onlyPartition(t, decodeFetch(t, e.call(follower))); fr.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fetch from a non-replica: %v", kerr.ErrorForCode(fr.ErrorCode))
	}
}

func TestProduceAcksAllWakesOnShutdown(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopicWith("rf2", 1, 1, []int32{1, 2}, []int32{1, 2}, nil)
	part := e.partition("rf2", 0)
	errc := make(chan error, 1)
	go func() {
		_, err := part.AppendAsLeader(context.Background(), makeBatch(t, plainBatch(), "x"), storage.OriginClient, -1, time.Hour)
		errc <- err
	}()
	pollUntil(t, "the append", func() bool { return part.Log().LogEndOffset() == 1 })
	e.b.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Fatalf("after shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("shutdown did not wake the waiting produce")
	}
}

// TestProduceNotEnoughReplicasAfterAppend: a follower that never fetches
// is dropped from the ISR after replica.lag.time.max.ms (the leader's
// AlterPartition, applied by the controller); the waiting acks=all produce
// then completes, committed by the leader alone, with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND because the ISR is below
// min.insync.replicas.
func TestProduceNotEnoughReplicasAfterAppend(t *testing.T) {
	e := newEnv(t, map[string]string{"replica.lag.time.max.ms": "200", "replica.fetch.wait.max.ms": "100"})
	e.createTopicWith("shrink", 1, 1, []int32{1, 2}, []int32{1, 2}, map[string]string{"min.insync.replicas": "2"})
	part := e.partition("shrink", 0)
	done := make(chan kmsg.ProduceResponseTopicPartition, 1)
	go func() {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, -1, 30_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "shrink"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = makeBatch(t, plainBatch(), "x")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := e.callErr(context.Background(), req)
		if err != nil {
			t.Error(err)
			close(done)
			return
		}
		done <- resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}()
	select {
	case r := <-done:
		if r.ErrorCode != kerr.NotEnoughReplicasAfterAppend.Code || r.BaseOffset != 0 {
			t.Fatalf("after the ISR shrank: %v base %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the ISR change did not complete the produce")
	}
	if isr := part.State().ISR; len(isr) != 1 || isr[0] != 1 {
		t.Fatalf("ISR %v, want the leader alone", isr)
	}
	if hw := part.Log().HighWatermark(); hw != 1 {
		t.Fatalf("high watermark %d with the leader alone in the ISR", hw)
	}
	// The next acks=all produce is refused before it is written.
	if rp := e.produce(9, -1, "shrink", 0, makeBatch(t, plainBatch(), "y")); rp.ErrorCode != kerr.NotEnoughReplicas.Code {
		t.Fatalf("produce below min.insync.replicas: %v", kerr.ErrorForCode(rp.ErrorCode))
	}
	if leo := part.Log().LogEndOffset(); leo != 1 {
		t.Fatalf("the refused produce was written: log end %d", leo)
	}
}
