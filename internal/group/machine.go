package group

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MachineConfig is the part of the broker configuration the group state
// machine uses.
type MachineConfig struct {
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: how long the
	// first rebalance of an Empty group waits for more members.
	InitialRebalanceDelay time.Duration
	// MaxSize is group.max.size; 0 means unlimited.
	MaxSize int
	// NewMemberJoinTimeout bounds how long a new member may wait in a
	// rebalance (Kafka's fixed 5 minutes).
	NewMemberJoinTimeout time.Duration
}

// DefaultNewMemberJoinTimeout is Kafka's timeout for a new member waiting in
// a rebalance.
const DefaultNewMemberJoinTimeout = 5 * time.Minute

// Event is an input of the state machine: a request (JoinEvent, SyncEvent,
// HeartbeatEvent, LeaveEvent, CommitEvent, DeleteEvent), a timer
// (TimeoutEvent) or the loading of the group (LoadedEvent).
type Event interface{ isEvent() }

// Transition is the outcome of one event: the group after it, whether that
// group's metadata must be persisted before it is installed, the answers to
// requests and the timers to set.
//
// A driver installs Group and performs Replies and Timers only after the
// metadata write (if Store) is committed. If the write fails without being
// written, it installs OnStoreError(err) instead, which describes what Kafka
// does then from the state before the event; if it is unknown whether the
// write happened, the driver reloads the group from the log.
type Transition struct {
	Group        *Group
	Store        bool
	OnStoreError func(err *kerr.Error) Transition
	Replies      []Reply
	Timers       []TimerChange
}

// Reply answers one request. Err is nil on success; the other fields are
// set according to the request's kind.
type Reply struct {
	Request RequestID
	Err     *kerr.Error
	Join    *JoinResult
	Sync    *SyncResult
	Leave   []LeaveMemberResult
}

// JoinResult is the body of a JoinGroup answer.
type JoinResult struct {
	MemberID       string
	Generation     int32
	ProtocolType   *string // nil when none
	ProtocolName   *string // nil when none
	Leader         string
	SkipAssignment bool
	Members        []JoinMember // only for the leader
}

// JoinMember is one member as the leader sees it in its JoinGroup answer.
type JoinMember struct {
	ID         string
	InstanceID string
	Metadata   []byte
}

// SyncResult is the body of a SyncGroup answer.
type SyncResult struct {
	ProtocolType *string
	ProtocolName *string
	Assignment   []byte
}

// LeaveMemberResult is the outcome for one member of a LeaveGroup.
type LeaveMemberResult struct {
	MemberID   string
	InstanceID string
	Err        *kerr.Error
}

// TimerKind names a group timer.
type TimerKind int8

// Timer kinds.
const (
	// TimerHeartbeat expires a member (or a pending member id) whose
	// session ran out.
	TimerHeartbeat TimerKind = iota
	// TimerJoin completes the PreparingRebalance phase (rebalance timeout or
	// initial delay).
	TimerJoin
	// TimerSync removes members that did not send SyncGroup in time.
	TimerSync
)

// TimerKey identifies a timer of a group; Member is set for heartbeats.
type TimerKey struct {
	Kind   TimerKind
	Member string
}

// TimerChange sets the timer Key to fire at At, replacing any earlier
// setting; a zero At cancels it.
type TimerChange struct {
	Key TimerKey
	At  time.Time
}

// Handle applies ev to g at now and returns the transition. g is not
// modified.
func (g *Group) Handle(now time.Time, cfg *MachineConfig, ev Event) Transition {
	t := &tx{g: g.clone(), now: now, cfg: cfg, before: g}
	switch e := ev.(type) {
	case JoinEvent:
		t.joinGroup(e)
	case SyncEvent:
		t.syncGroup(e)
	case HeartbeatEvent:
		t.heartbeat(e)
	case LeaveEvent:
		t.leaveGroup(e)
	case CommitEvent:
		t.commit(e)
	case DeleteEvent:
		t.deleteGroup(e)
	case TimeoutEvent:
		t.timeout(e)
	case LoadedEvent:
		t.loaded()
	}
	return t.result()
}

// tx accumulates one transition.
type tx struct {
	g      *Group // the next state, modified in place
	before *Group // the state before the event
	now    time.Time
	cfg    *MachineConfig

	store        bool
	onStoreError func(err *kerr.Error) Transition
	// keepOnStoreError makes a failed store install the transition anyway.
	keepOnStoreError bool
	replies          []Reply
	timers           []TimerChange
}

func (t *tx) result() Transition {
	tr := Transition{Group: t.g, Store: t.store, OnStoreError: t.onStoreError, Replies: t.replies, Timers: t.timers}
	if t.store && t.keepOnStoreError {
		kept := tr
		kept.Store, kept.OnStoreError = false, nil
		tr.OnStoreError = func(*kerr.Error) Transition { return kept }
	}
	return tr
}

func (t *tx) reply(r Reply) {
	if r.Request != 0 {
		t.replies = append(t.replies, r)
	}
}

func (t *tx) setTimer(k TimerKey, at time.Time) {
	t.timers = append(t.timers, TimerChange{Key: k, At: at})
}

func (t *tx) cancelTimer(k TimerKey) { t.setTimer(k, time.Time{}) }

// heartbeatFrom restarts member id's session: it expires after its session
// timeout unless it heartbeats again.
func (t *tx) heartbeatFrom(id string) {
	m := t.g.edit(id)
	m.heartbeatDeadline = t.now.Add(m.SessionTimeout)
	t.setTimer(TimerKey{Kind: TimerHeartbeat, Member: id}, m.heartbeatDeadline)
}

// optString returns a pointer to s, nil for "".
func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// zeroTime is the unset time.
var zeroTime time.Time
