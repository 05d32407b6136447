package txn

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// handleEndTxn serves EndTxn v0-v4: PrepareCommit or PrepareAbort is
// written and the client answered; the markers and the completion follow in
// the background, and until they are done the transactional id answers
// CONCURRENT_TRANSACTIONS. It needs WRITE on the transactional id.
func (c *Coordinator) handleEndTxn(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.EndTxnRequest)
	if !ok {
		return nil, fmt.Errorf("EndTxn handler got %T", kreq)
	}
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if !txnIDAllowed(rc, kmsg.ACLOperationWrite, req.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	if req.TransactionalID == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	tr, err := c.run(ctx, req.TransactionalID, EndTxnEvent{
		TransactionalID: req.TransactionalID,
		ProducerID:      req.ProducerID,
		ProducerEpoch:   req.ProducerEpoch,
		Commit:          req.Commit,
		Now:             c.nowMs(),
	})
	if err != nil {
		resp.ErrorCode = writeError(err).Code
		return resp, nil
	}
	resp.ErrorCode = errCode(oldFenced(tr.Err, req.Version, 2))
	return resp, nil
}
