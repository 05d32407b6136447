package txn

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/storage"
)

// run applies ev to transactional id on the shard that owns it: the
// transition's record is written, and the transition installed and
// returned once the record is committed. err is set when the operation
// could not run or its write failed (the state is then unchanged, or
// reloaded from the log when the write's fate is unknown).
func (c *Coordinator) run(ctx context.Context, id string, ev Event) (Transition, error) {
	var out Transition
	err := c.rt.Write(ctx, c.CoordinatorFor(id), func(s *shard) (coordinator.Result, error) {
		tr := Handle(s.txns[id], ev)
		if tr.Next == nil {
			return coordinator.Result{Apply: func(int64) { out = tr }}, nil
		}
		return coordinator.Result{
			Records: []coordinator.Record{txnRecord(tr.Next)},
			Apply: func(int64) {
				s.install(tr)
				out = tr
			},
		}, nil
	})
	return out, err
}

// lookup returns a copy of the metadata of id (nil if unknown).
func (c *Coordinator) lookup(ctx context.Context, id string) (*Txn, error) {
	var out *Txn
	err := c.rt.Read(ctx, c.CoordinatorFor(id), func(s *shard) error {
		if t := s.txns[id]; t != nil {
			out = t.clone()
		}
		return nil
	})
	return out, err
}

// verify answers whether tps are part of the producer's transaction (see
// Verify), reading the shard that owns id.
func (c *Coordinator) verify(ctx context.Context, id string, pid int64, epoch int16, tps []storage.TopicPartition) (*kerr.Error, []*kerr.Error, error) {
	if id == "" {
		return kerr.InvalidRequest, nil, nil
	}
	var top *kerr.Error
	var per []*kerr.Error
	err := c.rt.Read(ctx, c.CoordinatorFor(id), func(s *shard) error {
		top, per = Verify(s.txns[id], id, pid, epoch, tps)
		return nil
	})
	return top, per, err
}

// kafkaError returns the Kafka error err wraps, UNKNOWN_SERVER_ERROR if
// none. The runtime's own refusals come out as themselves.
func kafkaError(err error) *kerr.Error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return kerr.RequestTimedOut
	}
	return kerr.UnknownServerError
}

// writeError maps a failed __transaction_state operation to what the
// client is told, as Kafka's TransactionStateManager does: problems of the
// partition's replication are COORDINATOR_NOT_AVAILABLE (retriable after
// looking the coordinator up again), lost leadership is NOT_COORDINATOR.
func writeError(err error) *kerr.Error {
	switch ke := kafkaError(err); ke {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError, kerr.FencedLeaderEpoch:
		return kerr.NotCoordinator
	case kerr.MessageTooLarge, kerr.RecordListTooLarge:
		return kerr.UnknownServerError
	default:
		return ke
	}
}

// oldFenced is PRODUCER_FENCED for clients that know it, and
// INVALID_PRODUCER_EPOCH for request versions from before KIP-588.
func oldFenced(err *kerr.Error, version, fencedSince int16) *kerr.Error {
	if err == kerr.ProducerFenced && version < fencedSince {
		return kerr.InvalidProducerEpoch
	}
	return err
}

func errCode(err *kerr.Error) int16 {
	if err == nil {
		return 0
	}
	return err.Code
}
