package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// Coordinator key types of FindCoordinator.
const (
	keyTypeGroup       = 0
	keyTypeTransaction = 1
)

// handleFindCoordinator serves FindCoordinator v0-v5: the coordinator of a
// key is the leader of the key's partition of the coordinator's internal
// topic, at its endpoint for the listener the request came in on. The
// first lookup of a coordinator type creates its topic, and is answered
// COORDINATOR_NOT_AVAILABLE until the partition has a leader. Each key
// needs DESCRIBE on its group or transactional id (GROUP_ or
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED), checked before its coordinator
// is looked up.
func (c *Coordinator) handleFindCoordinator(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	if req.Version < 4 {
		n := c.findCoordinator(ctx, rc, req.CoordinatorType, req.CoordinatorKey)
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = n.ErrorCode, n.NodeID, n.Host, n.Port
		if req.Version >= 1 {
			resp.ErrorMessage = n.ErrorMessage
		}
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		resp.Coordinators = append(resp.Coordinators, c.findCoordinator(ctx, rc, req.CoordinatorType, key))
	}
	return resp, nil
}

func (c *Coordinator) findCoordinator(ctx context.Context, rc *wire.RequestContext, keyType int8, key string) kmsg.FindCoordinatorResponseCoordinator {
	out := kmsg.NewFindCoordinatorResponseCoordinator()
	out.Key = key
	fail := func(err *kerr.Error) kmsg.FindCoordinatorResponseCoordinator {
		out.ErrorCode = err.Code
		msg := err.Description
		out.ErrorMessage = &msg
		out.NodeID, out.Host, out.Port = -1, "", -1
		return out
	}
	var resolver CoordinatorResolver
	switch keyType {
	case keyTypeGroup:
		if !groupAllowed(rc, kmsg.ACLOperationDescribe, key) {
			return fail(kerr.GroupAuthorizationFailed)
		}
		resolver = c
	case keyTypeTransaction:
		if !rc.Authorize(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, key) {
			return fail(kerr.TransactionalIDAuthorizationFailed)
		}
		resolver = c.txnResolver()
		if resolver == nil {
			return fail(kerr.CoordinatorNotAvailable)
		}
	default:
		return fail(kerr.InvalidRequest)
	}
	topic, partition, err := resolver.Resolve(ctx, key)
	if err != nil {
		c.log.Warn("coordinator lookup failed", "key_type", keyType, "err", err)
		return fail(kerr.CoordinatorNotAvailable)
	}
	if c.meta == nil {
		return fail(kerr.CoordinatorNotAvailable)
	}
	img := c.meta.Image()
	t, ok := img.Topic(topic)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable)
	}
	ps, ok := t.Partition(partition)
	if !ok || ps.Leader < 0 {
		return fail(kerr.CoordinatorNotAvailable)
	}
	b, ok := img.Broker(ps.Leader)
	if !ok || b.Fenced {
		return fail(kerr.CoordinatorNotAvailable)
	}
	ep, ok := b.Endpoint(rc.Listener)
	if !ok {
		return fail(kerr.CoordinatorNotAvailable)
	}
	out.NodeID, out.Host, out.Port = b.ID, ep.Host, int32(ep.Port)
	return out
}
