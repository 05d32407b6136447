package group

import (
	"slices"
	"time"
)

// Protocol is one assignment protocol a member supports, with the member's
// metadata for it (for the consumer protocol: its subscription).
type Protocol struct {
	Name     string
	Metadata []byte
}

// RequestID identifies a request waiting for its answer. The state machine
// keeps the ids of requests it answers later (a JoinGroup waiting for the
// rebalance, a SyncGroup waiting for the leader's assignment) and names them
// in Replies; the driver maps ids to the waiting callers. Zero means none.
type RequestID uint64

// Member is one member of a classic group. Members are immutable values
// inside a Group: a transition that changes one replaces it with a copy.
type Member struct {
	ID         string
	InstanceID string // group.instance.id of a static member, "" for a dynamic one
	ClientID   string
	ClientHost string

	ProtocolType     string
	Protocols        []Protocol // in the member's order of preference
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration

	// Assignment is what the leader assigned the member in the current
	// generation (empty until the group is Stable).
	Assignment []byte

	// Volatile state, never persisted:

	// joinWaiter is the JoinGroup request waiting for the rebalance to
	// complete; non-zero means the member is "awaiting join".
	joinWaiter RequestID
	// syncWaiter is the SyncGroup request waiting for the assignment.
	syncWaiter RequestID
	// isNew is set from the member's first JoinGroup until the rebalance it
	// joined completes; a new member's session is the new-member join
	// timeout and waiting for the rebalance does not keep it alive.
	isNew bool
	// heartbeatDeadline is when the member expires without a heartbeat.
	heartbeatDeadline time.Time
}

// clone returns a copy of m that may be modified; slices are shared, and
// are never modified in place.
func (m *Member) clone() *Member {
	c := *m
	return &c
}

// AwaitingJoin reports whether the member has a JoinGroup waiting for the
// rebalance to complete.
func (m *Member) AwaitingJoin() bool { return m.joinWaiter != 0 }

// AwaitingSync reports whether the member has a SyncGroup waiting for the
// leader's assignment.
func (m *Member) AwaitingSync() bool { return m.syncWaiter != 0 }

// HeartbeatDeadline is when the member expires unless it heartbeats.
func (m *Member) HeartbeatDeadline() time.Time { return m.heartbeatDeadline }

// Metadata returns the member's metadata for protocol, nil if it does not
// support it.
func (m *Member) Metadata(protocol string) []byte {
	for _, p := range m.Protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// supports reports whether the member supports protocol.
func (m *Member) supports(protocol string) bool {
	return slices.ContainsFunc(m.Protocols, func(p Protocol) bool { return p.Name == protocol })
}

// sameProtocols reports whether the member already has exactly these
// protocols, in this order, with the same metadata (a rejoin that changes
// nothing).
func (m *Member) sameProtocols(ps []Protocol) bool {
	return slices.EqualFunc(m.Protocols, ps, func(a, b Protocol) bool {
		return a.Name == b.Name && string(a.Metadata) == string(b.Metadata)
	})
}

// vote returns the member's most preferred protocol among candidates.
func (m *Member) vote(candidates map[string]bool) string {
	for _, p := range m.Protocols {
		if candidates[p.Name] {
			return p.Name
		}
	}
	return ""
}

// satisfiedHeartbeat reports whether the member's session is kept alive by
// something other than a heartbeat: a member waiting in a rebalance it
// already took part in does not expire (the rebalance timeout bounds it),
// a new member does.
func (m *Member) satisfiedHeartbeat() bool {
	if m.isNew {
		return false
	}
	return m.AwaitingJoin() || m.AwaitingSync()
}
