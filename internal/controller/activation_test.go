package controller

import (
	"strings"
	"testing"
)

// TestLateLeadershipSignalKeepsActive: raft reports a node as leader before
// its observers hear of the election, so the controller can activate (on a
// tick) before the signal of that very election arrives. The late signal
// must not deactivate it: that cost a second barrier and a window in which
// requests right after activation got NOT_CONTROLLER (the flake of
// TestControllerSingleNode).
func TestLateLeadershipSignalKeepsActive(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	logs := captureLogs(t, c)
	signals := make(chan struct{}) // unbuffered: a send returns once the loop took it
	c.beforeStart = func(ctl *Controller) { ctl.changes = signals }
	nd := c.start(1)
	ctl := c.active().ctl.Load()

	// The second send completes only after the loop handled the first and
	// went round once more (where it would re-activate after a spurious
	// deactivation).
	signals <- struct{}{}
	signals <- struct{}{}

	if !ctl.IsActive() {
		t.Fatal("controller inactive after a signal about its own election")
	}
	if n := strings.Count(logs.String(), `msg="controller active"`); n != 1 {
		t.Fatalf("controller activated %d times in one term, want 1\n%s", n, logs)
	}
	registerBroker(t, ctl.Handle, nd.q, 1)
}
