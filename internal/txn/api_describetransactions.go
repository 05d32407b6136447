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
// others, TRANSACTIONAL_ID_NOT_FOUND for unknown ones. Each id needs
// DESCRIBE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), and the partitions of
// topics without DESCRIBE are left out of its answer, as Kafka does.
func (c *Coordinator) handleDescribeTransactions(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.DescribeTransactionsRequest)
	if !ok {
		return nil, fmt.Errorf("DescribeTransactions handler got %T", kreq)
	}
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	topics := map[string]bool{}
	describable := func(topic string) bool {
		ok, done := topics[topic]
		if !done {
			ok = rc.Authorize(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, topic)
			topics[topic] = ok
		}
		return ok
	}
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.ProducerID, st.ProducerEpoch, st.StartTimestamp = NoProducerID, NoProducerEpoch, -1
		if !txnIDAllowed(rc, kmsg.ACLOperationDescribe, id) {
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
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
				if !describable(g.topic) {
					continue
				}
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
