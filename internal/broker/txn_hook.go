package broker

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
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

// markerAppendTimeout bounds the commit wait of a transaction marker when
// the caller's context has no deadline.
const markerAppendTimeout = 30 * time.Second

// AppendMarker appends a transaction marker (a control batch built with
// record.BuildEndTxnMarker) to a partition this node leads, with
// coordinator origin, and waits until it is committed (acks=all): the
// receiving side of WriteTxnMarkers. Errors wrap Kafka's codes:
// UNKNOWN_TOPIC_OR_PARTITION for a partition that no longer exists,
// NOT_LEADER_OR_FOLLOWER when this node does not lead it.
//
// A read-only (mirrored, or failing over) partition gets no marker: only
// the mirror writes there, so no transaction of this cluster has records in
// it to commit or abort, and a marker would give the log an offset the
// source does not have, which stops the mirror for good. The marker is
// answered as written, so that the transaction completes.
func (b *Broker) AppendMarker(ctx context.Context, topic string, partition int32, batch []byte) error {
	tp := storage.TopicPartition{Topic: topic, Partition: partition}
	if _, _, known := currentLeader(b.image(), tp); !known {
		return errf(kerr.UnknownTopicOrPartition, "partition %s does not exist", tp)
	}
	p, ok := b.rm.Partition(tp)
	if !ok {
		return errf(kerr.NotLeaderForPartition, "broker %d does not host %s", b.cfg.NodeID, tp)
	}
	deadline := time.Now().Add(markerAppendTimeout)
	if dl, ok := ctx.Deadline(); ok {
		deadline = dl
	}
	info, epoch, err := p.appendAsLeader(batch, storage.OriginCoordinator, -1, -1, true)
	var ro *readOnlyError
	if errors.As(err, &ro) {
		b.log.Info("transaction marker not written to a read-only mirrored partition", "topic", topic, "partition", partition, "reason", ro.reason)
		return nil
	}
	if err != nil || info.LastOffset < 0 {
		return err
	}
	return p.waitCommitted(ctx, deadline, info.LastOffset+1, epoch)
}
