package txn

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// handleDescribeTransactions serves DescribeTransactions v0: the state of
// each transactional id this node coordinates; NOT_COORDINATOR for the
// others, TRANSACTIONAL_ID_NOT_FOUND for unknown ones.
func (c *Coordinator) handleDescribeTransactions(ctx context.Context, _ *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.DescribeTransactionsRequest)
	if !ok {
		return nil, fmt.Errorf("DescribeTransactions handler got %T", kreq)
	}
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.ProducerID, st.ProducerEpoch, st.StartTimestamp = NoProducerID, NoProducerEpoch, -1
		t, err := c.describe(ctx, id)
		switch {
		case err != nil:
			st.ErrorCode = err.Code
		default:
			st.State = t.State.String()
			st.TimeoutMillis = t.TimeoutMs
			st.StartTimestamp = t.StartTime
			st.ProducerID, st.ProducerEpoch = t.ProducerID, t.ProducerEpoch
			for _, g := range groupByTopic(t.Partitions) {
				rt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				rt.Topic, rt.Partitions = g.topic, g.partitions
				st.Topics = append(st.Topics, rt)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}

func (c *Coordinator) describe(ctx context.Context, id string) (*Txn, *kerr.Error) {
	if id == "" {
		return nil, kerr.InvalidRequest
	}
	t, err := c.lookup(ctx, id)
	switch {
	case err != nil:
		return nil, kafkaError(err)
	case t == nil:
		return nil, kerr.TransactionalIDNotFound
	}
	return t, nil
}
