package group

import (
	"fmt"
	"time"
)

// Snapshot is the persisted part of a group: what its metadata record in
// __consumer_offsets holds. Volatile state (waiting requests, sessions, the
// rebalance in progress) is not part of it.
type Snapshot struct {
	ProtocolType string
	Protocol     string // "" when none
	Generation   int32
	Leader       string // "" when none
	// StateTime is when the group entered its state; zero if unknown
	// (records before Kafka 2.1).
	StateTime time.Time
	Members   []SnapshotMember
}

// SnapshotMember is one member in a Snapshot.
type SnapshotMember struct {
	ID               string
	InstanceID       string
	ClientID         string
	ClientHost       string
	RebalanceTimeout time.Duration
	SessionTimeout   time.Duration
	// Subscription is the member's metadata for the selected protocol.
	Subscription []byte
	Assignment   []byte
}

// Snapshot returns the group's persisted state.
func (g *Group) Snapshot() Snapshot {
	s := Snapshot{
		ProtocolType: g.protocolType,
		Protocol:     g.protocol,
		Generation:   g.generation,
		Leader:       g.leader,
		StateTime:    g.stateTime,
	}
	for _, id := range g.order {
		m := g.members[id]
		s.Members = append(s.Members, SnapshotMember{
			ID:               m.ID,
			InstanceID:       m.InstanceID,
			ClientID:         m.ClientID,
			ClientHost:       m.ClientHost,
			RebalanceTimeout: m.RebalanceTimeout,
			SessionTimeout:   m.SessionTimeout,
			Subscription:     m.Metadata(g.protocol),
			Assignment:       m.Assignment,
		})
	}
	return s
}

// Restore rebuilds a group from its persisted state, as the coordinator
// does when it loads a partition: Stable with its members, or Empty without
// any. Member sessions start with a LoadedEvent. A snapshot whose members
// have no protocol, or repeat an id or an instance id, is refused.
func Restore(id string, s Snapshot, now time.Time) (*Group, error) {
	g := NewGroup(id, now).clone()
	g.protocolType = s.ProtocolType
	g.protocol = s.Protocol
	g.generation = s.Generation
	g.stateTime = s.StateTime // zero when the record predates state timestamps
	if len(s.Members) == 0 {
		g.protocol = ""
		g.subscribed = (&tx{g: g}).computeSubscribed()
		return g, nil
	}
	if s.Protocol == "" {
		return nil, fmt.Errorf("group %q: %d members but no protocol", id, len(s.Members))
	}
	g.state = Stable
	for _, sm := range s.Members {
		if g.has(sm.ID) {
			return nil, fmt.Errorf("group %q: member %q appears twice", id, sm.ID)
		}
		if sm.InstanceID != "" && g.static[sm.InstanceID] != "" {
			return nil, fmt.Errorf("group %q: instance id %q appears twice", id, sm.InstanceID)
		}
		m := &Member{
			ID:               sm.ID,
			InstanceID:       sm.InstanceID,
			ClientID:         sm.ClientID,
			ClientHost:       sm.ClientHost,
			ProtocolType:     s.ProtocolType,
			Protocols:        []Protocol{{Name: s.Protocol, Metadata: sm.Subscription}},
			SessionTimeout:   sm.SessionTimeout,
			RebalanceTimeout: sm.RebalanceTimeout,
			Assignment:       sm.Assignment,
		}
		g.add(m, 0)
	}
	if g.has(s.Leader) {
		g.leader = s.Leader
	}
	g.subscribed = (&tx{g: g}).computeSubscribed()
	return g, nil
}
