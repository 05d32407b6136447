package mirror_test

import (
	"slices"
	"testing"

	"github.com/kmirror/kmirror/internal/wire"
)

// TestPauseResume pauses a mirrored topic: B's log end stays where it was
// while A grows; resuming goes straight back to MIRRORING (no PREPARING,
// hence no truncation) and B catches up.
func TestPauseResume(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "events", 3, nil)
	produceN(t, a, "events", "before", 30)
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "events")
	an, bn := a.Nodes()[0], b.Nodes()[0]
	waitStates(t, b, "m", "events", 3, wire.MirrorStateMirroring)
	waitIdentical(t, an, bn, "events", 3)

	mirrorTopics(t, b, opPause, "m", "events")
	waitStates(t, b, "m", "events", 3, wire.MirrorStatePaused)
	frozen := leos(t, bn, "events", 3)
	epochs := make([]int32, 3)
	for p := range int32(3) {
		epochs[p] = storedState(t, b, "m", "events", p).StateEpoch
	}
	produceN(t, a, "events", "paused", 30)
	if grown := leos(t, an, "events", 3); slices.Equal(grown, frozen) {
		t.Fatalf("A did not grow: %v", grown)
	}
	// The fetchers were removed before PAUSED was persisted: nothing can
	// append any more.
	if now := leos(t, bn, "events", 3); !slices.Equal(now, frozen) {
		t.Fatalf("B's log end moved while paused: %v -> %v", frozen, now)
	}
	// Still read-only while paused.
	if err := produceErr(t, b, "events"); err == nil {
		t.Fatal("a paused topic accepted a produce")
	}

	mirrorTopics(t, b, opResume, "m", "events")
	waitStates(t, b, "m", "events", 3, wire.MirrorStateMirroring)
	for p := range int32(3) {
		if st := storedState(t, b, "m", "events", p); st.StateEpoch != epochs[p]+1 {
			t.Fatalf("events-%d: state epoch %d after resume, want %d (PAUSED → MIRRORING directly, no PREPARING)", p, st.StateEpoch, epochs[p]+1)
		}
	}
	waitIdentical(t, an, bn, "events", 3)
}
