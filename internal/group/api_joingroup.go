package group

import (
	"bytes"
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleJoinGroup serves JoinGroup v0-v9. The answer may wait for the
// rebalance to complete. The group needs READ.
func (c *Coordinator) handleJoinGroup(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req := kreq.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	if !groupAllowed(rc, kmsg.ACLOperationRead, req.Group) {
		fillJoin(resp, Reply{Err: kerr.GroupAuthorizationFailed, Join: &JoinResult{Generation: -1}})
		return resp, nil
	}
	session := millis(req.SessionTimeoutMillis)
	rebalance := session
	if req.Version >= 1 {
		rebalance = millis(req.RebalanceTimeoutMillis)
	}
	instance := deref(req.InstanceID)
	if err := ValidateJoin(req.Group, session, SessionLimits{Min: c.cfg.GroupMinSessionTimeout, Max: c.cfg.GroupMaxSessionTimeout}); err != nil {
		fillJoin(resp, Reply{Err: err, Join: &JoinResult{MemberID: req.MemberID, Generation: -1}})
		return resp, nil
	}
	clientID := deref(rc.Header.ClientID)
	ev := JoinEvent{
		MemberID:               req.MemberID,
		NewMemberID:            newMemberID(clientID, instance),
		InstanceID:             instance,
		ClientID:               clientID,
		ClientHost:             clientHost(rc.ClientAddr),
		ProtocolType:           req.ProtocolType,
		SessionTimeout:         session,
		RebalanceTimeout:       rebalance,
		RequireKnownMemberID:   req.Version >= 4,
		SupportsSkipAssignment: req.Version >= 9,
	}
	for _, p := range req.Protocols {
		ev.Protocols = append(ev.Protocols, Protocol{Name: p.Name, Metadata: bytes.Clone(p.Metadata)})
	}
	group := req.Group
	rep, err := c.call(ctx, c.PartitionFor(group), groupFailure, func(id RequestID) coordinator.Op[*shard] {
		ev.Request = id
		return func(s *shard) (coordinator.Result, error) {
			g := s.group(group)
			if g == nil {
				if ev.MemberID != "" {
					return s.answer(Reply{Request: id, Err: kerr.UnknownMemberID, Join: &JoinResult{MemberID: ev.MemberID, Generation: -1}}), nil
				}
				g = NewGroup(group, s.now())
			}
			return s.transition(group, g.Handle(s.now(), &s.c.machine, ev)), nil
		}
	})
	if err != nil {
		return nil, err
	}
	if rep.Join == nil {
		rep.Join = &JoinResult{MemberID: req.MemberID, Generation: -1}
	}
	fillJoin(resp, rep)
	return resp, nil
}

// fillJoin writes a reply into a JoinGroup response.
func fillJoin(resp *kmsg.JoinGroupResponse, r Reply) {
	j := r.Join
	resp.ErrorCode = errCode(r.Err)
	resp.MemberID = j.MemberID
	resp.Generation = j.Generation
	resp.ProtocolType = j.ProtocolType
	resp.Protocol = j.ProtocolName
	resp.LeaderID = j.Leader
	resp.SkipAssignment = j.SkipAssignment
	resp.Members = resp.Members[:0]
	for _, m := range j.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID = m.ID
		if m.InstanceID != "" {
			inst := m.InstanceID
			rm.InstanceID = &inst
		}
		rm.ProtocolMetadata = m.Metadata
		resp.Members = append(resp.Members, rm)
	}
}
