package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// JoinEvent is a JoinGroup request.
type JoinEvent struct {
	Request RequestID
	// MemberID is the caller's member id, "" for a member joining for the
	// first time.
	MemberID string
	// NewMemberID is the id to give the caller if it is new (the driver
	// generates it: client id or instance id, "-", a random UUID).
	NewMemberID      string
	InstanceID       string // "" for a dynamic member
	ClientID         string
	ClientHost       string
	ProtocolType     string
	Protocols        []Protocol
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	// RequireKnownMemberID is set from JoinGroup v4: a new dynamic member
	// first gets MEMBER_ID_REQUIRED with its id and must join again with it.
	RequireKnownMemberID bool
	// SupportsSkipAssignment is set from JoinGroup v9 (KIP-814).
	SupportsSkipAssignment bool
}

func (JoinEvent) isEvent() {}

// SessionLimits are group.min.session.timeout.ms and
// group.max.session.timeout.ms.
type SessionLimits struct{ Min, Max time.Duration }

// ValidateJoin checks what Kafka checks before looking the group up: a
// non-empty group id and a session timeout within the broker's limits.
func ValidateJoin(groupID string, sessionTimeout time.Duration, limits SessionLimits) *kerr.Error {
	if groupID == "" {
		return kerr.InvalidGroupID
	}
	if sessionTimeout < limits.Min || sessionTimeout > limits.Max {
		return kerr.InvalidSessionTimeout
	}
	return nil
}

// joinError answers e with err and no group information.
func (t *tx) joinError(e JoinEvent, memberID string, err *kerr.Error) {
	t.reply(Reply{Request: e.Request, Err: err, Join: &JoinResult{MemberID: memberID, Generation: -1}})
}

// joinResult is the answer a member gets when the rebalance completes or
// when it rejoins a generation unchanged.
func (t *tx) joinResult(memberID string, withMembers bool) *JoinResult {
	g := t.g
	r := &JoinResult{
		MemberID:     memberID,
		Generation:   g.generation,
		ProtocolType: optString(g.protocolType),
		ProtocolName: optString(g.protocol),
		Leader:       g.leader,
	}
	if withMembers {
		r.Members = t.memberList()
	}
	return r
}

// memberList is what the leader gets to compute the assignment: every
// member with its metadata for the selected protocol.
func (t *tx) memberList() []JoinMember {
	g := t.g
	ms := make([]JoinMember, 0, len(g.order))
	for _, id := range g.order {
		m := g.members[id]
		ms = append(ms, JoinMember{ID: m.ID, InstanceID: m.InstanceID, Metadata: m.Metadata(g.protocol)})
	}
	return ms
}

func (t *tx) joinGroup(e JoinEvent) {
	g := t.g
	if !t.acceptJoining(e.MemberID) {
		if g.has(e.MemberID) {
			g.remove(e.MemberID)
			t.cancelTimer(TimerKey{Kind: TimerHeartbeat, Member: e.MemberID})
		}
		t.joinError(e, "", kerr.GroupMaxSizeReached)
	} else if e.MemberID == "" {
		t.joinNewMember(e)
	} else {
		t.joinCurrentMember(e)
	}
	if g.state == PreparingRebalance {
		t.maybeCompleteJoin()
	}
}

// acceptJoining applies group.max.size: a rebalance admits at most MaxSize
// members, counting those that already rejoined it.
func (t *tx) acceptJoining(memberID string) bool {
	g, max := t.g, t.cfg.MaxSize
	if max <= 0 {
		return true
	}
	switch g.state {
	case Empty, Dead:
		return true
	case PreparingRebalance:
		m, ok := g.members[memberID]
		return (ok && m.AwaitingJoin()) || g.numAwaitingJoin() < max
	default:
		return g.has(memberID) || len(g.members) < max
	}
}

func (t *tx) joinNewMember(e JoinEvent) {
	g := t.g
	switch {
	case g.state == Dead:
		t.joinError(e, e.MemberID, kerr.CoordinatorNotAvailable)
	case !g.supportsProtocols(e.ProtocolType, e.Protocols):
		t.joinError(e, e.MemberID, kerr.InconsistentGroupProtocol)
	case e.InstanceID != "":
		if old, ok := g.static[e.InstanceID]; ok {
			t.replaceStaticMember(e, old)
		} else {
			t.addMemberAndRebalance(e, e.NewMemberID)
		}
	case e.RequireKnownMemberID:
		// The id is handed out first and the member must come back with it,
		// so that a client retrying a lost response does not leave a second
		// member behind.
		deadline := t.now.Add(e.SessionTimeout)
		g.pending[e.NewMemberID] = deadline
		t.setTimer(TimerKey{Kind: TimerHeartbeat, Member: e.NewMemberID}, deadline)
		t.joinError(e, e.NewMemberID, kerr.MemberIDRequired)
	default:
		t.addMemberAndRebalance(e, e.NewMemberID)
	}
}

func (t *tx) joinCurrentMember(e JoinEvent) {
	g := t.g
	switch {
	case g.state == Dead:
		t.joinError(e, e.MemberID, kerr.CoordinatorNotAvailable)
		return
	case !g.supportsProtocols(e.ProtocolType, e.Protocols):
		t.joinError(e, e.MemberID, kerr.InconsistentGroupProtocol)
		return
	case g.IsPending(e.MemberID) && e.InstanceID == "":
		t.addMemberAndRebalance(e, e.MemberID)
		return
	case g.staticFenced(e.InstanceID, e.MemberID):
		t.joinError(e, e.MemberID, kerr.FencedInstanceID)
		return
	case !g.has(e.MemberID) || (e.InstanceID != "" && g.static[e.InstanceID] == ""):
		t.joinError(e, e.MemberID, kerr.UnknownMemberID)
		return
	}
	m := g.members[e.MemberID]
	switch g.state {
	case PreparingRebalance:
		t.updateMemberAndRebalance(e)
	case CompletingRebalance:
		if m.sameProtocols(e.Protocols) {
			// A retry of a JoinGroup whose answer was lost: answer it again.
			t.reply(Reply{Request: e.Request, Join: t.joinResult(e.MemberID, g.isLeader(e.MemberID))})
		} else {
			t.updateMemberAndRebalance(e)
		}
	case Stable:
		if g.isLeader(e.MemberID) || !m.sameProtocols(e.Protocols) {
			// The leader rejoins to trigger a rebalance for changes the
			// member metadata does not show (topic metadata).
			t.updateMemberAndRebalance(e)
		} else {
			t.reply(Reply{Request: e.Request, Join: t.joinResult(e.MemberID, false)})
		}
	default: // Empty: a member the group does not know in this state
		t.joinError(e, e.MemberID, kerr.UnknownMemberID)
	}
}

// addMemberAndRebalance adds a new member and starts (or joins) a rebalance.
func (t *tx) addMemberAndRebalance(e JoinEvent, id string) {
	g := t.g
	m := &Member{
		ID:               id,
		InstanceID:       e.InstanceID,
		ClientID:         e.ClientID,
		ClientHost:       e.ClientHost,
		ProtocolType:     e.ProtocolType,
		Protocols:        e.Protocols,
		SessionTimeout:   e.SessionTimeout,
		RebalanceTimeout: e.RebalanceTimeout,
		isNew:            true,
	}
	if g.state == PreparingRebalance && g.generation == 0 {
		g.newMemberAdded = true
	}
	g.add(m, e.Request)
	// A new member cannot heartbeat before it knows its id, and a client
	// that gave up on a long rebalance retries with a new one: bound its
	// wait so that defunct members do not pile up.
	m.heartbeatDeadline = t.now.Add(t.cfg.NewMemberJoinTimeout)
	t.setTimer(TimerKey{Kind: TimerHeartbeat, Member: id}, m.heartbeatDeadline)
	t.maybePrepareRebalance()
}

// updateMemberAndRebalance records a known member's (new) protocols and its
// waiting JoinGroup, and starts a rebalance if none is running.
func (t *tx) updateMemberAndRebalance(e JoinEvent) {
	t.updateMember(e.MemberID, e, e.Request)
	t.maybePrepareRebalance()
}

// updateMember sets a member's protocols, timeouts and JoinGroup waiter
// from its JoinGroup. A JoinGroup already waiting for the member is
// superseded and gets no answer (its client gave up on it).
func (t *tx) updateMember(id string, e JoinEvent, waiter RequestID) {
	m := t.g.edit(id)
	m.Protocols = e.Protocols
	m.SessionTimeout = e.SessionTimeout
	m.RebalanceTimeout = e.RebalanceTimeout
	m.joinWaiter = waiter
}

// replaceStaticMember gives a static member's instance id to a new member
// id: the member restarted and lost its id. The old id is fenced.
func (t *tx) replaceStaticMember(e JoinEvent, oldID string) {
	g := t.g
	previousLeader := g.leader
	before := t.before
	// The member keeps its place (and assignment) under the new id.
	old := g.members[oldID]
	t.reply(Reply{Request: old.joinWaiter, Err: kerr.FencedInstanceID, Join: &JoinResult{MemberID: oldID, Generation: -1}})
	t.reply(Reply{Request: old.syncWaiter, Err: kerr.FencedInstanceID, Sync: &SyncResult{}})
	m := old.clone()
	m.ID = e.NewMemberID
	m.joinWaiter, m.syncWaiter = 0, 0
	delete(g.members, oldID)
	g.members[m.ID] = m
	for i, id := range g.order {
		if id == oldID {
			g.order[i] = m.ID
		}
	}
	if g.leader == oldID {
		g.leader = m.ID
	}
	g.static[e.InstanceID] = m.ID
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[m.ID] = true
	}
	t.cancelTimer(TimerKey{Kind: TimerHeartbeat, Member: oldID})
	t.updateMember(m.ID, e, e.Request)
	t.heartbeatFrom(m.ID)

	switch g.state {
	case Stable:
		if g.selectProtocol() != g.protocol {
			// The new member's protocols change the selection: the group
			// must rebalance for assignment and protocol to agree.
			t.maybePrepareRebalance()
			return
		}
		// Persist the new member id; no rebalance is needed.
		t.store = true
		t.g.edit(m.ID).joinWaiter = 0
		if e.SupportsSkipAssignment {
			// v9+: tell a returning leader it leads, but that the group is
			// Stable and it must not run the assignor.
			isLeader := g.isLeader(m.ID)
			r := t.joinResult(m.ID, isLeader)
			r.SkipAssignment = isLeader
			t.reply(Reply{Request: e.Request, Join: r})
		} else {
			// Before v9, answering with the previous leader id keeps a
			// returning leader from computing an assignment a Stable group
			// would not hand out.
			r := t.joinResult(m.ID, false)
			r.Leader = previousLeader
			t.reply(Reply{Request: e.Request, Join: r})
		}
		cfg, now := t.cfg, t.now
		t.onStoreError = func(err *kerr.Error) Transition {
			f := &tx{g: before.clone(), before: before, now: now, cfg: cfg}
			f.reply(Reply{Request: e.Request, Err: err, Join: &JoinResult{
				MemberID:     "",
				Generation:   before.generation,
				ProtocolType: optString(before.protocolType),
				ProtocolName: optString(before.protocol),
				Leader:       previousLeader,
			}})
			return f.result()
		}
	case CompletingRebalance:
		t.maybePrepareRebalance()
	case PreparingRebalance:
		// The member's JoinGroup waits for the running rebalance.
	}
}
