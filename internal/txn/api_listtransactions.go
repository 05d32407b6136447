package txn

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// handleListTransactions serves ListTransactions v0-v1: the transactional
// ids this node coordinates, filtered by state names (unknown names are
// listed back; asking only for unknown states matches nothing), producer
// ids and (v1) a minimum running time. While a partition is loading the
// answer is COORDINATOR_LOAD_IN_PROGRESS. Only the ids the principal may
// DESCRIBE are listed.
func (c *Coordinator) handleListTransactions(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.ListTransactionsRequest)
	if !ok {
		return nil, fmt.Errorf("ListTransactions handler got %T", kreq)
	}
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	states := map[State]bool{}
	for _, name := range req.StateFilters {
		if st, ok := ParseState(name); ok {
			states[st] = true
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	if len(req.StateFilters) > 0 && len(states) == 0 {
		return resp, nil
	}
	pids := map[int64]bool{}
	for _, p := range req.ProducerIDFilters {
		pids[p] = true
	}
	minDuration := int64(-1)
	if req.Version >= 1 {
		minDuration = req.DurationFilterMillis
	}
	now := c.nowMs()
	loading, err := c.rt.ReadAll(ctx, func(_ int32, s *shard) error {
		for _, t := range s.txns {
			switch {
			case len(states) > 0 && !states[t.State]:
			case len(pids) > 0 && !pids[t.ProducerID]:
			case minDuration >= 0 && now-t.StartTime <= minDuration:
			case !txnIDAllowed(rc, kmsg.ACLOperationDescribe, t.ID):
			default:
				st := kmsg.NewListTransactionsResponseTransactionState()
				st.TransactionalID, st.ProducerID, st.TransactionState = t.ID, t.ProducerID, t.State.String()
				resp.TransactionStates = append(resp.TransactionStates, st)
			}
		}
		return nil
	})
	if err != nil {
		resp.ErrorCode = kafkaError(err).Code
		return resp, nil
	}
	if loading {
		// As Kafka: no partial list while a partition is loading.
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		resp.TransactionStates = nil
		return resp, nil
	}
	slices.SortFunc(resp.TransactionStates, func(a, b kmsg.ListTransactionsResponseTransactionState) int {
		return strings.Compare(a.TransactionalID, b.TransactionalID)
	})
	return resp, nil
}
