package broker

import (
	"context"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
)

// TransactionCoordinator is what the broker needs from the transaction
// coordinator (issue 5), which plugs in with SetTransactionCoordinator.
// Until one is set, InitProducerId with a transactional id answers
// COORDINATOR_NOT_AVAILABLE and transactional produces are refused with
// INVALID_TXN_STATE, as Kafka refuses a produce to a partition that was
// not added to the transaction.
type TransactionCoordinator interface {
	// InitProducerID answers an InitProducerId request that carries a
	// transactional id.
	InitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse
	// VerifyTransaction checks, before a transactional produce is appended,
	// that each partition was added to the producer's ongoing transaction
	// (KIP-890). It returns one error per partition (nil: verified), each
	// wrapping the Kafka error to answer.
	VerifyTransaction(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, tps []storage.TopicPartition) []error
}

// txnHook holds the transaction coordinator once it is set.
type txnHook struct {
	tc atomic.Pointer[TransactionCoordinator]
}

func (h *txnHook) get() TransactionCoordinator {
	if p := h.tc.Load(); p != nil {
		return *p
	}
	return nil
}

// SetTransactionCoordinator plugs the transaction coordinator in (nil
// removes it).
func (b *Broker) SetTransactionCoordinator(tc TransactionCoordinator) {
	if tc == nil {
		b.txn.tc.Store(nil)
		return
	}
	b.txn.tc.Store(&tc)
}
