package group

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator"
)

// stableGroup makes a one-member consumer group Stable (JoinGroup v9 with
// the member id handshake, SyncGroup v5) and returns the member id.
func (e *env) stableGroup(group, assignment string) string {
	e.t.Helper()
	first := e.do(joinReq(9, group, "", nil)).(*kmsg.JoinGroupResponse)
	wantCode(e.t, "first join", first.ErrorCode, kerr.MemberIDRequired)
	member := first.MemberID
	ch := e.async(joinReq(9, group, member, nil))
	e.waitState(group, PreparingRebalance)
	e.clock.Advance(e.cfg.GroupInitialRebalanceDelay)
	j := <-ch
	join := j.(*kmsg.JoinGroupResponse)
	wantCode(e.t, "join", join.ErrorCode, nil)
	if join.Generation != 1 || join.LeaderID != member || len(join.Members) != 1 || deref(join.Protocol) != "range" {
		e.t.Fatalf("join: %+v", join)
	}
	sync := e.do(syncReqMsg(5, group, member, 1, map[string]string{member: assignment})).(*kmsg.SyncGroupResponse)
	wantCode(e.t, "sync", sync.ErrorCode, nil)
	if string(sync.MemberAssignment) != assignment {
		e.t.Fatalf("sync assignment %q", sync.MemberAssignment)
	}
	return member
}

func TestConsumerGroupLifecycle(t *testing.T) {
	e := newEnv(t)
	m := e.stableGroup("g1", "A")

	d := e.describe("g1")
	if d.State != "Stable" || d.ProtocolType != "consumer" || d.Protocol != "range" || len(d.Members) != 1 ||
		d.AuthorizedOperations != groupAuthorizedOperations {
		t.Fatalf("describe: %+v", d)
	}
	if dm := d.Members[0]; dm.MemberID != m || dm.ClientID != "client-1" || dm.ClientHost != "/10.0.0.7" ||
		string(dm.MemberAssignment) != "A" || string(dm.ProtocolMetadata) != string(subscription("t1")) {
		t.Fatalf("described member: %+v", dm)
	}
	hb := e.do(heartbeatReq(4, "g1", m, 1)).(*kmsg.HeartbeatResponse)
	wantCode(t, "heartbeat", hb.ErrorCode, nil)

	cr := e.do(commitReq(9, "g1", m, 1, 10, 20)).(*kmsg.OffsetCommitResponse)
	for _, p := range cr.Topics[0].Partitions {
		wantCode(t, "commit", p.ErrorCode, nil)
	}
	got := e.fetchOffsetsOf("g1", false)
	if got[0].Offset != 10 || got[1].Offset != 20 || got[2].Offset != -1 || got[0].LeaderEpoch != 5 || deref(got[0].Metadata) != "md" {
		t.Fatalf("fetched %+v", got)
	}

	list := func(states ...string) []string {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = 5
		req.StatesFilter = states
		resp := e.do(req).(*kmsg.ListGroupsResponse)
		wantCode(t, "list", resp.ErrorCode, nil)
		var ids []string
		for _, g := range resp.Groups {
			if g.GroupType != "classic" {
				t.Fatalf("group type %q", g.GroupType)
			}
			ids = append(ids, g.Group+"/"+g.GroupState)
		}
		return ids
	}
	if ids := list("stable"); len(ids) != 1 || ids[0] != "g1/Stable" {
		t.Fatalf("list stable: %v", ids)
	}
	if ids := list("Empty"); len(ids) != 0 {
		t.Fatalf("list empty: %v", ids)
	}

	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Version = 2
	del.Groups = []string{"g1"}
	wantCode(t, "delete non-empty", e.do(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.NonEmptyGroup)

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version = 5
	leave.Group = "g1"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = m
	leave.Members = append(leave.Members, lm)
	lr := e.do(leave).(*kmsg.LeaveGroupResponse)
	wantCode(t, "leave", lr.ErrorCode, nil)
	wantCode(t, "leave member", lr.Members[0].ErrorCode, nil)
	if d := e.describe("g1"); d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("after leave: %+v", d)
	}
	if got := e.fetchOffsetsOf("g1", false); got[0].Offset != 10 {
		t.Fatalf("offsets lost on leave: %+v", got)
	}

	wantCode(t, "delete", e.do(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, nil)
	if d := e.describe("g1"); d.State != "Dead" {
		t.Fatalf("after delete: %+v", d)
	}
	if got := e.fetchOffsetsOf("g1", false); got[0].Offset != -1 {
		t.Fatalf("offsets after delete: %+v", got)
	}
	if ids := list(); len(ids) != 0 {
		t.Fatalf("groups after delete: %v", ids)
	}
	wantCode(t, "delete again", e.do(del).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, kerr.GroupIDNotFound)

	// Deletion is durable.
	e.restart()
	if d := e.describe("g1"); d.State != "Dead" {
		t.Fatalf("after restart: %+v", d)
	}
}

func TestRestartRestoresGroupsAndOffsets(t *testing.T) {
	e := newEnv(t)
	m := e.stableGroup("g1", "A")
	e.do(commitReq(9, "g1", m, 1, 10, 20))
	standalone := commitReq(2, "s1", "", -1, 7)
	wantCode(t, "standalone commit", e.do(standalone).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, nil)

	e.restart()

	d := e.describe("g1")
	if d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != m || string(d.Members[0].MemberAssignment) != "A" {
		t.Fatalf("after restart: %+v", d)
	}
	if got := e.fetchOffsetsOf("g1", false); got[0].Offset != 10 || got[1].Offset != 20 {
		t.Fatalf("offsets after restart: %+v", got)
	}
	if got := e.fetchOffsetsOf("s1", false); got[0].Offset != 7 {
		t.Fatalf("standalone offsets after restart: %+v", got)
	}
	wantCode(t, "heartbeat after restart", e.do(heartbeatReq(4, "g1", m, 1)).(*kmsg.HeartbeatResponse).ErrorCode, nil)
	// The member's session restarted at load; without heartbeats it expires
	// and the group, left without members, becomes Empty in generation 2.
	e.clock.Advance(11 * time.Second)
	e.waitState("g1", Empty)
	e.restart()
	if d := e.describe("g1"); d.State != "Empty" {
		t.Fatalf("empty group after restart: %+v", d)
	}
	wantCode(t, "old member", e.do(heartbeatReq(4, "g1", m, 1)).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
}

func TestCommitAndFetchVersions(t *testing.T) {
	e := newEnv(t)
	for v := int16(0); v <= 9; v++ {
		req := commitReq(v, "sv", "", -1, int64(100+v), int64(200+v))
		if v >= 2 && v <= 4 {
			req.RetentionTimeMillis = -1
		}
		resp := e.do(req).(*kmsg.OffsetCommitResponse)
		for _, p := range resp.Topics[0].Partitions {
			wantCode(t, "commit", p.ErrorCode, nil)
		}
		for fv := int16(0); fv <= 7; fv++ {
			freq := kmsg.NewPtrOffsetFetchRequest()
			freq.Version = fv
			freq.Group = "sv"
			rt := kmsg.NewOffsetFetchRequestTopic()
			rt.Topic = "t1"
			rt.Partitions = []int32{0, 1}
			freq.Topics = append(freq.Topics, rt)
			fresp := e.do(freq).(*kmsg.OffsetFetchResponse)
			ps := fresp.Topics[0].Partitions
			if ps[0].Offset != int64(100+v) || ps[1].Offset != int64(200+v) {
				t.Fatalf("commit v%d fetch v%d: %+v", v, fv, ps)
			}
			if fv >= 5 && v >= 6 && ps[0].LeaderEpoch != 5 {
				t.Fatalf("commit v%d fetch v%d: leader epoch %d", v, fv, ps[0].LeaderEpoch)
			}
		}
	}
	// All partitions when topics are null (v2+).
	freq := kmsg.NewPtrOffsetFetchRequest()
	freq.Version = 2
	freq.Group = "sv"
	freq.Topics = nil
	fresp := e.do(freq).(*kmsg.OffsetFetchResponse)
	if len(fresp.Topics) != 1 || len(fresp.Topics[0].Partitions) != 2 {
		t.Fatalf("fetch all: %+v", fresp.Topics)
	}
}

func TestCommitErrors(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.OffsetMetadataMaxBytes = 4 })
	resp := e.do(commitReq(9, "nogroup", "m", 1, 5)).(*kmsg.OffsetCommitResponse)
	wantCode(t, "commit to unknown group with a generation", resp.Topics[0].Partitions[0].ErrorCode, kerr.IllegalGeneration)

	req := commitReq(9, "s", "", -1, 5, 6)
	req.Topics[0].Partitions[1].Metadata = kmsg.StringPtr("too long")
	nope := kmsg.NewOffsetCommitRequestTopic()
	nope.Topic = "nope"
	np := kmsg.NewOffsetCommitRequestTopicPartition()
	nope.Partitions = append(nope.Partitions, np)
	req.Topics = append(req.Topics, nope)
	bad := kmsg.NewOffsetCommitRequestTopicPartition()
	bad.Partition = 9
	req.Topics[0].Partitions = append(req.Topics[0].Partitions, bad)
	resp = e.do(req).(*kmsg.OffsetCommitResponse)
	ps := resp.Topics[0].Partitions
	wantCode(t, "good partition", ps[0].ErrorCode, nil)
	wantCode(t, "long metadata", ps[1].ErrorCode, kerr.OffsetMetadataTooLarge)
	wantCode(t, "missing partition", ps[2].ErrorCode, kerr.UnknownTopicOrPartition)
	wantCode(t, "unknown topic", resp.Topics[1].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	if got := e.fetchOffsetsOf("s", false); got[0].Offset != 5 || got[1].Offset != -1 {
		t.Fatalf("fetched %+v", got)
	}

	m := e.stableGroup("g", "A")
	resp = e.do(commitReq(9, "g", "", -1, 1)).(*kmsg.OffsetCommitResponse)
	wantCode(t, "standalone commit to a group with members", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownMemberID)
	resp = e.do(commitReq(9, "g", m, 7, 1)).(*kmsg.OffsetCommitResponse)
	wantCode(t, "stale generation", resp.Topics[0].Partitions[0].ErrorCode, kerr.IllegalGeneration)
	resp = e.do(commitReq(9, "g", "other", 1, 1)).(*kmsg.OffsetCommitResponse)
	wantCode(t, "unknown member", resp.Topics[0].Partitions[0].ErrorCode, kerr.UnknownMemberID)
}

func TestGroupAPIErrors(t *testing.T) {
	e := newEnv(t)
	j := joinReq(5, "", "", nil)
	wantCode(t, "empty group id", e.do(j).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidGroupID)
	j = joinReq(5, "g", "", nil)
	j.SessionTimeoutMillis = 1000
	wantCode(t, "short session", e.do(j).(*kmsg.JoinGroupResponse).ErrorCode, kerr.InvalidSessionTimeout)
	j = joinReq(5, "g", "ghost", nil)
	jr := e.do(j).(*kmsg.JoinGroupResponse)
	wantCode(t, "unknown member joins an unknown group", jr.ErrorCode, kerr.UnknownMemberID)
	if jr.MemberID != "ghost" || jr.Generation != -1 {
		t.Fatalf("join error response %+v", jr)
	}
	wantCode(t, "heartbeat unknown group", e.do(heartbeatReq(4, "g", "ghost", 1)).(*kmsg.HeartbeatResponse).ErrorCode, kerr.UnknownMemberID)
	wantCode(t, "sync unknown group", e.do(syncReqMsg(3, "g", "ghost", 1, nil)).(*kmsg.SyncGroupResponse).ErrorCode, kerr.UnknownMemberID)

	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version = 0
	leave.Group = "g"
	leave.MemberID = "ghost"
	wantCode(t, "leave v0", e.do(leave).(*kmsg.LeaveGroupResponse).ErrorCode, kerr.UnknownMemberID)
	leave.Version = 3
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = "ghost"
	leave.Members = []kmsg.LeaveGroupRequestMember{lm}
	lr := e.do(leave).(*kmsg.LeaveGroupResponse)
	wantCode(t, "leave v3", lr.ErrorCode, nil)
	wantCode(t, "leave v3 member", lr.Members[0].ErrorCode, kerr.UnknownMemberID)

	if d := e.describe("g"); d.State != "Dead" || d.ErrorCode != 0 {
		t.Fatalf("unknown group described as %+v", d)
	}
	// No group was left behind by the failed requests.
	req := kmsg.NewPtrListGroupsRequest()
	if gs := e.do(req).(*kmsg.ListGroupsResponse).Groups; len(gs) != 0 {
		t.Fatalf("groups %+v", gs)
	}

	// JoinGroup v3: no member id handshake.
	ch := e.async(joinReq(3, "old", "", nil))
	e.waitState("old", PreparingRebalance)
	e.clock.Advance(3 * time.Second)
	r := (<-ch).(*kmsg.JoinGroupResponse)
	wantCode(t, "join v3", r.ErrorCode, nil)
	if r.Generation != 1 || r.LeaderID != r.MemberID {
		t.Fatalf("join v3: %+v", r)
	}
}

func TestTxnOffsetCommit(t *testing.T) {
	e := newEnv(t)
	p := e.c.PartitionFor("tg")
	txnCommit := func(pid int64, epoch int16, offset int64) *kerr.Error {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version = 3
		req.TransactionalID = "tx"
		req.Group = "tg"
		req.ProducerID, req.ProducerEpoch = pid, epoch
		req.Generation = -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "t1"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset = offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := e.do(req).(*kmsg.TxnOffsetCommitResponse)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			return kerr.ErrorForCode(code).(*kerr.Error)
		}
		return nil
	}
	complete := func(pid int64, epoch int16, commit bool) {
		t.Helper()
		if err := e.c.CompleteTransaction(context.Background(), p, pid, epoch, 1, commit); err != nil {
			t.Fatal(err)
		}
	}
	offset0 := func(stable bool) kmsg.OffsetFetchResponseGroupTopicPartition {
		return e.fetchOffsetsOf("tg", stable)[0]
	}
	if err := txnCommit(100, 0, 50); err != nil {
		t.Fatal(err)
	}
	if o := offset0(false); o.Offset != -1 || o.ErrorCode != 0 {
		t.Fatalf("pending offset visible: %+v", o)
	}
	wantCode(t, "require stable", offset0(true).ErrorCode, kerr.UnstableOffsetCommit)
	complete(100, 0, true)
	if o := offset0(true); o.Offset != 50 {
		t.Fatalf("after commit marker: %+v", o)
	}
	// Aborted.
	if err := txnCommit(100, 0, 60); err != nil {
		t.Fatal(err)
	}
	complete(100, 0, false)
	if o := offset0(true); o.Offset != 50 {
		t.Fatalf("after abort marker: %+v", o)
	}
	// A plain commit written after the transactional one wins.
	if err := txnCommit(100, 0, 70); err != nil {
		t.Fatal(err)
	}
	e.do(commitReq(9, "tg", "", -1, 80))
	complete(100, 0, true)
	if o := offset0(true); o.Offset != 80 {
		t.Fatalf("plain commit after txn commit: %+v", o)
	}
	// Left pending across a restart, then committed.
	if err := txnCommit(100, 1, 90); err != nil {
		t.Fatal(err)
	}
	e.restart()
	wantCode(t, "pending after restart", offset0(true).ErrorCode, kerr.UnstableOffsetCommit)
	complete(100, 1, true)
	if o := offset0(true); o.Offset != 90 {
		t.Fatalf("after restart and commit: %+v", o)
	}
	// A fenced producer epoch is refused by the log.
	if err := txnCommit(100, 0, 95); err != kerr.InvalidProducerEpoch && err != kerr.ProducerFenced {
		t.Fatalf("commit with a fenced epoch: %v", err)
	}
	e.restart()
	if o := offset0(true); o.Offset != 90 {
		t.Fatalf("after second restart: %+v", o)
	}
}

func TestNotCoordinatorAndLoading(t *testing.T) {
	e := newEnv(t)
	e.c.Close()
	e.host.Close()
	e.start(false)
	p := e.c.PartitionFor("g")
	wantCode(t, "join, not led", e.do(joinReq(9, "g", "", nil)).(*kmsg.JoinGroupResponse).ErrorCode, kerr.NotCoordinator)
	wantCode(t, "heartbeat, not led", e.do(heartbeatReq(4, "g", "m", 1)).(*kmsg.HeartbeatResponse).ErrorCode, kerr.NotCoordinator)
	cr := e.do(commitReq(9, "g", "", -1, 1)).(*kmsg.OffsetCommitResponse)
	wantCode(t, "commit, not led", cr.Topics[0].Partitions[0].ErrorCode, kerr.NotCoordinator)

	l, err := e.host.Log(OffsetsTopic, p)
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	l.HoldReads(gate)
	e.host.Lead(OffsetsTopic, p, true, 1)
	waitFor(t, "loading", func() bool {
		for _, ps := range e.c.rt.Partitions() {
			if ps.Partition == p {
				return true
			}
		}
		return false
	})
	wantCode(t, "join, loading", e.do(joinReq(9, "g", "", nil)).(*kmsg.JoinGroupResponse).ErrorCode, kerr.CoordinatorLoadInProgress)
	wantCode(t, "heartbeat, loading", e.do(heartbeatReq(4, "g", "m", 1)).(*kmsg.HeartbeatResponse).ErrorCode, nil)
	freq := kmsg.NewPtrOffsetFetchRequest()
	freq.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = "g"
	freq.Groups = append(freq.Groups, rg)
	wantCode(t, "fetch, loading", e.do(freq).(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode, kerr.CoordinatorLoadInProgress)
	wantCode(t, "list, loading", e.do(kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse).ErrorCode, kerr.CoordinatorLoadInProgress)
	close(gate)
	waitFor(t, "loaded", func() bool {
		for _, ps := range e.c.rt.Partitions() {
			if ps.Partition == p && ps.State == coordinator.PartitionActive {
				return true
			}
		}
		return false
	})
	wantCode(t, "join, loaded", e.do(joinReq(9, "g", "", nil)).(*kmsg.JoinGroupResponse).ErrorCode, kerr.MemberIDRequired)
}

func TestUnloadAnswersWaitingJoin(t *testing.T) {
	e := newEnv(t)
	first := e.do(joinReq(9, "g", "", nil)).(*kmsg.JoinGroupResponse)
	ch := e.async(joinReq(9, "g", first.MemberID, nil))
	e.waitState("g", PreparingRebalance)
	e.host.Lead(OffsetsTopic, e.c.PartitionFor("g"), false, 1)
	r := (<-ch).(*kmsg.JoinGroupResponse)
	wantCode(t, "join held when the partition moved", r.ErrorCode, kerr.NotCoordinator)
	waitFor(t, "waiters released", func() bool { return e.c.waiters.len() == 0 })
}

func TestJoinContextCancelled(t *testing.T) {
	e := newEnv(t)
	first := e.do(joinReq(9, "g", "", nil)).(*kmsg.JoinGroupResponse)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.doErr(ctx, joinReq(9, "g", first.MemberID, nil))
		done <- err
	}()
	e.waitState("g", PreparingRebalance)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled join: %v", err)
	}
	// The rebalance still completes; the lost answer is dropped.
	e.clock.Advance(3 * time.Second)
	e.waitState("g", CompletingRebalance)
	waitFor(t, "waiters released", func() bool { return e.c.waiters.len() == 0 })
}

func TestFindCoordinator(t *testing.T) {
	e := newEnv(t)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 0
	req.CoordinatorKey = "g1"
	resp := e.do(req).(*kmsg.FindCoordinatorResponse)
	if resp.ErrorCode != 0 || resp.NodeID != 1 || resp.Host != "localhost" || resp.Port != 9092 {
		t.Fatalf("v0: %+v", resp)
	}
	req = kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 4
	req.CoordinatorKeys = []string{"a", "b"}
	resp = e.do(req).(*kmsg.FindCoordinatorResponse)
	if len(resp.Coordinators) != 2 || resp.Coordinators[0].Key != "a" || resp.Coordinators[1].NodeID != 1 {
		t.Fatalf("v4: %+v", resp)
	}
	req.CoordinatorType = 1
	resp = e.do(req).(*kmsg.FindCoordinatorResponse)
	wantCode(t, "transaction key before the txn coordinator exists", resp.Coordinators[0].ErrorCode, kerr.CoordinatorNotAvailable)
	e.c.SetTransactionResolver(fixedResolver{topic: "t2", partition: 1})
	resp = e.do(req).(*kmsg.FindCoordinatorResponse)
	if c := resp.Coordinators[0]; c.ErrorCode != 0 || c.NodeID != 1 {
		t.Fatalf("transaction key with a resolver: %+v", c)
	}
	req.CoordinatorType = 7
	resp = e.do(req).(*kmsg.FindCoordinatorResponse)
	wantCode(t, "bad key type", resp.Coordinators[0].ErrorCode, kerr.InvalidRequest)
	if len(e.host.Topics()) != 1 || e.host.Topics()[0].Name != OffsetsTopic || e.host.Topics()[0].Configs["cleanup.policy"] != "compact" {
		t.Fatalf("topic ensured: %+v", e.host.Topics())
	}

	// Without the topic in the metadata yet: created, not available.
	e.meta.mu.Lock()
	e.meta.img = testImage(t, map[string]int32{"t1": 1})
	e.meta.mu.Unlock()
	req = kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 3
	req.CoordinatorKey = "g1"
	resp = e.do(req).(*kmsg.FindCoordinatorResponse)
	wantCode(t, "no offsets topic", resp.ErrorCode, kerr.CoordinatorNotAvailable)
	if resp.NodeID != -1 || resp.ErrorMessage == nil {
		t.Fatalf("unavailable coordinator: %+v", resp)
	}
}

type fixedResolver struct {
	topic     string
	partition int32
}

func (r fixedResolver) Resolve(context.Context, string) (string, int32, error) {
	return r.topic, r.partition, nil
}

func TestOffsetExpiry(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.OffsetsRetention = time.Minute
		c.OffsetsRetentionCheckInterval = 10 * time.Second
	})
	e.do(commitReq(9, "standalone", "", -1, 1, 2))
	m := e.stableGroup("consumers", "A")
	e.do(commitReq(9, "consumers", m, 1, 3))
	// An offset of a topic the members do not subscribe to.
	other := commitReq(9, "consumers", m, 1, 4)
	other.Topics[0].Topic = "t2"
	e.do(other)

	beat := func(d time.Duration) {
		t.Helper()
		for ; d > 0; d -= 5 * time.Second {
			e.clock.Advance(5 * time.Second)
			wantCode(t, "heartbeat", e.do(heartbeatReq(4, "consumers", m, 1)).(*kmsg.HeartbeatResponse).ErrorCode, nil)
		}
	}
	beat(50 * time.Second)
	if got := e.fetchOffsetsOf("standalone", false); got[0].Offset != 1 {
		t.Fatalf("expired early: %+v", got)
	}
	beat(20 * time.Second)
	waitFor(t, "standalone group expired", func() bool { return e.describe("standalone").State == "Dead" })
	// The stable group keeps t1 (subscribed) and loses t2.
	if got := e.fetchOffsetsOf("consumers", false); got[0].Offset != 3 {
		t.Fatalf("subscribed offset expired: %+v", got)
	}
	waitFor(t, "unsubscribed offset expired", func() bool {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 8
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = "consumers"
		rg.Topics = nil
		req.Groups = append(req.Groups, rg)
		g := e.do(req).(*kmsg.OffsetFetchResponse).Groups[0]
		return len(g.Topics) == 1 && g.Topics[0].Topic == "t1"
	})

	// Once Empty, the group's offsets expire a retention after it became
	// Empty, then the group goes.
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = "consumers"
	leave.MemberID = m
	e.do(leave)
	e.clock.Advance(50 * time.Second)
	if got := e.fetchOffsetsOf("consumers", false); got[0].Offset != 3 {
		t.Fatalf("expired before the retention since Empty: %+v", got)
	}
	e.clock.Advance(20 * time.Second)
	waitFor(t, "empty group expired", func() bool { return e.describe("consumers").State == "Dead" })
	e.restart()
	if d := e.describe("consumers"); d.State != "Dead" {
		t.Fatalf("expired group back after restart: %+v", d)
	}
	if got := e.fetchOffsetsOf("standalone", false); got[0].Offset != -1 {
		t.Fatalf("expired offsets back after restart: %+v", got)
	}
}

func TestOffsetDelete(t *testing.T) {
	e := newEnv(t)
	m := e.stableGroup("g", "A")
	e.do(commitReq(9, "g", m, 1, 3))
	other := commitReq(9, "g", m, 1, 4)
	other.Topics[0].Topic = "t2"
	e.do(other)
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = "g"
	for _, tn := range []string{"t1", "t2", "nope"} {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = tn
		rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
	}
	resp := e.do(req).(*kmsg.OffsetDeleteResponse)
	wantCode(t, "offset delete", resp.ErrorCode, nil)
	wantCode(t, "subscribed topic", resp.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)
	wantCode(t, "other topic", resp.Topics[1].Partitions[0].ErrorCode, nil)
	wantCode(t, "unknown topic", resp.Topics[2].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
	if got := e.fetchOffsetsOf("g", false); got[0].Offset != 3 {
		t.Fatalf("subscribed offset deleted: %+v", got)
	}
	req.Group = "nobody"
	wantCode(t, "unknown group", e.do(req).(*kmsg.OffsetDeleteResponse).ErrorCode, kerr.GroupIDNotFound)

	// A standalone group's last offset deleted: the group goes.
	e.do(commitReq(9, "s", "", -1, 9))
	req.Group = "s"
	req.Topics = req.Topics[:1]
	wantCode(t, "standalone", e.do(req).(*kmsg.OffsetDeleteResponse).Topics[0].Partitions[0].ErrorCode, nil)
	if d := e.describe("s"); d.State != "Dead" {
		t.Fatalf("group left after its last offset: %+v", d)
	}
}

func TestStaticMemberRestart(t *testing.T) {
	e := newEnv(t)
	inst := "instance-1"
	ch := e.async(joinReq(9, "g", "", &inst))
	e.waitState("g", PreparingRebalance)
	e.clock.Advance(3 * time.Second)
	j := (<-ch).(*kmsg.JoinGroupResponse)
	wantCode(t, "static join", j.ErrorCode, nil)
	old := j.MemberID
	if len(old) < len(inst) || old[:len(inst)] != inst {
		t.Fatalf("static member id %q", old)
	}
	s := syncReqMsg(5, "g", old, 1, map[string]string{old: "A"})
	s.InstanceID = &inst
	e.do(s)
	// The client restarts and joins with its instance id and no member id.
	j2 := e.do(joinReq(9, "g", "", &inst)).(*kmsg.JoinGroupResponse)
	wantCode(t, "static rejoin", j2.ErrorCode, nil)
	if j2.MemberID == old || !j2.SkipAssignment || j2.LeaderID != j2.MemberID || j2.Generation != 1 {
		t.Fatalf("static rejoin: %+v", j2)
	}
	hb := heartbeatReq(4, "g", old, 1)
	hb.InstanceID = &inst
	wantCode(t, "old member id", e.do(hb).(*kmsg.HeartbeatResponse).ErrorCode, kerr.FencedInstanceID)
	// The new id is persisted.
	e.restart()
	d := e.describe("g")
	if d.State != "Stable" || d.Members[0].MemberID != j2.MemberID || deref(d.Members[0].InstanceID) != inst {
		t.Fatalf("after restart: %+v", d)
	}
}
