package txn

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// producerIDAttempts bounds how often InitProducerId allocates a producer id
// because the state it found needed one; beyond it the client retries.
const producerIDAttempts = 3

// InitProducerID answers an InitProducerId request (v0-v5) that carries a
// transactional id; the broker's handler calls it. It gives the producer
// its id and a bumped epoch, fencing older producers of the same
// transactional id, with Kafka's error codes: INVALID_REQUEST,
// INVALID_TRANSACTION_TIMEOUT, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// CONCURRENT_TRANSACTIONS (a transaction is being completed, or was just
// aborted to let this producer in: retry), PRODUCER_FENCED
// (INVALID_PRODUCER_EPOCH before v4).
func (c *Coordinator) InitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.Version = req.Version
	resp.ProducerID, resp.ProducerEpoch = NoProducerID, NoProducerEpoch
	fail := func(err *kerr.Error) *kmsg.InitProducerIDResponse {
		resp.ErrorCode = err.Code
		return resp
	}
	expPID, expEpoch := NoProducerID, NoProducerEpoch
	if req.Version >= 3 {
		expPID, expEpoch = req.ProducerID, req.ProducerEpoch
	}
	if (expPID == NoProducerID) != (expEpoch == NoProducerEpoch) {
		return fail(kerr.InvalidRequest)
	}
	if req.TransactionalID == nil {
		// Not a transactional producer: any fresh id will do.
		id, err := c.nextProducerID(ctx)
		if err != nil {
			return fail(kafkaError(err))
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return resp
	}
	id := *req.TransactionalID
	switch {
	case id == "":
		return fail(kerr.InvalidRequest)
	case req.TransactionTimeoutMillis <= 0 || req.TransactionTimeoutMillis > c.cfg.maxTimeoutMs():
		return fail(kerr.InvalidTransactionTimeout)
	}
	newPID := NoProducerID
	for range producerIDAttempts {
		tr, err := c.run(ctx, id, InitProducerIDEvent{
			TransactionalID:    id,
			TimeoutMs:          req.TransactionTimeoutMillis,
			MaxTimeoutMs:       c.cfg.maxTimeoutMs(),
			ExpectedProducerID: expPID,
			ExpectedEpoch:      expEpoch,
			NewProducerID:      newPID,
			Now:                c.nowMs(),
		})
		if err != nil {
			return fail(writeError(err))
		}
		if tr.NeedProducerID {
			if newPID, err = c.nextProducerID(ctx); err != nil {
				return fail(kafkaError(err))
			}
			continue
		}
		if tr.Err != nil {
			return fail(oldFenced(tr.Err, req.Version, 4))
		}
		resp.ProducerID, resp.ProducerEpoch = tr.ProducerID, tr.ProducerEpoch
		c.log.Info("initialized transactional producer", "transactional_id", id,
			"producer_id", tr.ProducerID, "producer_epoch", tr.ProducerEpoch)
		return resp
	}
	return fail(kerr.ConcurrentTransactions)
}

// nextProducerID allocates a producer id, waiting at most the request
// timeout for a block from the controller.
func (c *Coordinator) nextProducerID(ctx context.Context) (int64, error) {
	if c.deps.ProducerIDs == nil {
		return NoProducerID, kerr.CoordinatorNotAvailable
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	return c.deps.ProducerIDs.NextProducerID(ctx)
}
