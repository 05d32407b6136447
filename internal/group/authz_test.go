package group

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth/authtest"
)

// offsetsByTopic is an OffsetFetch v8 of one group: the group's error and
// each partition's offset and error by "topic/partition".
func (e *env) offsetsByTopic(group string, topics ...string) (int16, map[string][2]int64) {
	e.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	if topics != nil {
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
	}
	for _, topic := range topics {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		rg.Topics = append(rg.Topics, rt)
	}
	req.Groups = append(req.Groups, rg)
	g := e.do(req).(*kmsg.OffsetFetchResponse).Groups[0]
	out := map[string][2]int64{}
	for _, t := range g.Topics {
		for _, p := range t.Partitions {
			out[t.Topic+"/"+string(rune('0'+p.Partition))] = [2]int64{p.Offset, int64(p.ErrorCode)}
		}
	}
	return g.ErrorCode, out
}

// commitTo commits offset to partition 0 of each topic as member of
// generation gen ("" and -1: a standalone commit) and returns each topic's
// error.
func (e *env) commitTo(group, member string, gen int32, offset int64, topics ...string) map[string]int16 {
	e.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.MemberID, req.Generation = 9, group, member, gen
	for _, topic := range topics {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = offset
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	out := map[string]int16{}
	for _, rt := range e.do(req).(*kmsg.OffsetCommitResponse).Topics {
		out[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	return out
}

func (e *env) listGroups() []string {
	e.t.Helper()
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	var out []string
	for _, g := range e.do(req).(*kmsg.ListGroupsResponse).Groups {
		out = append(out, g.Group)
	}
	slices.Sort(out)
	return out
}

// TestGroupAPIsRefuseWithoutRights: a principal without rights gets
// GROUP_AUTHORIZATION_FAILED (TRANSACTIONAL_ID_ for a transaction key or a
// TxnOffsetCommit) from every group API, ListGroups lists nothing, and
// nothing changes: no offset committed or deleted, no group deleted, the
// member keeps its place.
func TestGroupAPIsRefuseWithoutRights(t *testing.T) {
	e := newEnv(t)
	member := e.stableGroup("g", "A")
	e.commitTo("g", member, 1, 7, "t1")
	e.authz = authtest.NewGrants()
	gaf := kerr.GroupAuthorizationFailed

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.Version, fc.CoordinatorKeys = 4, []string{"g"}
	wantCode(t, "FindCoordinator group", e.do(fc).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode, gaf)
	fc.CoordinatorType = keyTypeTransaction
	wantCode(t, "FindCoordinator transaction", e.do(fc).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	fc0 := kmsg.NewPtrFindCoordinatorRequest()
	fc0.CoordinatorKey = "g"
	if r := e.do(fc0).(*kmsg.FindCoordinatorResponse); r.ErrorCode != gaf.Code || r.NodeID != -1 {
		t.Fatalf("FindCoordinator v0: %+v", r)
	}

	join := e.do(joinReq(9, "g", member, nil)).(*kmsg.JoinGroupResponse)
	if join.ErrorCode != gaf.Code || join.Generation != -1 || join.MemberID != "" || len(join.Members) != 0 {
		t.Fatalf("JoinGroup: %+v", join)
	}
	wantCode(t, "SyncGroup", e.do(syncReqMsg(5, "g", member, 1, nil)).(*kmsg.SyncGroupResponse).ErrorCode, gaf)
	wantCode(t, "Heartbeat", e.do(heartbeatReq(4, "g", member, 1)).(*kmsg.HeartbeatResponse).ErrorCode, gaf)
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 5, "g"
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = member
	leave.Members = append(leave.Members, lm)
	wantCode(t, "LeaveGroup", e.do(leave).(*kmsg.LeaveGroupResponse).ErrorCode, gaf)

	if got := e.commitTo("g", member, 1, 99, "t1", "t2"); got["t1"] != gaf.Code || got["t2"] != gaf.Code {
		t.Fatalf("OffsetCommit: %v", got)
	}
	code, _ := e.offsetsByTopic("g", "t1")
	wantCode(t, "OffsetFetch v8", code, gaf)
	v1 := kmsg.NewPtrOffsetFetchRequest()
	v1.Version, v1.Group = 1, "g"
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "t1", []int32{0}
	v1.Topics = append(v1.Topics, ft)
	r1 := e.do(v1).(*kmsg.OffsetFetchResponse)
	if p := r1.Topics[0].Partitions[0]; p.ErrorCode != gaf.Code || p.Offset != -1 {
		t.Fatalf("OffsetFetch v1: %+v", p)
	}
	v1.Version = 5
	wantCode(t, "OffsetFetch v5", e.do(v1).(*kmsg.OffsetFetchResponse).ErrorCode, gaf)

	d := e.describe("g")
	if d.ErrorCode != gaf.Code || d.State != "" || len(d.Members) != 0 {
		t.Fatalf("DescribeGroups: %+v", d)
	}
	if got := e.listGroups(); len(got) != 0 {
		t.Fatalf("ListGroups: %v", got)
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Version, dg.Groups = 2, []string{"g"}
	wantCode(t, "DeleteGroups", e.do(dg).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, gaf)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	odt := kmsg.NewOffsetDeleteRequestTopic()
	odt.Topic = "t1"
	odt.Partitions = append(odt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
	od.Topics = append(od.Topics, odt)
	if r := e.do(od).(*kmsg.OffsetDeleteResponse); r.ErrorCode != gaf.Code || len(r.Topics) != 0 {
		t.Fatalf("OffsetDelete: %+v", r)
	}
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.Version, tc.TransactionalID, tc.Group, tc.ProducerID, tc.Generation = 3, "tx", "g", 5, -1
	tct := kmsg.NewTxnOffsetCommitRequestTopic()
	tct.Topic = "t1"
	tct.Partitions = append(tct.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
	tc.Topics = append(tc.Topics, tct)
	wantCode(t, "TxnOffsetCommit", e.do(tc).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, kerr.TransactionalIDAuthorizationFailed)
	e.authz = authtest.NewGrants("WRITE TRANSACTIONAL_ID tx")
	wantCode(t, "TxnOffsetCommit with the id only", e.do(tc).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, gaf)

	// Nothing changed.
	e.authz = nil
	if d := e.describe("g"); d.State != Stable.String() || len(d.Members) != 1 {
		t.Fatalf("group after refused requests: %+v", d)
	}
	if _, got := e.offsetsByTopic("g", "t1"); got["t1/0"][0] != 7 {
		t.Fatalf("offset after refused commit and delete: %v", got)
	}
}

// TestGroupAPIsWithRights: with READ on the group a member heartbeats and
// commits the topics it may READ (TOPIC_AUTHORIZATION_FAILED for the
// others, left unchanged); OffsetFetch answers the describable topics,
// refuses the others and leaves them out of a fetch of all; ListGroups
// lists the describable groups, or all with DESCRIBE on the cluster;
// OffsetDelete needs DELETE on the group and READ on each topic.
func TestGroupAPIsWithRights(t *testing.T) {
	e := newEnv(t)
	member := e.stableGroup("g", "A")
	e.commitTo("g", member, 1, 5, "t1", "t2")
	e.commitTo("other", "", -1, 1, "t1")
	rights := authtest.NewGrants("READ GROUP g", "DESCRIBE GROUP g", "READ TOPIC t1", "DESCRIBE TOPIC t1")
	e.authz = rights
	taf := int64(kerr.TopicAuthorizationFailed.Code)

	wantCode(t, "Heartbeat", e.do(heartbeatReq(4, "g", member, 1)).(*kmsg.HeartbeatResponse).ErrorCode, nil)
	if got := e.commitTo("g", member, 1, 9, "t1", "t2"); got["t1"] != 0 || int64(got["t2"]) != taf {
		t.Fatalf("OffsetCommit: %v", got)
	}
	code, got := e.offsetsByTopic("g", "t2", "t1")
	if code != 0 || got["t1/0"] != [2]int64{9, 0} || got["t2/0"] != [2]int64{-1, taf} {
		t.Fatalf("OffsetFetch of t1 and t2: %v", got)
	}
	code, got = e.offsetsByTopic("g")
	if _, ok := got["t2/0"]; code != 0 || ok || got["t1/0"] != [2]int64{9, 0} {
		t.Fatalf("OffsetFetch of all topics: %v", got)
	}
	if got := e.listGroups(); !slices.Equal(got, []string{"g"}) {
		t.Fatalf("ListGroups with DESCRIBE on g: %v", got)
	}
	rights.Allow("DESCRIBE CLUSTER kafka-cluster")
	if got := e.listGroups(); !slices.Equal(got, []string{"g", "other"}) {
		t.Fatalf("ListGroups with DESCRIBE on the cluster: %v", got)
	}

	rights.Allow("DELETE GROUP g")
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	for _, topic := range []string{"t2", "t1"} {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		rt.Partitions = append(rt.Partitions, kmsg.NewOffsetDeleteRequestTopicPartition())
		od.Topics = append(od.Topics, rt)
	}
	r := e.do(od).(*kmsg.OffsetDeleteResponse)
	wantCode(t, "OffsetDelete", r.ErrorCode, nil)
	wantCode(t, "OffsetDelete of t2 without READ", r.Topics[0].Partitions[0].ErrorCode, kerr.TopicAuthorizationFailed)
	// t1 is subscribed by the member: refused for that, not for rights.
	wantCode(t, "OffsetDelete of t1", r.Topics[1].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)
	e.authz = nil
	if _, got := e.offsetsByTopic("g", "t2"); got["t2/0"][0] != 5 {
		t.Fatalf("t2's offset after refused commit and delete: %v", got)
	}
}
