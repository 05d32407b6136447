package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// SyncEvent is a SyncGroup request. The leader's carries the assignment.
type SyncEvent struct {
	Request      RequestID
	MemberID     string
	InstanceID   string
	Generation   int32
	ProtocolType *string // v5+, nil when not sent
	ProtocolName *string // v5+, nil when not sent
	// Assignments maps member ids to their assignment (leader only).
	Assignments map[string][]byte
}

func (SyncEvent) isEvent() {}

func (t *tx) syncError(e SyncEvent, err *kerr.Error) {
	t.reply(Reply{Request: e.Request, Err: err, Sync: &SyncResult{}})
}

func (t *tx) syncGroup(e SyncEvent) {
	g := t.g
	switch {
	case g.state == Dead:
		t.syncError(e, kerr.CoordinatorNotAvailable)
		return
	case g.staticFenced(e.InstanceID, e.MemberID):
		t.syncError(e, kerr.FencedInstanceID)
		return
	case !g.has(e.MemberID):
		t.syncError(e, kerr.UnknownMemberID)
		return
	case e.Generation != g.generation:
		t.syncError(e, kerr.IllegalGeneration)
		return
	case e.ProtocolType != nil && (g.protocolType == "" || *e.ProtocolType != g.protocolType),
		e.ProtocolName != nil && (g.protocol == "" || *e.ProtocolName != g.protocol):
		t.syncError(e, kerr.InconsistentGroupProtocol)
		return
	}
	switch g.state {
	case Empty:
		t.syncError(e, kerr.UnknownMemberID)
	case PreparingRebalance:
		t.syncError(e, kerr.RebalanceInProgress)
	case CompletingRebalance:
		g.edit(e.MemberID).syncWaiter = e.Request
		delete(g.pendingSync, e.MemberID)
		if g.isLeader(e.MemberID) {
			t.completeSync(e)
		}
	case Stable:
		delete(g.pendingSync, e.MemberID)
		m := g.members[e.MemberID]
		t.reply(Reply{Request: e.Request, Sync: &SyncResult{
			ProtocolType: optString(g.protocolType),
			ProtocolName: optString(g.protocol),
			Assignment:   m.Assignment,
		}})
		t.heartbeatFrom(e.MemberID)
	}
}

// completeSync takes the leader's assignment: members it left out get an
// empty one, the group is persisted with it and becomes Stable, and every
// waiting SyncGroup is answered. If the write fails, every waiting member
// is told the error and the group rebalances.
func (t *tx) completeSync(e SyncEvent) {
	g := t.g
	for _, id := range g.order {
		g.edit(id).Assignment = e.Assignments[id]
	}
	t.propagateAssignment(nil)
	g.transition(Stable, t.now)
	t.store = true

	before, cfg, now := t.before, t.cfg, t.now
	t.onStoreError = func(err *kerr.Error) Transition {
		f := &tx{g: before.clone(), before: before, now: now, cfg: cfg}
		f.g.edit(e.MemberID).syncWaiter = e.Request
		delete(f.g.pendingSync, e.MemberID)
		f.resetAndPropagateAssignmentError(err)
		f.maybePrepareRebalance()
		return f.result()
	}
}
