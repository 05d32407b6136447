package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// maybePrepareRebalance starts a rebalance unless one is already preparing.
func (t *tx) maybePrepareRebalance() {
	if t.g.state.canRebalance() {
		t.prepareRebalance()
	}
}

// prepareRebalance moves the group to PreparingRebalance: members waiting
// for an assignment are told to rejoin, and the phase ends when every
// member rejoined or at the rebalance timeout. A rebalance of an Empty group
// first waits group.initial.rebalance.delay.ms for more members.
func (t *tx) prepareRebalance() {
	g := t.g
	if g.state == CompletingRebalance {
		t.resetAndPropagateAssignmentError(kerr.RebalanceInProgress)
	}
	g.syncDeadline = zeroTime
	t.cancelTimer(TimerKey{Kind: TimerSync})
	timeout := g.rebalanceTimeout()
	if g.state == Empty {
		delay := t.cfg.InitialRebalanceDelay
		g.join = joinDelay{
			deadline:  t.now.Add(delay),
			initial:   true,
			step:      delay,
			remaining: max(timeout-delay, 0),
		}
	} else {
		g.join = joinDelay{deadline: t.now.Add(timeout)}
	}
	g.transition(PreparingRebalance, t.now)
	t.setTimer(TimerKey{Kind: TimerJoin}, g.join.deadline)
	t.maybeCompleteJoin()
}

// maybeCompleteJoin ends the PreparingRebalance phase early once every
// member has rejoined (never during the initial delay).
func (t *tx) maybeCompleteJoin() {
	g := t.g
	if g.state == PreparingRebalance && !g.join.initial && g.allJoined() {
		t.completeJoin()
	}
}

// completeJoin ends the PreparingRebalance phase: dynamic members that did
// not rejoin are dropped, the next generation starts, and every waiting
// member gets its JoinGroup answer (the leader with the member list).
func (t *tx) completeJoin() {
	g := t.g
	for _, id := range append([]string(nil), g.order...) {
		m := g.members[id]
		if !m.AwaitingJoin() && m.InstanceID == "" {
			t.reply(Reply{Request: m.syncWaiter, Err: kerr.UnknownMemberID, Sync: &SyncResult{}})
			g.remove(id)
			t.cancelTimer(TimerKey{Kind: TimerHeartbeat, Member: id})
		}
	}
	if len(g.members) > 0 && !t.electJoinedLeader() {
		// Only static members that did not rejoin are left: wait another
		// rebalance timeout for them (their sessions still run).
		g.join = joinDelay{deadline: t.now.Add(g.rebalanceTimeout())}
		t.setTimer(TimerKey{Kind: TimerJoin}, g.join.deadline)
		return
	}
	g.join = joinDelay{}
	g.newMemberAdded = false
	t.cancelTimer(TimerKey{Kind: TimerJoin})
	t.initNextGeneration()
	if g.state == Empty {
		// Persist the empty generation. Kafka keeps the Empty state even when
		// that write fails: the old generation in the log has no live
		// members and expires.
		t.store = true
		t.keepOnStoreError = true
		return
	}
	for _, id := range g.order {
		m := g.edit(id)
		t.reply(Reply{Request: m.joinWaiter, Join: t.joinResult(id, g.isLeader(id))})
		m.joinWaiter = 0
		m.isNew = false
		t.heartbeatFrom(id)
		g.pendingSync[id] = true
	}
	g.syncDeadline = t.now.Add(g.rebalanceTimeout())
	t.setTimer(TimerKey{Kind: TimerSync}, g.syncDeadline)
}

// electJoinedLeader makes sure the leader is a member that rejoined,
// reporting false when no member did.
func (t *tx) electJoinedLeader() bool {
	g := t.g
	if m, ok := g.members[g.leader]; ok && m.AwaitingJoin() {
		return true
	}
	for _, id := range g.order {
		if g.members[id].AwaitingJoin() {
			g.leader = id
			return true
		}
	}
	return false
}

// initNextGeneration starts the next generation: CompletingRebalance with a
// selected protocol, or Empty without members.
func (t *tx) initNextGeneration() {
	g := t.g
	g.generation++
	if len(g.members) > 0 {
		g.protocol = g.selectProtocol()
		g.subscribed = t.computeSubscribed()
		g.transition(CompletingRebalance, t.now)
	} else {
		g.protocol = ""
		g.subscribed = t.computeSubscribed()
		g.transition(Empty, t.now)
	}
	clear(g.pendingSync)
}

// computeSubscribed is the union of the consumer members' subscribed
// topics, nil if not a consumer group or a subscription does not parse.
func (t *tx) computeSubscribed() map[string]bool {
	g := t.g
	if g.protocolType != ConsumerProtocolType {
		return nil
	}
	topics := map[string]bool{}
	for _, m := range g.members {
		sub, err := ParseSubscriptionTopics(m.Metadata(g.protocol))
		if err != nil {
			return nil
		}
		for _, tp := range sub {
			topics[tp] = true
		}
	}
	return topics
}

// resetAndPropagateAssignmentError clears every assignment and fails the
// SyncGroups waiting for one.
func (t *tx) resetAndPropagateAssignmentError(err *kerr.Error) {
	g := t.g
	for _, id := range g.order {
		g.edit(id).Assignment = nil
	}
	t.propagateAssignment(err)
}

// propagateAssignment answers every waiting SyncGroup with the member's
// assignment (or err), restarting those members' sessions: an expiry that
// came while they waited was ignored.
func (t *tx) propagateAssignment(err *kerr.Error) {
	g := t.g
	var ptype, pname *string
	if err == nil {
		ptype, pname = optString(g.protocolType), optString(g.protocol)
	}
	for _, id := range g.order {
		m := g.members[id]
		if m.syncWaiter == 0 {
			continue
		}
		t.reply(Reply{Request: m.syncWaiter, Err: err, Sync: &SyncResult{ProtocolType: ptype, ProtocolName: pname, Assignment: m.Assignment}})
		g.edit(id).syncWaiter = 0
		t.heartbeatFrom(id)
	}
}

// removeMember drops a member that left or expired, and moves the group on:
// a stable group rebalances, a preparing one may now be complete. A
// JoinGroup or SyncGroup it still had waiting is answered
// UNKNOWN_MEMBER_ID, so that a client still running rejoins.
func (t *tx) removeMember(id string) {
	g := t.g
	m := g.members[id]
	t.reply(Reply{Request: m.joinWaiter, Err: kerr.UnknownMemberID, Join: &JoinResult{Generation: -1}})
	t.reply(Reply{Request: m.syncWaiter, Err: kerr.UnknownMemberID, Sync: &SyncResult{}})
	g.remove(id)
	t.cancelTimer(TimerKey{Kind: TimerHeartbeat, Member: id})
	switch g.state {
	case Stable, CompletingRebalance:
		t.maybePrepareRebalance()
	case PreparingRebalance:
		t.maybeCompleteJoin()
	}
}

// removePending forgets a pending member id (it left or expired).
func (t *tx) removePending(id string) {
	delete(t.g.pending, id)
	t.cancelTimer(TimerKey{Kind: TimerHeartbeat, Member: id})
	if t.g.state == PreparingRebalance {
		t.maybeCompleteJoin()
	}
}
