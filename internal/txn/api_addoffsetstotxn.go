package txn

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleAddOffsetsToTxn serves AddOffsetsToTxn v0-v4: the group's partition
// of __consumer_offsets joins the transaction, so that the offsets the
// producer then commits with TxnOffsetCommit get the transaction's marker.
// It needs WRITE on the transactional id, then READ on the group.
func (c *Coordinator) handleAddOffsetsToTxn(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.AddOffsetsToTxnRequest)
	if !ok {
		return nil, fmt.Errorf("AddOffsetsToTxn handler got %T", kreq)
	}
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !txnIDAllowed(rc, kmsg.ACLOperationWrite, req.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	case !rc.Authorize(kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, req.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if req.TransactionalID == "" {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	tp := storage.TopicPartition{Topic: OffsetsTopic, Partition: c.offsetsPartition(req.Group)}
	tr, err := c.run(ctx, req.TransactionalID, AddPartitionsEvent{
		TransactionalID: req.TransactionalID,
		ProducerID:      req.ProducerID,
		ProducerEpoch:   req.ProducerEpoch,
		Partitions:      []storage.TopicPartition{tp},
		Now:             c.nowMs(),
	})
	if err != nil {
		resp.ErrorCode = writeError(err).Code
		return resp, nil
	}
	resp.ErrorCode = errCode(oldFenced(tr.Err, req.Version, 2))
	return resp, nil
}
