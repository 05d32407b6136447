package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleLeaveGroup serves LeaveGroup v0-v5 (one member before v3, a batch
// of members from v3). The group needs READ.
func (c *Coordinator) handleLeaveGroup(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req := kreq.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if !groupAllowed(rc, kmsg.ACLOperationRead, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	var ev LeaveEvent
	if req.Version < 3 {
		ev.Members = []LeavingMember{{MemberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			ev.Members = append(ev.Members, LeavingMember{MemberID: m.MemberID, InstanceID: deref(m.InstanceID)})
		}
	}
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, nil
	}
	group := req.Group
	rep, err := c.call(ctx, c.PartitionFor(group), groupFailure, func(id RequestID) coordinator.Op[*shard] {
		ev.Request = id
		return func(s *shard) (coordinator.Result, error) {
			g := s.group(group)
			if g == nil {
				r := Reply{Request: id}
				for _, m := range ev.Members {
					r.Leave = append(r.Leave, LeaveMemberResult{MemberID: m.MemberID, InstanceID: m.InstanceID, Err: kerr.UnknownMemberID})
				}
				return s.answer(r), nil
			}
			return s.transition(group, g.Handle(s.now(), &s.c.machine, ev)), nil
		}
	})
	if err != nil {
		return nil, err
	}
	resp.ErrorCode = errCode(rep.Err)
	if req.Version < 3 {
		// One member: its error is the response's.
		if rep.Err == nil && len(rep.Leave) == 1 {
			resp.ErrorCode = errCode(rep.Leave[0].Err)
		}
		return resp, nil
	}
	if rep.Err == nil {
		for _, m := range rep.Leave {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID = m.MemberID
			if m.InstanceID != "" {
				inst := m.InstanceID
				rm.InstanceID = &inst
			}
			rm.ErrorCode = errCode(m.Err)
			resp.Members = append(resp.Members, rm)
		}
	}
	return resp, nil
}
