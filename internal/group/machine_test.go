package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestMachine drives groups through sequences of events, one table row per
// scenario; time moves only by explicit advance steps that fire timers.
func TestMachine(t *testing.T) {
	cases := []struct {
		name  string
		cfg   func(*MachineConfig)
		steps [][]step
	}{
		{
			name: "v4 member id handshake, initial delay, sync, heartbeat",
			steps: [][]step{seq(
				join(1, "", requireKnown),
				wantJoinError(1, "m1", kerr.MemberIDRequired),
				wantState(Empty, 0),
				join(2, "m1", requireKnown),
				wantPending(2),
				wantState(PreparingRebalance, 0),
				advance(2999*time.Millisecond),
				wantPending(2),
				advance(time.Millisecond),
				wantJoin(2, "m1", 1, "m1", "m1"),
				wantState(CompletingRebalance, 1),
				wantProtocol("range"),
				syncReq(3, "m1", 1, map[string][]byte{"m1": []byte("A")}),
				wantSync(3, "A"),
				wantState(Stable, 1),
				wantStores(1),
				heartbeat(4, "m1", 1),
				wantErr(4, nil),
			)},
		},
		{
			name: "members arriving during the initial delay extend it, up to the rebalance timeout",
			steps: [][]step{seq(
				join(1, "", rebalanceTimeout(7*time.Second)),
				advance(2*time.Second),
				join(2, ""),
				advance(time.Second), // first delay over, a member arrived: wait another 3s
				wantPending(1),
				join(3, ""),
				advance(3*time.Second), // second step; remaining 4s-3s=1s left
				wantPending(1),
				advance(time.Second),
				wantJoin(1, "m1", 1, "m1", "m1", "m2", "m3"),
				wantJoin(2, "m2", 1, "m1"),
				wantJoin(3, "m3", 1, "m1"),
			)},
		},
		{
			name: "new member in a stable group: rebalance completes when all rejoined",
			steps: [][]step{stable(10, 2), seq(
				join(1, ""),
				wantState(PreparingRebalance, 1),
				wantPending(1),
				heartbeat(2, "m10", 1),
				wantErr(2, kerr.RebalanceInProgress),
				join(3, "m10"),
				wantPending(3),
				join(4, "m11"),
				wantJoin(4, "m11", 2, "m10"),
				wantJoin(3, "m10", 2, "m10", "m10", "m11", "m1"),
				wantJoin(1, "m1", 2, "m10"),
				wantState(CompletingRebalance, 2),
				// Members that already synced in generation 1 must sync again.
				syncReq(5, "m11", 2, nil),
				wantPending(5),
				syncReq(6, "m1", 2, nil),
				syncReq(7, "m10", 2, map[string][]byte{"m10": []byte("x"), "m11": []byte("y"), "m1": []byte("z")}),
				wantSync(5, "y"), wantSync(6, "z"), wantSync(7, "x"),
				wantState(Stable, 2),
			)},
		},
		{
			name: "dynamic member that does not rejoin is dropped at the rebalance timeout",
			steps: [][]step{stable(10, 2), seq(
				join(1, "m10"),
				wantState(PreparingRebalance, 1),
				heartbeat(2, "m11", 1), // m11 keeps its session but never rejoins
				advance(9*time.Second),
				heartbeat(3, "m11", 1),
				advance(9*time.Second),
				heartbeat(4, "m11", 1),
				advance(9*time.Second),
				heartbeat(5, "m11", 1),
				advance(9*time.Second),
				heartbeat(6, "m11", 1),
				advance(9*time.Second),
				heartbeat(7, "m11", 1),
				advance(9*time.Second),
				heartbeat(9, "m11", 1),
				advance(5*time.Second),
				wantPending(1),
				advance(time.Second), // 60s after the rebalance started; m10 did not heartbeat
				wantJoin(1, "m10", 2, "m10", "m10"),
				wantMembers("m10"),
				heartbeat(8, "m11", 2),
				wantErr(8, kerr.UnknownMemberID),
			)},
		},
		{
			name: "session expiry removes a silent member and rebalances",
			steps: [][]step{stable(10, 2), seq(
				advance(5*time.Second),
				heartbeat(1, "m10", 1),
				advance(5*time.Second), // m11's 10s session from its sync runs out
				wantMembers("m10"),
				wantState(PreparingRebalance, 1),
				heartbeat(2, "m10", 1),
				wantErr(2, kerr.RebalanceInProgress),
				join(3, "m10"),
				wantJoin(3, "m10", 2, "m10", "m10"),
			)},
		},
		{
			name: "a member waiting for its assignment does not expire",
			steps: [][]step{stable(10, 2), seq(
				join(1, "m10"), join(2, "m11"),
				wantState(CompletingRebalance, 2),
				syncReq(3, "m11", 2, nil),
				advance(9*time.Second),
				heartbeat(4, "m10", 2),
				advance(9*time.Second),
				heartbeat(5, "m10", 2),
				advance(9*time.Second),
				wantPending(3),
				syncReq(6, "m10", 2, map[string][]byte{"m11": []byte("late")}),
				wantSync(3, "late"),
				wantMembers("m10", "m11"),
			)},
		},
		{
			name: "a new member waiting too long in a rebalance expires",
			cfg:  func(c *MachineConfig) { c.NewMemberJoinTimeout = 20 * time.Second },
			steps: [][]step{seq(
				join(1, "", static("s1"), rebalanceTimeout(60*time.Second)),
				advance(3*time.Second),
				wantJoin(1, "m1", 1, "m1", "m1"),
				syncInst(2, "m1", "s1", 1),
				heartbeatInst(3, "m1", "s1", 1),
				join(4, "", rebalanceTimeout(60*time.Second)), // new member at 3s; s1 never rejoins
				advance(9*time.Second),
				heartbeatInst(5, "m1", "s1", 1),
				advance(9*time.Second),
				heartbeatInst(6, "m1", "s1", 1),
				advance(time.Second),
				wantPending(4),
				advance(time.Second), // 20s after it joined
				wantJoinError(4, "", kerr.UnknownMemberID),
				wantMembers("m1"),
			)},
		},
		{
			name: "leaving: a stable group rebalances, the last leaver empties it",
			steps: [][]step{stable(10, 2), seq(
				leave(1, LeavingMember{MemberID: "m11"}),
				wantLeave(1, nil),
				wantState(PreparingRebalance, 1),
				wantStores(1),
				leave(2, LeavingMember{MemberID: "m10"}),
				wantLeave(2, nil),
				wantState(Empty, 2),
				wantStores(2),
				wantMembers(),
				heartbeat(3, "m10", 2),
				wantErr(3, kerr.UnknownMemberID),
			)},
		},
		{
			name: "a leave completes the rebalance the leaver was holding up",
			steps: [][]step{stable(10, 2), seq(
				join(1, "m10"),
				wantPending(1),
				leave(2, LeavingMember{MemberID: "m11"}),
				wantJoin(1, "m10", 2, "m10", "m10"),
			)},
		},
		{
			name: "batched leave by member and instance id, unknown and fenced members",
			steps: [][]step{seq(
				join(1, "", static("s1")),
				join(2, "", static("s2")),
				advance(6*time.Second),
				leave(3,
					LeavingMember{InstanceID: "s1"},
					LeavingMember{MemberID: "m9"},
					LeavingMember{MemberID: "m1", InstanceID: "s2"},
					LeavingMember{InstanceID: "nope"},
				),
				wantLeave(3, nil, kerr.UnknownMemberID, kerr.FencedInstanceID, kerr.UnknownMemberID),
				wantMembers("m2"),
				wantLeader("m2"),
			)},
		},
		{
			name: "static member restart in a stable group keeps the assignment, fences the old id (v9 leader skips assignment)",
			steps: [][]step{seq(
				join(1, "", static("s1")),
				join(2, "", static("s2")),
				advance(6*time.Second),
				syncInst(3, "m2", "s2", 1),
				syncReq(4, "m1", 1, map[string][]byte{"m1": []byte("A1"), "m2": []byte("A2")}),
				wantState(Stable, 1),
				wantStores(1),
				join(5, "", static("s1"), skipAssignment),
				wantStores(2),
				wantState(Stable, 1),
				func(r *runner) {
					rep := r.reply(5)
					if rep.Err != nil || rep.Join.MemberID != "m5" || rep.Join.Leader != "m5" || !rep.Join.SkipAssignment || len(rep.Join.Members) != 2 {
						r.t.Fatalf("static rejoin: %+v %+v", rep, rep.Join)
					}
				},
				wantMembers("m5", "m2"),
				heartbeatInst(6, "m1", "s1", 1),
				wantErr(6, kerr.FencedInstanceID),
				syncInst(7, "m5", "s1", 1),
				wantSync(7, "A1"),
			)},
		},
		{
			name: "static member restart before v9: the answer names the previous leader",
			steps: [][]step{seq(
				join(1, "", static("s1")),
				advance(3*time.Second),
				syncReq(2, "m1", 1, map[string][]byte{"m1": []byte("A1")}),
				join(3, "", static("s1")),
				func(r *runner) {
					rep := r.reply(3)
					if rep.Err != nil || rep.Join.MemberID != "m3" || rep.Join.Leader != "m1" || rep.Join.SkipAssignment || len(rep.Join.Members) != 0 {
						r.t.Fatalf("static rejoin: %+v %+v", rep, rep.Join)
					}
				},
				wantLeader("m3"),
			)},
		},
		{
			name: "static member restart whose store fails keeps the old member",
			steps: [][]step{seq(
				join(1, "", static("s1")),
				advance(3*time.Second),
				syncReq(2, "m1", 1, map[string][]byte{"m1": []byte("A1")}),
				failNextStore(kerr.CoordinatorNotAvailable),
				join(3, "", static("s1")),
				wantJoinError(3, "", kerr.CoordinatorNotAvailable),
				wantMembers("m1"),
				heartbeatInst(4, "m1", "s1", 1),
				wantErr(4, nil),
			)},
		},
		{
			name: "static member restart with different protocols rebalances",
			steps: [][]step{seq(
				join(1, "", static("s1")),
				advance(3*time.Second),
				syncReq(2, "m1", 1, map[string][]byte{"m1": []byte("A1")}),
				join(3, "", static("s1"), protocols(Protocol{Name: "roundrobin", Metadata: subscription("t1")})),
				// The only member rejoined: the rebalance completes at once.
				wantState(CompletingRebalance, 2),
				wantJoin(3, "m3", 2, "m3", "m3"),
				wantProtocol("roundrobin"),
			)},
		},
		{
			name: "static member that does not rejoin stays through the rebalance",
			steps: [][]step{seq(
				join(1, "", static("s1")),
				join(2, "", static("s2")),
				advance(6*time.Second),
				syncInst(3, "m2", "s2", 1),
				syncReq(4, "m1", 1, map[string][]byte{"m1": []byte("A1"), "m2": []byte("A2")}),
				heartbeatInst(5, "m2", "s2", 1),
				join(6, "m1", static("s1")),
				advance(9*time.Second),
				heartbeatInst(7, "m2", "s2", 1),
				advance(9*time.Second),
				heartbeatInst(8, "m2", "s2", 1),
				advance(9*time.Second),
				heartbeatInst(9, "m2", "s2", 1),
				advance(9*time.Second),
				heartbeatInst(10, "m2", "s2", 1),
				advance(9*time.Second),
				heartbeatInst(11, "m2", "s2", 1),
				advance(9*time.Second),
				heartbeatInst(12, "m2", "s2", 1),
				advance(9*time.Second),
				wantJoin(6, "m1", 2, "m1", "m1", "m2"),
				wantMembers("m1", "m2"),
			)},
		},
		{
			name: "sync errors",
			steps: [][]step{stable(10, 2), seq(
				syncReq(1, "nobody", 1, nil),
				wantErr(1, kerr.UnknownMemberID),
				syncReq(2, "m10", 7, nil),
				wantErr(2, kerr.IllegalGeneration),
				func(r *runner) {
					other := "other"
					r.apply(SyncEvent{Request: 3, MemberID: "m10", Generation: 1, ProtocolType: &other})
					r.apply(SyncEvent{Request: 4, MemberID: "m10", Generation: 1, ProtocolName: &other})
				},
				wantErr(3, kerr.InconsistentGroupProtocol),
				wantErr(4, kerr.InconsistentGroupProtocol),
				join(5, ""),
				syncReq(6, "m10", 1, nil),
				wantErr(6, kerr.RebalanceInProgress),
			)},
		},
		{
			name: "leader's sync store fails: waiting members get the error, the group rebalances",
			steps: [][]step{seq(
				join(1, ""), join(2, ""),
				advance(6*time.Second),
				syncReq(3, "m2", 1, nil),
				wantPending(3),
				failNextStore(kerr.NotCoordinator),
				syncReq(4, "m1", 1, map[string][]byte{"m1": []byte("A"), "m2": []byte("B")}),
				wantErr(3, kerr.NotCoordinator),
				wantErr(4, kerr.NotCoordinator),
				wantState(PreparingRebalance, 1),
			)},
		},
		{
			name: "a member that never syncs is removed at the rebalance timeout",
			steps: [][]step{seq(
				join(1, "", rebalanceTimeout(20*time.Second)), join(2, "", rebalanceTimeout(20*time.Second)),
				advance(6*time.Second),
				syncReq(3, "m1", 1, map[string][]byte{"m1": []byte("A"), "m2": []byte("B")}),
				wantState(Stable, 1),
				heartbeat(4, "m2", 1), // m2 heartbeats but never syncs
				advance(9*time.Second),
				heartbeat(5, "m1", 1),
				heartbeat(6, "m2", 1),
				advance(9*time.Second),
				heartbeat(7, "m1", 1),
				heartbeat(8, "m2", 1),
				advance(2*time.Second),
				wantMembers("m1"),
				wantState(PreparingRebalance, 1),
			)},
		},
		{
			name: "rejoin during CompletingRebalance: same metadata answers again, new metadata rebalances",
			steps: [][]step{seq(
				join(1, ""), join(2, ""),
				advance(6*time.Second),
				join(3, "m2"),
				wantJoin(3, "m2", 1, "m1"),
				join(4, "m1"),
				wantJoin(4, "m1", 1, "m1", "m1", "m2"),
				syncReq(5, "m2", 1, nil),
				join(6, "m2", protocols(Protocol{Name: "range", Metadata: subscription("t2")})),
				wantErr(5, kerr.RebalanceInProgress),
				wantState(PreparingRebalance, 1),
			)},
		},
		{
			name: "leader rejoining a stable group triggers a rebalance; a follower with same metadata does not",
			steps: [][]step{stable(10, 2), seq(
				join(1, "m11"),
				wantJoin(1, "m11", 1, "m10"),
				wantState(Stable, 1),
				join(2, "m10"),
				wantState(PreparingRebalance, 1),
			)},
		},
		{
			name: "protocol checks: first member needs a protocol, later ones a common one of the same type",
			steps: [][]step{seq(
				join(1, "", protocols()),
				wantJoinError(1, "", kerr.InconsistentGroupProtocol),
				join(2, ""),
				join(3, "", func(e *JoinEvent) { e.ProtocolType = "connect" }),
				wantJoinError(3, "", kerr.InconsistentGroupProtocol),
				join(4, "", protocols(Protocol{Name: "sticky"})),
				wantJoinError(4, "", kerr.InconsistentGroupProtocol),
				join(5, "", protocols(Protocol{Name: "sticky"}, Protocol{Name: "roundrobin", Metadata: subscription("t1")}, Protocol{Name: "range", Metadata: subscription("t1")})),
				join(6, "", protocols(Protocol{Name: "roundrobin", Metadata: subscription("t1")}, Protocol{Name: "range", Metadata: subscription("t1")})),
				advance(6*time.Second),
				// range: m2's first choice; roundrobin: m5's and m6's. Most votes win.
				wantProtocol("roundrobin"),
			)},
		},
		{
			name: "group.max.size",
			cfg:  func(c *MachineConfig) { c.MaxSize = 2 },
			steps: [][]step{seq(
				join(1, ""), join(2, ""), join(3, ""),
				wantJoinError(3, "", kerr.GroupMaxSizeReached),
				advance(6*time.Second),
				wantMembers("m1", "m2"),
				join(4, ""),
				wantJoinError(4, "", kerr.GroupMaxSizeReached),
			)},
		},
		{
			name: "unknown member ids",
			steps: [][]step{stable(10, 1), seq(
				join(1, "ghost"),
				wantJoinError(1, "ghost", kerr.UnknownMemberID),
				heartbeat(2, "ghost", 1),
				wantErr(2, kerr.UnknownMemberID),
				heartbeat(3, "m10", 0),
				wantErr(3, kerr.IllegalGeneration),
				join(4, "m10", static("s9")),
				wantJoinError(4, "m10", kerr.UnknownMemberID),
			)},
		},
		{
			name: "a pending member id holds the rebalance until it joins or expires",
			steps: [][]step{stable(10, 1), seq(
				join(1, "", requireKnown),
				wantJoinError(1, "m1", kerr.MemberIDRequired),
				join(2, "m10"), // leader rejoins: rebalance, but m1 is pending
				wantPending(2),
				advance(10*time.Second), // m1's session as a pending member ends
				wantJoin(2, "m10", 2, "m10", "m10"),
			)},
		},
		{
			name: "a pending member id that leaves no longer holds the rebalance",
			steps: [][]step{stable(10, 1), seq(
				join(1, "", requireKnown),
				join(2, "m10"),
				wantPending(2),
				leave(3, LeavingMember{MemberID: "m1"}),
				wantLeave(3, nil),
				wantJoin(2, "m10", 2, "m10", "m10"),
			)},
		},
		{
			name: "offset commit checks",
			steps: [][]step{seq(
				commit(1, "", "", -1, false), // standalone commit, Empty group
				wantErr(1, nil),
				commit(2, "m1", "", 1, false),
				wantErr(2, kerr.UnknownMemberID),
			), stable(10, 2), seq(
				commit(3, "", "", -1, false),
				wantErr(3, kerr.UnknownMemberID),
				commit(4, "m10", "", 1, false),
				wantErr(4, nil),
				commit(5, "m10", "", 0, false),
				wantErr(5, kerr.IllegalGeneration),
				commit(6, "m10", "s1", 1, false),
				wantErr(6, kerr.UnknownMemberID),
				commit(7, "", "", -1, true), // old TxnOffsetCommit without member
				wantErr(7, nil),
				join(8, ""),
				commit(9, "m10", "", 1, false), // PreparingRebalance: allowed
				wantErr(9, nil),
				join(20, "m10"), join(21, "m11"),
				wantState(CompletingRebalance, 2),
				commit(12, "m10", "", 2, false),
				wantErr(12, kerr.RebalanceInProgress),
				commit(13, "m10", "", 2, true),
				wantErr(13, nil),
			)},
		},
		{
			name: "static member commit fencing",
			steps: [][]step{seq(
				join(1, "", static("s1")),
				advance(3*time.Second),
				syncReq(2, "m1", 1, map[string][]byte{"m1": nil}),
				commit(3, "m0", "s1", 1, false),
				wantErr(3, kerr.FencedInstanceID),
				commit(4, "m1", "s1", 1, false),
				wantErr(4, nil),
			)},
		},
		{
			name: "delete",
			steps: [][]step{stable(10, 1), seq(
				func(r *runner) { r.apply(DeleteEvent{Request: 1}) },
				wantErr(1, kerr.NonEmptyGroup),
				leave(2, LeavingMember{MemberID: "m10"}),
				func(r *runner) { r.apply(DeleteEvent{Request: 3}) },
				wantErr(3, nil),
				wantState(Dead, 2),
				join(4, ""),
				wantJoinError(4, "", kerr.CoordinatorNotAvailable),
				func(r *runner) { r.apply(DeleteEvent{Request: 5}) },
				wantErr(5, kerr.GroupIDNotFound),
			)},
		},
		{
			name: "an empty group's store failure still leaves it Empty",
			steps: [][]step{stable(10, 1), seq(
				failNextStore(kerr.NotEnoughReplicas),
				leave(1, LeavingMember{MemberID: "m10"}),
				wantLeave(1, nil),
				wantState(Empty, 2),
			)},
		},
		{
			name: "initial delay of zero completes at once",
			cfg:  func(c *MachineConfig) { c.InitialRebalanceDelay = 0 },
			steps: [][]step{seq(
				join(1, ""),
				advance(0),
				wantJoin(1, "m1", 1, "m1", "m1"),
			)},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := defaultMachineConfig()
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			run(t, cfg, c.steps...)
		})
	}
}

func TestValidateJoin(t *testing.T) {
	lim := SessionLimits{Min: 6 * time.Second, Max: 30 * time.Minute}
	for _, c := range []struct {
		group string
		s     time.Duration
		want  *kerr.Error
	}{
		{"", 10 * time.Second, kerr.InvalidGroupID},
		{"g", 5999 * time.Millisecond, kerr.InvalidSessionTimeout},
		{"g", 6 * time.Second, nil},
		{"g", 30 * time.Minute, nil},
		{"g", 30*time.Minute + time.Millisecond, kerr.InvalidSessionTimeout},
	} {
		if got := ValidateJoin(c.group, c.s, lim); got != c.want {
			t.Errorf("ValidateJoin(%q, %v) = %v, want %v", c.group, c.s, got, c.want)
		}
	}
}

// TestLoadedGroupExpires checks that a group restored from its record
// starts its members' sessions on load and drops them if they never
// heartbeat.
func TestLoadedGroupExpires(t *testing.T) {
	r := run(t, defaultMachineConfig(), stable(10, 2))
	snap := r.g.Snapshot()
	g, err := Restore("g", snap, r.now)
	if err != nil {
		t.Fatal(err)
	}
	if g.State() != Stable || g.Generation() != 1 || g.Leader() != "m10" || g.Protocol() != "range" {
		t.Fatalf("restored %v gen %d leader %q protocol %q", g.State(), g.Generation(), g.Leader(), g.Protocol())
	}
	if m, _ := g.Member("m11"); string(m.Assignment) != "a-m11" {
		t.Fatalf("restored assignment %q", m.Assignment)
	}
	r2 := newRunner(t, defaultMachineConfig())
	r2.g, r2.now = g, r.now
	r2.apply(LoadedEvent{})
	r2.apply(HeartbeatEvent{Request: 1, MemberID: "m10", Generation: 1})
	r2.advance(5 * time.Second)
	r2.apply(HeartbeatEvent{Request: 2, MemberID: "m10", Generation: 1})
	r2.advance(5 * time.Second)
	if !equalStrings(r2.g.order, []string{"m10"}) || r2.g.State() != PreparingRebalance {
		t.Fatalf("after load without heartbeats: members %v state %v", r2.g.order, r2.g.State())
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
