package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// CommitEvent validates an OffsetCommit or TxnOffsetCommit against the
// group's membership before the offsets are written. The reply's Err is the
// error every partition of the request gets; nil allows the commit.
type CommitEvent struct {
	Request    RequestID
	MemberID   string
	InstanceID string
	Generation int32
	// Transactional is set for TxnOffsetCommit, whose older versions carry
	// no member or generation.
	Transactional bool
}

func (CommitEvent) isEvent() {}

// commit applies Kafka's offset commit rules: a commit that names a member
// or a generation must come from the current member of the current
// generation; a commit that names neither is a standalone commit, allowed
// only while the group has no members (transactional commits excepted). A
// member's commit counts as a heartbeat.
func (t *tx) commit(e CommitEvent) {
	g := t.g
	err := t.validateCommit(e)
	if err == nil && !e.Transactional {
		switch g.state {
		case Stable, PreparingRebalance:
			// During PreparingRebalance the commit is allowed: the member
			// learns about the rebalance from its next heartbeat.
			if g.has(e.MemberID) {
				t.heartbeatFrom(e.MemberID)
			}
		case CompletingRebalance:
			// The member has the new generation but not its assignment yet.
			err = kerr.RebalanceInProgress
		}
	}
	t.reply(Reply{Request: e.Request, Err: err})
}

func (t *tx) validateCommit(e CommitEvent) *kerr.Error {
	g := t.g
	switch {
	case g.state == Dead:
		return kerr.CoordinatorNotAvailable
	case e.Generation >= 0 || e.MemberID != "" || e.InstanceID != "":
		if e.InstanceID != "" {
			cur, ok := g.static[e.InstanceID]
			if !ok {
				return kerr.UnknownMemberID
			}
			if cur != e.MemberID {
				return kerr.FencedInstanceID
			}
		}
		if !g.has(e.MemberID) {
			return kerr.UnknownMemberID
		}
		if e.Generation != g.generation {
			return kerr.IllegalGeneration
		}
		return nil
	case !e.Transactional && g.state != Empty:
		return kerr.UnknownMemberID
	}
	return nil
}

// DeleteEvent is a request to delete the group (DeleteGroups), or the
// removal of an Empty group whose last offsets expired or were deleted.
type DeleteEvent struct {
	Request RequestID
}

func (DeleteEvent) isEvent() {}

// deleteGroup makes an Empty group Dead; a group with members is not
// deleted (NON_EMPTY_GROUP).
func (t *tx) deleteGroup(e DeleteEvent) {
	g := t.g
	var err *kerr.Error
	switch g.state {
	case Dead:
		err = kerr.GroupIDNotFound
	case Empty:
		g.transition(Dead, t.now)
	default:
		err = kerr.NonEmptyGroup
	}
	t.reply(Reply{Request: e.Request, Err: err})
}
