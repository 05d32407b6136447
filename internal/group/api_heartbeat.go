package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleHeartbeat serves Heartbeat v0-v4. The group needs READ.
func (c *Coordinator) handleHeartbeat(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req := kreq.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if !groupAllowed(rc, kmsg.ACLOperationRead, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, nil
	}
	ev := HeartbeatEvent{MemberID: req.MemberID, InstanceID: deref(req.InstanceID), Generation: req.Generation}
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
	// While the partition loads Kafka answers heartbeats with success: the
	// member's session cannot be checked, and it must not rejoin for that.
	if rep.Err == kerr.CoordinatorLoadInProgress {
		rep.Err = nil
	}
	resp.ErrorCode = errCode(rep.Err)
	return resp, nil
}
