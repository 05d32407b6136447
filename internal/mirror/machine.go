package mirror

import (
	"fmt"

	"github.com/kmirror/kmirror/internal/wire"
)

// This file is the mirror partition state machine, kept pure: a Machine and
// an Event go in, the next Machine and a Transition (persist or not, and the
// actions to run) come out. The partition driver (driver.go) performs the
// transition: it persists the new status to __mirror_state first and runs
// the actions only once that write succeeded, so that a restarted or new
// leader resumes from a state whose actions may have started but never from
// one whose actions ran unrecorded.
//
// States (docs/mirroring.md draws the diagram):
//
//	UNKNOWN ─▶ PREPARING ─▶ MIRRORING ⇄ PAUSING ─▶ PAUSED
//	MIRRORING / PAUSED / FAILED ─▶ STOPPING ─▶ STOPPED (writable)
//	PREPARING / MIRRORING / STOPPING ─error─▶ FAILED ─backoff─▶ back toward the desired state
//	(a final error schedules no backoff: FAILED waits for a new driver or desired state)
//
// Invariants:
//   - Status.SourceClusterID is non-empty only while the log is known to hold
//     a consistent copy of that source's partition: it is set when PREPARING
//     completes, kept through MIRRORING, PAUSING, PAUSED and FAILED, and
//     cleared by STOPPED and by a new PREPARING that starts from STOPPED or
//     UNKNOWN. Resuming straight to MIRRORING (no truncation) requires it.
//   - Every persisted transition raises Status.StateEpoch by one.
//   - PREPARING, PAUSING and STOPPING have work in flight; a change of the
//     desired state cancels PREPARING at once but waits for PAUSING and
//     STOPPING to finish (both are short and STOPPING must not be left half
//     done).
//   - STOPPING is only entered when the desired state is STOPPED, and is left
//     only for STOPPED or FAILED (from which it is entered again).

// Desired is what a topic's mirror.name asks of its partitions.
type Desired int8

// The desired states.
const (
	// DesiredNone: the topic is in no mirror (any more); the partition is
	// released (no fetching, writable) without a state write.
	DesiredNone Desired = iota
	// DesiredMirroring: mirror.name = <mirror>.
	DesiredMirroring
	// DesiredPaused: mirror.name = <mirror>.paused.
	DesiredPaused
	// DesiredStopped: mirror.name = <mirror>.removed (failover).
	DesiredStopped
)

// String names the desired state in logs.
func (d Desired) String() string {
	switch d {
	case DesiredNone:
		return "none"
	case DesiredMirroring:
		return "mirroring"
	case DesiredPaused:
		return "paused"
	case DesiredStopped:
		return "stopped"
	}
	return fmt.Sprintf("Desired(%d)", int8(d))
}

// ParseMirrorName splits a topic's raw mirror.name into the mirror and what
// it asks of the partitions: "m" → (m, mirroring), "m.paused" → (m,
// paused), "m.removed" → (m, stopped), "" → ("", none). "m.stopped" is
// (m, none): the failover is complete and recorded, the partitions are
// ordinary ones that no driver runs.
func ParseMirrorName(raw string) (mirror string, d Desired) {
	mirror, m := wire.ParseMirrorName(raw)
	switch m {
	case wire.MembershipMirroring:
		return mirror, DesiredMirroring
	case wire.MembershipPaused:
		return mirror, DesiredPaused
	case wire.MembershipRemoved:
		return mirror, DesiredStopped
	}
	return mirror, DesiredNone
}

// Status is the persisted part of a partition's machine (a
// MirrorPartitionState record without its writer's leader epoch and time).
type Status struct {
	State      wire.MirrorPartitionState
	StateEpoch int32
	// SourceClusterID: see the invariants above.
	SourceClusterID string
	// LastError is the reason of FAILED, "" in other states.
	LastError string
}

// Machine is a mirrored partition's state machine on its leader.
type Machine struct {
	Status  Status
	Desired Desired
	// Failures counts consecutive failures, for the retry backoff; it is
	// not persisted (a new leader starts counting again).
	Failures int
}

// EventKind says what happened.
type EventKind int8

// The events.
const (
	// EvStart: the status was read from __mirror_state (this node just
	// became the partition's leader, or started); Desired is set.
	EvStart EventKind = iota
	// EvDesired: the topic's mirror.name changed; Event.Desired is the new
	// desired state.
	EvDesired
	// EvPrepared: PREPARING finished (truncated, every required replica
	// truncated too); Event.Source is the source cluster id.
	EvPrepared
	// EvFetchersRemoved: PAUSING removed the fetchers.
	EvFetchersRemoved
	// EvStopped: STOPPING finished every step.
	EvStopped
	// EvFailed: the work of the current state failed for good (not a
	// transient error, which the work retries itself); Event.Err says why.
	EvFailed
	// EvRetry: FAILED's backoff has passed.
	EvRetry
	// EvReconcile: nothing happened; move toward the desired state if the
	// machine is settled. The driver sends it after every transition until
	// none follows.
	EvReconcile
	// EvStalled: the partition is MIRRORING but its fetching made no
	// progress while the source is ahead (stall.go): fetching restarts.
	EvStalled
)

// String names the event kind in logs.
func (k EventKind) String() string {
	return [...]string{"start", "desired", "prepared", "fetchers-removed", "stopped", "failed", "retry", "reconcile", "stalled"}[k]
}

// Event is an input of the machine.
type Event struct {
	Kind    EventKind
	Desired Desired // EvDesired
	Source  string  // EvPrepared
	Err     string  // EvFailed
	// Final (EvFailed): retrying cannot help until something changes
	// (the source cluster is another one, the source topic was
	// recreated): FAILED schedules no retry. A new driver (a leadership
	// change, or a change of the mirror's properties, which makes a new
	// source) or a change of the desired state tries again.
	Final bool
}

// ActionKind says what the driver must do.
type ActionKind int8

// The actions.
const (
	// ActPrepare runs PREPARING: learn the source's Last Mirrored Epoch,
	// truncate, wait for the replicas to truncate, then report EvPrepared
	// (or EvFailed). Action.Source is the cluster whose data the log holds
	// ("" if none): with no LME, a log holding the same source's data is
	// not truncated.
	ActPrepare ActionKind = iota
	// ActCancelPrepare stops PREPARING's work; no event follows.
	ActCancelPrepare
	// ActStartFetching adds the partition to the mirror's fetchers, from
	// the log end.
	ActStartFetching
	// ActStopFetching removes the partition from the fetchers (returns once
	// no fetcher appends to it any more); the driver then reports
	// EvFetchersRemoved if the machine is PAUSING.
	ActStopFetching
	// ActStop runs STOPPING's steps (each idempotent), then reports EvStopped
	// or EvFailed. Action.Source is the source cluster id for the LME
	// record ("" if the log holds no source's data).
	ActStop
	// ActScheduleRetry reports EvRetry after a backoff growing with
	// Action.Attempt.
	ActScheduleRetry
	// ActRelease stops all work on the partition and forgets it.
	ActRelease
)

// String names the action kind in logs.
func (k ActionKind) String() string {
	return [...]string{"prepare", "cancel-prepare", "start-fetching", "stop-fetching", "stop", "schedule-retry", "release"}[k]
}

// Action is one thing the driver does after persisting a transition.
type Action struct {
	Kind    ActionKind
	Source  string
	Attempt int
}

// Transition is the outcome of a step.
type Transition struct {
	// Persist says the new Status must be written before the actions run.
	Persist bool
	Actions []Action
}

// Step applies ev to m. It returns m itself and an empty Transition when
// the event changes nothing (stale or irrelevant events are ignored).
func (m Machine) Step(ev Event) (Machine, Transition) {
	switch ev.Kind {
	case EvStart:
		return m.start()
	case EvDesired:
		return m.desired(ev.Desired)
	case EvPrepared:
		if m.Status.State != wire.MirrorStatePreparing || m.Desired != DesiredMirroring {
			return m, Transition{}
		}
		m.Failures = 0
		return m.to(wire.MirrorStateMirroring, ev.Source, "", Action{Kind: ActStartFetching})
	case EvFetchersRemoved:
		if m.Status.State != wire.MirrorStatePausing {
			return m, Transition{}
		}
		return m.to(wire.MirrorStatePaused, m.Status.SourceClusterID, "")
	case EvStopped:
		if m.Status.State != wire.MirrorStateStopping {
			return m, Transition{}
		}
		m.Failures = 0
		return m.to(wire.MirrorStateStopped, "", "")
	case EvFailed:
		switch m.Status.State {
		case wire.MirrorStatePreparing, wire.MirrorStateMirroring, wire.MirrorStateStopping:
		default:
			return m, Transition{}
		}
		attempt := m.Failures
		m.Failures++
		var acts []Action
		if !ev.Final {
			acts = append(acts, Action{Kind: ActScheduleRetry, Attempt: attempt})
		}
		if m.Status.State == wire.MirrorStateMirroring {
			acts = append([]Action{{Kind: ActStopFetching}}, acts...)
		}
		return m.to(wire.MirrorStateFailed, m.Status.SourceClusterID, ev.Err, acts...)
	case EvRetry:
		if m.Status.State != wire.MirrorStateFailed {
			return m, Transition{}
		}
		return m.leaveFailed()
	case EvReconcile:
		return m.reconcile()
	case EvStalled:
		if m.Status.State != wire.MirrorStateMirroring || m.Desired != DesiredMirroring {
			return m, Transition{}
		}
		return m, Transition{Actions: []Action{{Kind: ActStopFetching}, {Kind: ActStartFetching}}}
	}
	return m, Transition{}
}

// start decides what a leader does with the status it just read. Except
// when nothing is to be done, it writes the status again (a claim): the
// write carries this leader's epoch, which fences a previous leader still
// acting on the partition.
func (m Machine) start() (Machine, Transition) {
	if m.Desired == DesiredNone {
		return m, Transition{Actions: []Action{{Kind: ActRelease}}}
	}
	src := m.Status.SourceClusterID
	switch m.Status.State {
	case wire.MirrorStatePreparing:
		switch m.Desired {
		case DesiredMirroring:
			return m.claim(Action{Kind: ActPrepare, Source: src})
		case DesiredPaused:
			return m.to(wire.MirrorStatePaused, src, "")
		default:
			return m.to(wire.MirrorStateStopping, src, "", Action{Kind: ActStop, Source: src})
		}
	case wire.MirrorStateMirroring:
		if m.Desired == DesiredMirroring {
			return m.claim(Action{Kind: ActStartFetching})
		}
		return m.reconcile()
	case wire.MirrorStatePausing:
		// No fetcher of this leader runs yet: the pause is complete.
		return m.to(wire.MirrorStatePaused, src, "")
	case wire.MirrorStateStopping:
		if m.Desired == DesiredStopped {
			return m.claim(Action{Kind: ActStop, Source: src})
		}
		// STOPPING is entered only for a removed topic; a topic that
		// joined a mirror again starts over from STOPPED's rules.
		return m.to(wire.MirrorStateStopping, src, "", Action{Kind: ActStop, Source: src})
	case wire.MirrorStateFailed:
		return m.leaveFailed()
	case wire.MirrorStatePaused:
		if m.Desired == DesiredPaused {
			return m.claim()
		}
	}
	return m.reconcile()
}

// desired applies a change of the desired state.
func (m Machine) desired(d Desired) (Machine, Transition) {
	if d == m.Desired {
		return m, Transition{}
	}
	m.Desired = d
	if d == DesiredNone {
		return m, Transition{Actions: []Action{{Kind: ActRelease}}}
	}
	src := m.Status.SourceClusterID
	switch m.Status.State {
	case wire.MirrorStatePreparing:
		switch d {
		case DesiredPaused:
			return m.to(wire.MirrorStatePaused, src, "", Action{Kind: ActCancelPrepare})
		case DesiredStopped:
			return m.to(wire.MirrorStateStopping, src, "", Action{Kind: ActCancelPrepare}, Action{Kind: ActStop, Source: src})
		}
		return m, Transition{}
	case wire.MirrorStatePausing, wire.MirrorStateStopping:
		return m, Transition{} // reconciled when the work completes
	case wire.MirrorStateFailed:
		if d == DesiredMirroring {
			return m, Transition{} // the retry timer brings it back
		}
		return m.leaveFailed()
	}
	return m.reconcile()
}

// leaveFailed moves a FAILED partition toward its desired state.
func (m Machine) leaveFailed() (Machine, Transition) {
	src := m.Status.SourceClusterID
	switch m.Desired {
	case DesiredNone:
		return m, Transition{Actions: []Action{{Kind: ActRelease}}}
	case DesiredMirroring:
		return m.to(wire.MirrorStatePreparing, src, "", Action{Kind: ActPrepare, Source: src})
	case DesiredPaused:
		return m.to(wire.MirrorStatePaused, src, "")
	}
	return m.to(wire.MirrorStateStopping, src, "", Action{Kind: ActStop, Source: src})
}

// reconcile moves a settled machine one transition toward the desired
// state; machines with work in flight wait for it.
func (m Machine) reconcile() (Machine, Transition) {
	src := m.Status.SourceClusterID
	st := m.Status.State
	switch m.Desired {
	case DesiredNone:
		return m, Transition{Actions: []Action{{Kind: ActRelease}}}
	case DesiredMirroring:
		switch st {
		case wire.MirrorStateUnknown, wire.MirrorStateStopped:
			return m.to(wire.MirrorStatePreparing, "", "", Action{Kind: ActPrepare})
		case wire.MirrorStatePaused:
			if src != "" {
				return m.to(wire.MirrorStateMirroring, src, "", Action{Kind: ActStartFetching})
			}
			return m.to(wire.MirrorStatePreparing, "", "", Action{Kind: ActPrepare})
		}
	case DesiredPaused:
		switch st {
		case wire.MirrorStateUnknown, wire.MirrorStateStopped:
			return m.to(wire.MirrorStatePaused, "", "")
		case wire.MirrorStateMirroring:
			return m.to(wire.MirrorStatePausing, src, "", Action{Kind: ActStopFetching})
		}
	case DesiredStopped:
		switch st {
		case wire.MirrorStateUnknown:
			// No state was ever persisted — or it was lost while the
			// log holds mirrored data: STOPPING runs its steps unless
			// the log is empty.
			return m.to(wire.MirrorStateStopping, "", "", Action{Kind: ActStop})
		case wire.MirrorStateMirroring:
			return m.to(wire.MirrorStateStopping, src, "", Action{Kind: ActStopFetching}, Action{Kind: ActStop, Source: src})
		case wire.MirrorStatePaused:
			return m.to(wire.MirrorStateStopping, src, "", Action{Kind: ActStop, Source: src})
		}
	}
	return m, Transition{}
}

// to is a persisted transition to state.
func (m Machine) to(state wire.MirrorPartitionState, source, lastErr string, acts ...Action) (Machine, Transition) {
	m.Status = Status{State: state, StateEpoch: m.Status.StateEpoch + 1, SourceClusterID: source, LastError: lastErr}
	return m, Transition{Persist: true, Actions: acts}
}

// claim persists the current status again under this leader.
func (m Machine) claim(acts ...Action) (Machine, Transition) {
	return m.to(m.Status.State, m.Status.SourceClusterID, m.Status.LastError, acts...)
}

// ReadOnlyMode is how client produces to a partition are answered.
type ReadOnlyMode int8

// The read-only modes.
const (
	// Writable: produces are accepted.
	Writable ReadOnlyMode = iota
	// ReadOnlyMirrored: the partition is mirrored (or paused); produces
	// fail for good with INVALID_TOPIC_EXCEPTION naming the mirror.
	ReadOnlyMirrored
	// ReadOnlyFailingOver: the partition is being failed over; produces
	// fail with a retriable NOT_LEADER_OR_FOLLOWER until it is STOPPED.
	ReadOnlyFailingOver
)

// ReadOnly says how client produces are answered in m.
func (m Machine) ReadOnly() ReadOnlyMode {
	switch {
	case m.Desired == DesiredNone:
		return Writable
	case m.Desired == DesiredStopped && m.Status.State == wire.MirrorStateStopped:
		return Writable
	case m.Desired == DesiredStopped:
		return ReadOnlyFailingOver
	}
	return ReadOnlyMirrored
}
