package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// initProducerIDWait bounds how long InitProducerId waits for a block of
// producer ids from the controller before answering a retriable error.
const initProducerIDWait = 5 * time.Second

// handleInitProducerID serves InitProducerId v0–v5. Without a transactional
// id the producer gets a fresh producer id and epoch 0 (an idempotent
// producer, as Kafka answers whatever id it had); with one, the
// transaction coordinator answers, and until it exists the answer is
// COORDINATOR_NOT_AVAILABLE.
func (b *Broker) handleInitProducerID(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.InitProducerIDRequest)
	if !ok {
		return nil, requestTypeError("InitProducerId", kreq)
	}
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if err := authorizeInitProducerID(rc, req); err != nil {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	if (req.ProducerID == -1) != (req.ProducerEpoch == -1) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if req.TransactionalID != nil {
		if tc := b.txn.get(); tc != nil {
			r := tc.InitProducerID(ctx, req)
			r.Version = req.Version
			return r, nil
		}
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	wctx, cancel := context.WithTimeout(ctx, initProducerIDWait)
	defer cancel()
	id, err := b.NextProducerID(wctx)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}

// authorizeInitProducerID is Kafka's check of InitProducerId: WRITE on the
// transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), or for an
// idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE on at least
// one topic (CLUSTER_AUTHORIZATION_FAILED), since an id is worth nothing to
// a principal that may write nowhere.
func authorizeInitProducerID(rc *wire.RequestContext, req *kmsg.InitProducerIDRequest) *kerr.Error {
	if !authorizing(rc) {
		return nil
	}
	if req.TransactionalID != nil {
		if !rc.Authorize(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *req.TransactionalID) {
			return kerr.TransactionalIDAuthorizationFailed
		}
		return nil
	}
	if rc.AuthorizeCluster(kmsg.ACLOperationIdempotentWrite) || rc.AuthorizeAny(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic) {
		return nil
	}
	return kerr.ClusterAuthorizationFailed
}
