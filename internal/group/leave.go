package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// LeaveEvent is a LeaveGroup request for one member (v0-v2) or several
// (v3+, also used by admins to remove static members by instance id).
type LeaveEvent struct {
	Request RequestID
	Members []LeavingMember
}

// LeavingMember names a member leaving: by member id, or by instance id
// alone (MemberID "") to remove whichever member holds it.
type LeavingMember struct {
	MemberID   string
	InstanceID string
}

func (LeaveEvent) isEvent() {}

func (t *tx) leaveGroup(e LeaveEvent) {
	g := t.g
	if g.state == Dead {
		t.reply(Reply{Request: e.Request, Err: kerr.CoordinatorNotAvailable, Leave: []LeaveMemberResult{}})
		return
	}
	results := make([]LeaveMemberResult, 0, len(e.Members))
	for _, lm := range e.Members {
		r := LeaveMemberResult{MemberID: lm.MemberID, InstanceID: lm.InstanceID}
		switch {
		case lm.MemberID == "":
			if id, ok := g.static[lm.InstanceID]; ok && lm.InstanceID != "" {
				t.removeMember(id)
			} else {
				r.Err = kerr.UnknownMemberID
			}
		case g.IsPending(lm.MemberID):
			t.removePending(lm.MemberID)
		case g.staticFenced(lm.InstanceID, lm.MemberID):
			r.Err = kerr.FencedInstanceID
		case g.has(lm.MemberID):
			t.removeMember(lm.MemberID)
		default:
			r.Err = kerr.UnknownMemberID
		}
		results = append(results, r)
	}
	t.reply(Reply{Request: e.Request, Leave: results})
}
