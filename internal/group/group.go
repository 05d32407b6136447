package group

import (
	"maps"
	"slices"
	"time"
)

// Group is the state of one classic group: its members and the progress of
// its rebalance. A Group is an immutable value: Handle returns a new Group
// and never modifies the one it is called on, so a driver can compute a
// transition, persist what it says, and install the new value only once the
// write is committed (or keep the old one when it fails).
//
// Invariants:
//   - every member id in order is a key of members and vice versa;
//   - leader is "" exactly when there are no members, else a member id;
//   - static maps each instance id to the member that holds it;
//   - Empty and Dead groups have no members;
//   - pendingSync and the sync deadline are set only in CompletingRebalance
//     and Stable.
type Group struct {
	id           string
	state        State
	stateTime    time.Time // when the group entered state (Kafka's currentStateTimestamp)
	protocolType string    // "" for a group that only stores offsets
	protocol     string    // the protocol selected for the generation, "" if none
	generation   int32
	leader       string

	members map[string]*Member
	order   []string          // member ids in join order: deterministic leader election and listings
	static  map[string]string // instance id → member id

	// pending holds the member ids handed out with MEMBER_ID_REQUIRED that
	// have not joined yet, with the time they expire.
	pending map[string]time.Time

	// subscribed is the union of the topics the consumer-protocol members
	// subscribe to; nil when unknown (not a consumer group, or a
	// subscription failed to parse).
	subscribed map[string]bool

	// Rebalance bookkeeping (volatile).
	join           joinDelay
	newMemberAdded bool // a member joined during the initial rebalance delay
	pendingSync    map[string]bool
	syncDeadline   time.Time
}

// joinDelay is the pending completion of the PreparingRebalance phase.
type joinDelay struct {
	// deadline is when the phase completes at the latest; zero outside
	// PreparingRebalance.
	deadline time.Time
	// initial marks the delay that starts a rebalance of an Empty group
	// (group.initial.rebalance.delay.ms): it never completes early, and is
	// extended by step while new members keep arriving, up to remaining.
	initial   bool
	step      time.Duration
	remaining time.Duration
}

// NewGroup returns an Empty group with no members and generation 0.
func NewGroup(id string, now time.Time) *Group {
	return &Group{id: id, state: Empty, stateTime: now}
}

// ID is the group id.
func (g *Group) ID() string { return g.id }

// State is the group's state.
func (g *Group) State() State { return g.state }

// StateTime is when the group entered its state.
func (g *Group) StateTime() time.Time { return g.stateTime }

// ProtocolType is the protocol type the members use ("consumer" for
// consumers), "" for a group that only stores offsets.
func (g *Group) ProtocolType() string { return g.protocolType }

// Protocol is the protocol selected for the current generation, "" if none.
func (g *Group) Protocol() string { return g.protocol }

// Generation is the current generation id.
func (g *Group) Generation() int32 { return g.generation }

// Leader is the leader's member id, "" without members.
func (g *Group) Leader() string { return g.leader }

// Len is the number of members.
func (g *Group) Len() int { return len(g.order) }

// Members returns the members in join order. The members must not be
// modified.
func (g *Group) Members() []*Member {
	ms := make([]*Member, 0, len(g.order))
	for _, id := range g.order {
		ms = append(ms, g.members[id])
	}
	return ms
}

// Member returns the member with id.
func (g *Group) Member(id string) (*Member, bool) {
	m, ok := g.members[id]
	return m, ok
}

// StaticMember returns the member id holding instance id.
func (g *Group) StaticMember(instanceID string) (string, bool) {
	id, ok := g.static[instanceID]
	return id, ok
}

// IsPending reports whether id was handed out with MEMBER_ID_REQUIRED and
// has not joined yet.
func (g *Group) IsPending(id string) bool {
	_, ok := g.pending[id]
	return ok
}

// SubscribedTopics returns the topics the consumer members subscribe to
// and whether they are known.
func (g *Group) SubscribedTopics() (map[string]bool, bool) {
	return g.subscribed, g.subscribed != nil
}

// IsSubscribedTo reports whether a consumer member subscribes to topic; false
// when the subscriptions are unknown (Kafka's rule for OffsetDelete).
func (g *Group) IsSubscribedTo(topic string) bool { return g.subscribed[topic] }

// JoinDeadline is when the PreparingRebalance phase completes at the latest
// (zero outside it).
func (g *Group) JoinDeadline() time.Time { return g.join.deadline }

// SyncDeadline is when members that have not sent SyncGroup for the current
// generation are removed (zero when none is pending).
func (g *Group) SyncDeadline() time.Time { return g.syncDeadline }

// Waiting returns the requests the group holds unanswered (JoinGroup and
// SyncGroup calls waiting on the rebalance), so that a driver unloading the
// group can fail them.
func (g *Group) Waiting() []RequestID {
	var ids []RequestID
	for _, id := range g.order {
		m := g.members[id]
		if m.joinWaiter != 0 {
			ids = append(ids, m.joinWaiter)
		}
		if m.syncWaiter != 0 {
			ids = append(ids, m.syncWaiter)
		}
	}
	return ids
}

// clone returns a copy of g whose maps and slices may be modified; members
// are shared until edit replaces them.
func (g *Group) clone() *Group {
	c := *g
	c.members = maps.Clone(g.members)
	c.order = slices.Clone(g.order)
	c.static = maps.Clone(g.static)
	c.pending = maps.Clone(g.pending)
	c.pendingSync = maps.Clone(g.pendingSync)
	if c.members == nil {
		c.members = map[string]*Member{}
	}
	if c.static == nil {
		c.static = map[string]string{}
	}
	if c.pending == nil {
		c.pending = map[string]time.Time{}
	}
	if c.pendingSync == nil {
		c.pendingSync = map[string]bool{}
	}
	return &c
}

// edit replaces member id by a copy and returns the copy for modification.
func (g *Group) edit(id string) *Member {
	m := g.members[id].clone()
	g.members[id] = m
	return m
}

// has reports whether id is a member.
func (g *Group) has(id string) bool {
	_, ok := g.members[id]
	return ok
}

// isLeader reports whether id is the leader.
func (g *Group) isLeader(id string) bool { return id != "" && g.leader == id }

// numAwaitingJoin counts members with a JoinGroup waiting.
func (g *Group) numAwaitingJoin() int {
	n := 0
	for _, m := range g.members {
		if m.AwaitingJoin() {
			n++
		}
	}
	return n
}

// allJoined reports whether every member and every pending member id has
// (re)joined the rebalance.
func (g *Group) allJoined() bool {
	return len(g.pending) == 0 && g.numAwaitingJoin() == len(g.members)
}

// rebalanceTimeout is the longest rebalance timeout of the members.
func (g *Group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.RebalanceTimeout)
	}
	return d
}

// staticFenced reports whether instanceID is held by a member other than
// memberID: the caller is a stale duplicate of a static member.
func (g *Group) staticFenced(instanceID, memberID string) bool {
	if instanceID == "" {
		return false
	}
	cur, ok := g.static[instanceID]
	return ok && cur != memberID
}

// supportsProtocols reports whether a member with this protocol type and
// these protocols may join: the first member needs a type and a protocol,
// later ones the group's type and a protocol every current member supports.
func (g *Group) supportsProtocols(protocolType string, ps []Protocol) bool {
	if g.state == Empty {
		return protocolType != "" && len(ps) > 0
	}
	if g.protocolType != protocolType {
		return false
	}
	for _, p := range ps {
		if g.supportedByAll(p.Name) {
			return true
		}
	}
	return false
}

// supportedByAll reports whether every member supports protocol.
func (g *Group) supportedByAll(protocol string) bool {
	for _, m := range g.members {
		if !m.supports(protocol) {
			return false
		}
	}
	return true
}

// selectProtocol picks the protocol for the next generation: among the
// protocols every member supports, the one most members prefer; ties go to
// the protocol the earliest joined member prefers most.
func (g *Group) selectProtocol() string {
	candidates := map[string]bool{}
	if len(g.order) > 0 {
		for _, p := range g.members[g.order[0]].Protocols {
			if g.supportedByAll(p.Name) {
				candidates[p.Name] = true
			}
		}
	}
	votes := map[string]int{}
	best, bestVotes := "", 0
	for _, id := range g.order {
		v := g.members[id].vote(candidates)
		votes[v]++
	}
	if len(g.order) > 0 {
		for _, p := range g.members[g.order[0]].Protocols {
			if n := votes[p.Name]; candidates[p.Name] && n > bestVotes {
				best, bestVotes = p.Name, n
			}
		}
	}
	return best
}

// add makes m a member; waiter is its JoinGroup.
func (g *Group) add(m *Member, waiter RequestID) {
	if len(g.members) == 0 {
		g.protocolType = m.ProtocolType
	}
	m.joinWaiter = waiter
	g.members[m.ID] = m
	g.order = append(g.order, m.ID)
	if g.leader == "" {
		g.leader = m.ID
	}
	if m.InstanceID != "" {
		g.static[m.InstanceID] = m.ID
	}
	delete(g.pending, m.ID)
}

// remove drops member id (its static mapping, pending sync, leadership:
// the earliest remaining member leads).
func (g *Group) remove(id string) {
	m, ok := g.members[id]
	if !ok {
		return
	}
	delete(g.members, id)
	g.order = slices.DeleteFunc(g.order, func(s string) bool { return s == id })
	if m.InstanceID != "" && g.static[m.InstanceID] == id {
		delete(g.static, m.InstanceID)
	}
	delete(g.pending, id)
	delete(g.pendingSync, id)
	if g.leader == id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
}

// transition moves the group to s at now.
func (g *Group) transition(s State, now time.Time) {
	g.state = s
	g.stateTime = now
}
