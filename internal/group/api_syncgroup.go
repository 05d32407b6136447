package group

import (
	"bytes"
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleSyncGroup serves SyncGroup v0-v5. A follower's answer waits for the
// leader's assignment. The group needs READ.
func (c *Coordinator) handleSyncGroup(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req := kreq.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	if !groupAllowed(rc, kmsg.ACLOperationRead, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		resp.MemberAssignment = []byte{}
		return resp, nil
	}
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, nil
	}
	ev := SyncEvent{
		MemberID:   req.MemberID,
		InstanceID: deref(req.InstanceID),
		Generation: req.Generation,
	}
	if req.Version >= 5 {
		ev.ProtocolType, ev.ProtocolName = req.ProtocolType, req.Protocol
	}
	if len(req.GroupAssignment) > 0 {
		ev.Assignments = make(map[string][]byte, len(req.GroupAssignment))
		for _, a := range req.GroupAssignment {
			ev.Assignments[a.MemberID] = bytes.Clone(a.MemberAssignment)
		}
	}
	group := req.Group
	rep, err := c.call(ctx, c.PartitionFor(group), groupFailure, func(id RequestID) coordinator.Op[*shard] {
		ev.Request = id
		return func(s *shard) (coordinator.Result, error) {
			g := s.group(group)
			if g == nil {
				return s.answer(Reply{Request: id, Err: kerr.UnknownMemberID}), nil
			}
			return s.transition(group, g.Handle(s.now(), &s.c.machine, ev)), nil
		}
	})
	if err != nil {
		return nil, err
	}
	resp.ErrorCode = errCode(rep.Err)
	if rep.Sync != nil {
		resp.ProtocolType = rep.Sync.ProtocolType
		resp.Protocol = rep.Sync.ProtocolName
		resp.MemberAssignment = rep.Sync.Assignment
	}
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	return resp, nil
}
