package group

import (
	"context"

	"github.com/kmirror/kmirror/internal/coordinator"
)

// CompleteTransaction ends a producer's transaction in a partition of
// __consumer_offsets: it writes the COMMIT or ABORT marker (with the
// transaction coordinator's epoch, which the log checks) through the
// partition's coordinator, then makes the offsets the producer committed in
// the transaction (TxnOffsetCommit) count, or drops them. The broker's
// WriteTxnMarkers handler calls it for __consumer_offsets partitions.
// Errors wrap Kafka's codes: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// or what the log refused the marker with.
func (c *Coordinator) CompleteTransaction(ctx context.Context, partition int32, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool) error {
	return c.rt.Write(ctx, partition, func(s *shard) (coordinator.Result, error) {
		m := coordinator.Marker{ProducerID: producerID, ProducerEpoch: producerEpoch, CoordinatorEpoch: coordinatorEpoch, Commit: commit}
		return coordinator.Result{Marker: &m, Apply: func(int64) { s.completeTxn(producerID, commit) }}, nil
	})
}
