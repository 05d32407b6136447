package mirror

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kmirror/kmirror/internal/wire"
)

// Short names for the tables.
const (
	sUnknown   = wire.MirrorStateUnknown
	sPreparing = wire.MirrorStatePreparing
	sMirroring = wire.MirrorStateMirroring
	sPausing   = wire.MirrorStatePausing
	sPaused    = wire.MirrorStatePaused
	sStopping  = wire.MirrorStateStopping
	sStopped   = wire.MirrorStateStopped
	sFailed    = wire.MirrorStateFailed

	dNone = DesiredNone
	dMir  = DesiredMirroring
	dPau  = DesiredPaused
	dStop = DesiredStopped
)

func mach(st wire.MirrorPartitionState, src string, d Desired) Machine {
	return Machine{Status: Status{State: st, StateEpoch: 5, SourceClusterID: src}, Desired: d}
}

func acts(a ...Action) []Action { return a }

var (
	aPrepare       = Action{Kind: ActPrepare}
	aPrepareS      = Action{Kind: ActPrepare, Source: "S"}
	aCancel        = Action{Kind: ActCancelPrepare}
	aStart         = Action{Kind: ActStartFetching}
	aStopFetch     = Action{Kind: ActStopFetching}
	aStop          = Action{Kind: ActStop}
	aStopS         = Action{Kind: ActStop, Source: "S"}
	aRelease       = Action{Kind: ActRelease}
	aRetry0        = Action{Kind: ActScheduleRetry, Attempt: 0}
	evStart        = Event{Kind: EvStart}
	evReconcile    = Event{Kind: EvReconcile}
	evRetry        = Event{Kind: EvRetry}
	evStopped      = Event{Kind: EvStopped}
	evRemoved      = Event{Kind: EvFetchersRemoved}
	evPreparedS    = Event{Kind: EvPrepared, Source: "S"}
	evFailed       = Event{Kind: EvFailed, Err: "boom"}
	evFinal        = Event{Kind: EvFailed, Err: "boom", Final: true}
	evDesired      = func(d Desired) Event { return Event{Kind: EvDesired, Desired: d} }
	noTransitionTo = wire.MirrorPartitionState(-1)
)

// TestStep checks every transition and every ignored event of the machine.
func TestStep(t *testing.T) {
	type want struct {
		state   wire.MirrorPartitionState // noTransitionTo: unchanged and not persisted
		src     string
		lastErr string
		acts    []Action
	}
	cases := []struct {
		name string
		m    Machine
		ev   Event
		want want
	}{
		// Start: a leader resumes from the stored status.
		{"start unknown mirroring prepares", mach(sUnknown, "", dMir), evStart, want{sPreparing, "", "", acts(aPrepare)}},
		{"start unknown paused pauses", mach(sUnknown, "", dPau), evStart, want{sPaused, "", "", nil}},
		{"start unknown removed runs STOPPING (an empty log skips its steps)", mach(sUnknown, "", dStop), evStart, want{sStopping, "", "", acts(aStop)}},
		{"start anything with no mirror releases", mach(sMirroring, "S", dNone), evStart, want{noTransitionTo, "", "", acts(aRelease)}},
		{"start preparing resumes preparing (claim)", mach(sPreparing, "S", dMir), evStart, want{sPreparing, "S", "", acts(aPrepareS)}},
		{"start preparing paused", mach(sPreparing, "", dPau), evStart, want{sPaused, "", "", nil}},
		{"start preparing removed stops", mach(sPreparing, "S", dStop), evStart, want{sStopping, "S", "", acts(aStopS)}},
		{"start mirroring resumes fetching (claim)", mach(sMirroring, "S", dMir), evStart, want{sMirroring, "S", "", acts(aStart)}},
		{"start mirroring paused pauses", mach(sMirroring, "S", dPau), evStart, want{sPausing, "S", "", acts(aStopFetch)}},
		{"start mirroring removed stops", mach(sMirroring, "S", dStop), evStart, want{sStopping, "S", "", acts(aStopFetch, aStopS)}},
		{"start pausing completes the pause", mach(sPausing, "S", dPau), evStart, want{sPaused, "S", "", nil}},
		{"start paused stays (claim)", mach(sPaused, "S", dPau), evStart, want{sPaused, "S", "", nil}},
		{"start paused resumed resumes without truncation", mach(sPaused, "S", dMir), evStart, want{sMirroring, "S", "", acts(aStart)}},
		{"start paused never prepared prepares", mach(sPaused, "", dMir), evStart, want{sPreparing, "", "", acts(aPrepare)}},
		{"start stopping resumes stopping (claim)", mach(sStopping, "S", dStop), evStart, want{sStopping, "S", "", acts(aStopS)}},
		{"start stopped removed does nothing", mach(sStopped, "", dStop), evStart, want{noTransitionTo, "", "", nil}},
		{"start stopped re-added prepares from scratch", mach(sStopped, "", dMir), evStart, want{sPreparing, "", "", acts(aPrepare)}},
		{"start failed retries at once", mach(sFailed, "S", dMir), evStart, want{sPreparing, "S", "", acts(aPrepareS)}},
		{"start failed removed stops", mach(sFailed, "S", dStop), evStart, want{sStopping, "S", "", acts(aStopS)}},

		// Desired changes.
		{"pause mirroring", mach(sMirroring, "S", dMir), evDesired(dPau), want{sPausing, "S", "", acts(aStopFetch)}},
		{"remove mirroring", mach(sMirroring, "S", dMir), evDesired(dStop), want{sStopping, "S", "", acts(aStopFetch, aStopS)}},
		{"remove paused", mach(sPaused, "S", dPau), evDesired(dStop), want{sStopping, "S", "", acts(aStopS)}},
		{"resume paused", mach(sPaused, "S", dPau), evDesired(dMir), want{sMirroring, "S", "", acts(aStart)}},
		{"resume paused that never prepared", mach(sPaused, "", dPau), evDesired(dMir), want{sPreparing, "", "", acts(aPrepare)}},
		{"pause preparing cancels it", mach(sPreparing, "", dMir), evDesired(dPau), want{sPaused, "", "", acts(aCancel)}},
		{"remove preparing cancels and stops", mach(sPreparing, "S", dMir), evDesired(dStop), want{sStopping, "S", "", acts(aCancel, aStopS)}},
		{"pausing waits for the removal", mach(sPausing, "S", dPau), evDesired(dMir), want{noTransitionTo, "", "", nil}},
		{"stopping waits for its steps", mach(sStopping, "S", dStop), evDesired(dMir), want{noTransitionTo, "", "", nil}},
		{"failed paused leaves failed at once", mach(sFailed, "S", dMir), evDesired(dPau), want{sPaused, "S", "", nil}},
		{"failed removed fails over at once", mach(sFailed, "S", dMir), evDesired(dStop), want{sStopping, "S", "", acts(aStopS)}},
		{"failed mirroring waits for the retry", mach(sFailed, "S", dPau), evDesired(dMir), want{noTransitionTo, "", "", nil}},
		{"unchanged desired is ignored", mach(sMirroring, "S", dMir), evDesired(dMir), want{noTransitionTo, "", "", nil}},
		{"left the mirror releases", mach(sMirroring, "S", dMir), evDesired(dNone), want{noTransitionTo, "", "", acts(aRelease)}},
		{"stopped re-added", mach(sStopped, "", dStop), evDesired(dMir), want{sPreparing, "", "", acts(aPrepare)}},
		{"stopped re-added paused", mach(sStopped, "", dStop), evDesired(dPau), want{sPaused, "", "", nil}},

		// Completions.
		{"prepared starts mirroring", mach(sPreparing, "", dMir), evPreparedS, want{sMirroring, "S", "", acts(aStart)}},
		{"prepared while not preparing is stale", mach(sPaused, "", dPau), evPreparedS, want{noTransitionTo, "", "", nil}},
		{"fetchers removed pauses", mach(sPausing, "S", dPau), evRemoved, want{sPaused, "S", "", nil}},
		{"fetchers removed while not pausing is stale", mach(sStopping, "S", dStop), evRemoved, want{noTransitionTo, "", "", nil}},
		{"stopped", mach(sStopping, "S", dStop), evStopped, want{sStopped, "", "", nil}},
		{"stopped while not stopping is stale", mach(sMirroring, "S", dMir), evStopped, want{noTransitionTo, "", "", nil}},

		// Failures and retries.
		{"preparing fails", mach(sPreparing, "", dMir), evFailed, want{sFailed, "", "boom", acts(aRetry0)}},
		{"mirroring fails and stops fetching", mach(sMirroring, "S", dMir), evFailed, want{sFailed, "S", "boom", acts(aStopFetch, aRetry0)}},
		{"stopping fails", mach(sStopping, "S", dStop), evFailed, want{sFailed, "S", "boom", acts(aRetry0)}},
		{"a stalled mirroring partition restarts its fetching", mach(sMirroring, "S", dMir), Event{Kind: EvStalled}, want{noTransitionTo, "", "", acts(aStopFetch, Action{Kind: ActStartFetching})}},
		{"a stall of a paused partition is stale", mach(sPaused, "S", dPau), Event{Kind: EvStalled}, want{noTransitionTo, "", "", nil}},
		{"a final failure schedules no retry", mach(sPreparing, "S", dMir), evFinal, want{sFailed, "S", "boom", nil}},
		{"a final failure while mirroring stops fetching only", mach(sMirroring, "S", dMir), evFinal, want{sFailed, "S", "boom", acts(aStopFetch)}},
		{"failure of a settled state is stale", mach(sPaused, "S", dPau), evFailed, want{noTransitionTo, "", "", nil}},
		{"retry prepares keeping the source", mach(sFailed, "S", dMir), evRetry, want{sPreparing, "S", "", acts(aPrepareS)}},
		{"retry of a stop stops", mach(sFailed, "S", dStop), evRetry, want{sStopping, "S", "", acts(aStopS)}},
		{"retry when not failed is stale", mach(sMirroring, "S", dMir), evRetry, want{noTransitionTo, "", "", nil}},

		// Reconcile after a completion.
		{"paused then resumed meanwhile", mach(sPaused, "S", dMir), evReconcile, want{sMirroring, "S", "", acts(aStart)}},
		{"stopped then re-added meanwhile", mach(sStopped, "", dMir), evReconcile, want{sPreparing, "", "", acts(aPrepare)}},
		{"settled mirroring", mach(sMirroring, "S", dMir), evReconcile, want{noTransitionTo, "", "", nil}},
		{"in-flight preparing", mach(sPreparing, "", dMir), evReconcile, want{noTransitionTo, "", "", nil}},
		{"unknown removed", mach(sUnknown, "", dStop), evReconcile, want{sStopping, "", "", acts(aStop)}},
		{"paused that never prepared fails over", mach(sPaused, "", dStop), evReconcile, want{sStopping, "", "", acts(aStop)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next, tr := tc.m.Step(tc.ev)
			if tc.want.state == noTransitionTo {
				if tr.Persist || next.Status != tc.m.Status {
					t.Fatalf("expected no transition, got %+v persist=%v", next.Status, tr.Persist)
				}
			} else {
				if !tr.Persist {
					t.Fatalf("transition to %v not persisted", next.Status.State)
				}
				want := Status{State: tc.want.state, StateEpoch: tc.m.Status.StateEpoch + 1, SourceClusterID: tc.want.src, LastError: tc.want.lastErr}
				if next.Status != want {
					t.Fatalf("status %+v, want %+v", next.Status, want)
				}
			}
			if !slices.Equal(tr.Actions, tc.want.acts) {
				t.Fatalf("actions %v, want %v", tr.Actions, tc.want.acts)
			}
		})
	}
}

func TestFailuresCountAndReset(t *testing.T) {
	m := mach(sPreparing, "", dMir)
	for i := range 3 {
		var tr Transition
		m, tr = m.Step(evFailed)
		if got := tr.Actions[len(tr.Actions)-1]; got.Kind != ActScheduleRetry || got.Attempt != i {
			t.Fatalf("failure %d scheduled %+v", i, got)
		}
		m, _ = m.Step(evRetry)
	}
	m, _ = m.Step(evPreparedS)
	if m.Failures != 0 || m.Status.State != sMirroring {
		t.Fatalf("after success: %+v", m)
	}
}

// TestWalk drives a machine through a whole life (mirror, pause, resume,
// fail, recover, fail over) the way the driver does, reconciling after each
// transition, and checks the states it passes through.
func TestWalk(t *testing.T) {
	m := Machine{Desired: dMir}
	var path []string
	step := func(ev Event) {
		t.Helper()
		var tr Transition
		m, tr = m.Step(ev)
		for tr.Persist || len(tr.Actions) > 0 {
			if tr.Persist {
				path = append(path, m.Status.State.String())
			}
			if slices.ContainsFunc(tr.Actions, func(a Action) bool { return a.Kind == ActRelease }) {
				path = append(path, "released")
				return
			}
			if m.Status.State == sPausing && slices.Contains(tr.Actions, aStopFetch) {
				m, tr = m.Step(evRemoved)
				continue
			}
			m, tr = m.Step(evReconcile)
		}
	}
	step(evStart)
	step(evPreparedS)
	step(evDesired(dPau))
	step(evDesired(dMir))
	step(evFailed)
	step(evRetry)
	step(evPreparedS)
	step(evDesired(dStop))
	step(evStopped)
	step(evDesired(dNone))
	want := []string{"PREPARING", "MIRRORING", "PAUSING", "PAUSED", "MIRRORING", "FAILED", "PREPARING", "MIRRORING", "STOPPING", "STOPPED", "released"}
	if !slices.Equal(path, want) {
		t.Fatalf("path %v\nwant %v", path, want)
	}
	if m.Status.StateEpoch != 10 {
		t.Fatalf("state epoch %d after 10 persisted transitions", m.Status.StateEpoch)
	}
}

func TestReadOnly(t *testing.T) {
	for _, tc := range []struct {
		m    Machine
		want ReadOnlyMode
	}{
		{mach(sMirroring, "S", dMir), ReadOnlyMirrored},
		{mach(sPaused, "S", dPau), ReadOnlyMirrored},
		{mach(sPreparing, "", dMir), ReadOnlyMirrored},
		{mach(sFailed, "S", dMir), ReadOnlyMirrored},
		{mach(sStopping, "S", dStop), ReadOnlyFailingOver},
		{mach(sMirroring, "S", dStop), ReadOnlyFailingOver},
		{mach(sStopped, "", dStop), Writable},
		{mach(sStopped, "", dMir), ReadOnlyMirrored},
		{mach(sMirroring, "S", dNone), Writable},
	} {
		if got := tc.m.ReadOnly(); got != tc.want {
			t.Errorf("%+v: read-only %v, want %v", tc.m, got, tc.want)
		}
	}
}

func TestParseMirrorName(t *testing.T) {
	for raw, want := range map[string]struct {
		m string
		d Desired
	}{
		"":              {"", dNone},
		"west":          {"west", dMir},
		"west.paused":   {"west", dPau},
		"west.removed":  {"west", dStop},
		"a.b.c.removed": {"a.b.c", dStop},
		"west.stopped":  {"west", dNone}, // failed over for good: no driver
	} {
		m, d := ParseMirrorName(raw)
		if m != want.m || d != want.d {
			t.Errorf("ParseMirrorName(%q) = %q %v", raw, m, d)
		}
	}
}

func TestNames(t *testing.T) {
	for _, s := range []fmt.Stringer{dNone, dMir, dPau, dStop, EvStart, EvReconcile, ActPrepare, ActRelease} {
		if s.String() == "" {
			t.Fatalf("%#v has no name", s)
		}
	}
}
