package broker

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// The leader's side of replication, driven by follower fetches the tests
// send themselves (replica id and broker epoch in Fetch v15).

// registerBroker3 adds broker 3 (epoch 13) to the env's metadata.
func (e *env) registerBroker3(fenced bool) {
	e.t.Helper()
	e.meta.mustApply(e.t, &metadata.RegisterBrokerRecord{BrokerRegistration: metadata.BrokerRegistration{
		ID: 3, Epoch: 13, IncarnationID: metadata.RandomUuid(), Fenced: fenced,
		Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "broker3", Port: 9292}},
	}})
}

// followerFetch sends replica id's fetch of topic-0 at offset (with its
// log start offset and broker epoch) and returns the partition's answer.
func (e *env) followerFetch(id int32, epoch int64, topic string, offset, logStart int64) kmsg.FetchResponseTopicPartition {
	e.t.Helper()
	req := fetchReq(15, fetchPart{id: e.topicID(topic), partition: 0, offset: offset, maxBytes: 1 << 20, curEpoch: -1, lastEpoch: -1})
	req.ReplicaState.ID, req.ReplicaState.Epoch = id, epoch
	req.Topics[0].Partitions[0].LogStartOffset = logStart
	return onlyPartition(e.t, decodeFetch(e.t, e.call(req)))
}

func TestHighWatermarkIsTheISRMinimum(t *testing.T) {
	e := newEnv(t, nil)
	e.registerBroker3(false)
	e.createTopicWith("hw", 1, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, nil)
	part := e.partition("hw", 0)
	for _, v := range []string{"a", "b", "c"} {
		if rp := e.produce(9, 1, "hw", 0, makeBatch(t, plainBatch(), v)); rp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(rp.ErrorCode))
		}
	}
	if hw := part.Log().HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d before any follower fetched", hw)
	}
	e.followerFetch(2, 12, "hw", 3, 0)
	if hw := part.Log().HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d while follower 3 has not fetched in this epoch", hw)
	}
	if r := e.followerFetch(3, 13, "hw", 1, 0); r.HighWatermark != 1 {
		t.Fatalf("high watermark %d after follower 3 reached 1, want 1", r.HighWatermark)
	}
	e.followerFetch(3, 13, "hw", 3, 0)
	if hw := part.Log().HighWatermark(); hw != 3 {
		t.Fatalf("high watermark %d with every ISR member at 3", hw)
	}
	if pos := part.FollowerPositions(); pos[2] != 3 || pos[3] != 3 {
		t.Fatalf("follower positions %v", pos)
	}
}

func TestAcksAllWaitsForEveryISRMember(t *testing.T) {
	e := newEnv(t, nil)
	e.registerBroker3(false)
	e.createTopicWith("acks", 1, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, map[string]string{"min.insync.replicas": "2"})
	part := e.partition("acks", 0)
	waits := watchWaits(t, part)
	waits.arm()
	done := make(chan kmsg.ProduceResponseTopicPartition, 1)
	go func() {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 9, -1, 30_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "acks"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = makeBatch(t, plainBatch(), "x", "y")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := e.callErr(waits.ctx(), req)
		if err != nil {
			t.Error(err)
			close(done)
			return
		}
		done <- resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	}()
	pollUntil(t, "the append", func() bool { return part.Log().LogEndOffset() == 2 })
	e.followerFetch(2, 12, "acks", 2, 0)
	e.followerFetch(3, 13, "acks", 1, 0)
	// The waiting produce looked at the partition after each fetch, and
	// again after both: it must still wait.
	if waits.heldSinceArm(t, "the acks=all produce after the follower fetches") {
		t.Fatal("acks=all found its batch committed with an ISR member behind")
	}
	select {
	case r := <-done:
		t.Fatalf("acks=all answered with an ISR member behind: %+v", r)
	default:
	}
	e.followerFetch(3, 13, "acks", 2, 0)
	select {
	case r := <-done:
		if r.ErrorCode != 0 || r.BaseOffset != 0 {
			t.Fatalf("acks=all: %v base %d", kerr.ErrorForCode(r.ErrorCode), r.BaseOffset)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("acks=all did not complete once every ISR member had the batch")
	}
}

func TestISRExpandsWhenAFollowerCatchesUp(t *testing.T) {
	e := newEnv(t, nil)
	e.registerBroker3(false)
	e.createTopicWith("exp", 1, 1, []int32{1, 2, 3}, []int32{1, 2}, nil)
	part := e.partition("exp", 0)
	e.produce(9, 1, "exp", 0, makeBatch(t, plainBatch(), "a", "b"))
	e.followerFetch(2, 12, "exp", 2, 0)
	// Behind the high watermark: no expansion.
	e.followerFetch(3, 13, "exp", 1, 0)
	if n := len(e.ctrl.alterRequests()); n != 0 {
		t.Fatalf("%d AlterPartition requests for a follower behind the high watermark", n)
	}
	// In a broker epoch that is not its registration's: not eligible.
	e.followerFetch(3, 99, "exp", 2, 0)
	if n := len(e.ctrl.alterRequests()); n != 0 {
		t.Fatalf("%d AlterPartition requests for a follower in a stale broker epoch", n)
	}
	// Caught up in its current epoch: the leader asks for it.
	e.followerFetch(3, 13, "exp", 2, 0)
	pollUntil(t, "the expanded ISR in the metadata", func() bool { return slices.Equal(part.State().ISR, []int32{1, 2, 3}) })
	reqs := e.ctrl.alterRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d AlterPartition requests, want 1", len(reqs))
	}
	r := reqs[0]
	rp := r.Topics[0].Partitions[0]
	if r.BrokerID != 1 || r.BrokerEpoch != 10 || r.Topics[0].TopicID != e.topicID("exp") || rp.PartitionEpoch != 0 || rp.LeaderEpoch != 0 {
		t.Fatalf("request %+v", r)
	}
	var got [][2]int64
	for _, m := range rp.NewEpochISR {
		got = append(got, [2]int64{int64(m.BrokerID), m.BrokerEpoch})
	}
	if !slices.Equal(got, [][2]int64{{1, 10}, {2, 12}, {3, 13}}) {
		t.Fatalf("proposed ISR with epochs %v", got)
	}
}

func TestISRDoesNotExpandToAFencedBroker(t *testing.T) {
	e := newEnv(t, nil)
	e.registerBroker3(true)
	e.createTopicWith("fenced", 1, 1, []int32{1, 3}, []int32{1}, nil)
	e.followerFetch(3, 13, "fenced", 0, 0)
	if n := len(e.ctrl.alterRequests()); n != 0 {
		t.Fatalf("%d AlterPartition requests to add a fenced broker", n)
	}
}

func TestISRShrinksAfterTheLagTime(t *testing.T) {
	e := newEnv(t, map[string]string{"replica.lag.time.max.ms": "200", "replica.fetch.wait.max.ms": "100"})
	e.registerBroker3(false)
	e.createTopicWith("lag", 1, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, nil)
	part := e.partition("lag", 0)
	// Follower 2 has the whole (empty) log; follower 3 never fetches.
	e.followerFetch(2, 12, "lag", 0, 0)
	start := time.Now()
	pollUntil(t, "the shrunk ISR", func() bool { return slices.Equal(part.State().ISR, []int32{1, 2}) })
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Fatalf("the ISR shrank after %v, before replica.lag.time.max.ms", el)
	}
	reqs := e.ctrl.alterRequests()
	if len(reqs) != 1 || len(reqs[0].Topics[0].Partitions[0].NewEpochISR) != 2 {
		t.Fatalf("AlterPartition requests %+v", reqs)
	}
	// Follower 3 catches up and comes back.
	if r := e.followerFetch(3, 13, "lag", 0, 0); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	pollUntil(t, "the expanded ISR", func() bool { return slices.Equal(part.State().ISR, []int32{1, 2, 3}) })
}

func TestRecoveringLeaderEndsRecovery(t *testing.T) {
	e := newEnv(t, nil)
	id := metadata.RandomUuid()
	e.meta.mustApply(t, &metadata.TopicRecord{Name: "rec", ID: id}, &metadata.PartitionRecord{TopicID: id, Partition: 0, PartitionState: metadata.PartitionState{
		Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderRecoveryState: metadata.Recovering}})
	part := e.partition("rec", 0)
	pollUntil(t, "the recovered state", func() bool { return part.State().LeaderRecoveryState == metadata.Recovered })
	// Recovered, the follower may join.
	e.followerFetch(2, 11, "rec", 0, 0)
	pollUntil(t, "the follower in the ISR", func() bool { return slices.Equal(part.State().ISR, []int32{1, 2}) })
}

func TestDeleteRecordsWaitsForTheISR(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopicWith("del", 1, 1, []int32{1, 2}, []int32{1, 2}, nil)
	part := e.partition("del", 0)
	e.produce(9, 1, "del", 0, makeBatch(t, plainBatch(), "a", "b", "c", "d", "e"))
	e.followerFetch(2, 11, "del", 5, 0)
	if hw := part.Log().HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d", hw)
	}
	waits := watchWaits(t, part)
	del := func(timeout int32) kmsg.DeleteRecordsResponseTopicPartition {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.Version, req.TimeoutMillis = 2, timeout
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "del"
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = 3
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := e.callErr(waits.ctx(), req)
		if err != nil {
			t.Error(err)
			return kmsg.DeleteRecordsResponseTopicPartition{ErrorCode: -1}
		}
		return resp.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
	}
	// The follower has not followed: the request times out.
	if r := del(50); r.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("without the follower: %v low %d", kerr.ErrorForCode(r.ErrorCode), r.LowWatermark)
	}
	waits.arm()
	done := make(chan kmsg.DeleteRecordsResponseTopicPartition, 1)
	go func() { done <- del(30_000) }()
	// The request's wait checks the follower's log start and must wait.
	if waits.heldSinceArm(t, "the DeleteRecords wait") {
		t.Fatal("DeleteRecords found the log start moved on the follower before it fetched")
	}
	select {
	case r := <-done:
		t.Fatalf("answered before the follower moved its log start: %+v", r)
	default:
	}
	// The leader's answer tells the follower the new log start; the
	// follower's next fetch reports it has moved too.
	if r := e.followerFetch(2, 11, "del", 5, 0); r.LogStartOffset != 3 {
		t.Fatalf("leader log start in the fetch %d", r.LogStartOffset)
	}
	e.followerFetch(2, 11, "del", 5, 3)
	select {
	case r := <-done:
		if r.ErrorCode != 0 || r.LowWatermark != 3 {
			t.Fatalf("delete records: %v low %d", kerr.ErrorForCode(r.ErrorCode), r.LowWatermark)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("delete records did not complete once the follower followed")
	}
}

// TestFollowerTargetRestartsInsideABatch: a follower with an empty log
// whose leader's log start lies inside a batch restarts its log at the
// batch's base, then follows the leader's log start.
func TestFollowerTargetRestartsInsideABatch(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopicWith("mid", 1, 2, []int32{2, 1}, []int32{2, 1}, nil)
	p := e.partition("mid", 0)
	tgt := followerTarget{p}
	if err := tgt.TruncateFullyAndStartAt(5); err != nil {
		t.Fatal(err)
	}
	last, err := tgt.Append(replicatedBatch(t, 3, 1, -1, "d", "e", "f", "g", "h"))
	if err != nil || last != 7 {
		t.Fatalf("append: last %d %v", last, err)
	}
	if s, leo := tgt.LogStartOffset(), tgt.LogEndOffset(); s != 3 || leo != 8 {
		t.Fatalf("log [%d, %d), want [3, 8)", s, leo)
	}
	tgt.SetHighWatermark(8)
	// A new leader may report a lower high watermark for a while: the
	// follower's does not go back.
	tgt.SetHighWatermark(4)
	if hw := p.Log().HighWatermark(); hw != 8 {
		t.Fatalf("follower high watermark %d, want it kept at 8", hw)
	}
	tgt.MaybeIncrementLogStartOffset(5)
	if s := tgt.LogStartOffset(); s != 5 {
		t.Fatalf("log start %d after following the leader's 5", s)
	}
	if e, ok := tgt.LatestEpoch(); !ok || e != 1 {
		t.Fatalf("latest epoch %d %v", e, ok)
	}
	if e, off := tgt.EndOffsetForEpoch(1); e != 1 || off != 8 {
		t.Fatalf("end of epoch 1: %d %d", e, off)
	}
	// A non-empty log does not restart for a batch below its end.
	if _, err := tgt.Append(replicatedBatch(t, 6, 1, -1, "x")); err == nil {
		t.Fatal("a batch below the log end was appended")
	}
	// The fetchers know this follower's leader.
	st, ok := e.b.Replicas().Fetchers().Status(tpOf("mid", 0))
	if !ok || st.Source.BrokerID != 2 || st.Source.Addr != "broker2:9192" {
		t.Fatalf("fetch state %+v %v", st, ok)
	}
}

// TestElectLeadersForwarded: the broker forwards ElectLeaders to the
// controller; when none answers, every partition gets NOT_CONTROLLER.
func TestElectLeadersForwarded(t *testing.T) {
	e := newEnv(t, nil)
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version, req.ElectionType = 2, 0
	rt := kmsg.NewElectLeadersRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0, 1}
	req.Topics = append(req.Topics, rt)
	e.ctrl.setFail(errors.New("no controller"))
	resp := e.call(req).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != kerr.NotController.Code || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("response %+v", resp)
	}
	for _, p := range resp.Topics[0].Partitions {
		if p.ErrorCode != kerr.NotController.Code {
			t.Fatalf("partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
}
