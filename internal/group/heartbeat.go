package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// HeartbeatEvent is a Heartbeat request.
type HeartbeatEvent struct {
	Request    RequestID
	MemberID   string
	InstanceID string
	Generation int32
}

func (HeartbeatEvent) isEvent() {}

// heartbeat keeps a member's session alive. During a rebalance the answer is
// REBALANCE_IN_PROGRESS, which is how members learn they must rejoin.
func (t *tx) heartbeat(e HeartbeatEvent) {
	g := t.g
	var err *kerr.Error
	switch {
	case g.state == Dead:
		err = kerr.CoordinatorNotAvailable
	case g.staticFenced(e.InstanceID, e.MemberID):
		err = kerr.FencedInstanceID
	case !g.has(e.MemberID):
		err = kerr.UnknownMemberID
	case e.Generation != g.generation:
		err = kerr.IllegalGeneration
	case g.state == Empty:
		err = kerr.UnknownMemberID
	case g.state == PreparingRebalance:
		t.heartbeatFrom(e.MemberID)
		err = kerr.RebalanceInProgress
	default: // CompletingRebalance, Stable
		t.heartbeatFrom(e.MemberID)
	}
	t.reply(Reply{Request: e.Request, Err: err})
}
