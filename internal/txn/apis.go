package txn

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// APIs are the transaction coordinator's Kafka APIs. InitProducerId is not
// among them: the broker serves it (idempotent producers get their ids
// there) and hands requests with a transactional id to InitProducerID.
// FindCoordinator is the group coordinator's (see Resolve), TxnOffsetCommit
// too, and WriteTxnMarkers is the MarkerService's.
func (c *Coordinator) APIs() []wire.API {
	return []wire.API{
		{Key: kmsg.AddPartitionsToTxn.Int16(), MinVersion: 0, MaxVersion: 5, Handle: c.handleAddPartitionsToTxn},
		{Key: kmsg.AddOffsetsToTxn.Int16(), MinVersion: 0, MaxVersion: 4, Handle: c.handleAddOffsetsToTxn},
		{Key: kmsg.EndTxn.Int16(), MinVersion: 0, MaxVersion: 4, Handle: c.handleEndTxn},
		{Key: kmsg.DescribeTransactions.Int16(), MinVersion: 0, MaxVersion: 0, Handle: c.handleDescribeTransactions},
		{Key: kmsg.ListTransactions.Int16(), MinVersion: 0, MaxVersion: 1, Handle: c.handleListTransactions},
	}
}

// VerifyTransaction is the broker's hook for KIP-890 verification; see
// Verifier.VerifyTransaction.
func (c *Coordinator) VerifyTransaction(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, tps []storage.TopicPartition) []error {
	return c.verifier.VerifyTransaction(ctx, transactionalID, producerID, producerEpoch, tps)
}

// ForgetPartition drops what the verifier cached for a partition; the
// broker calls it when it becomes the partition's leader (markers written
// while another broker led it were not seen here). See Verifier.
func (c *Coordinator) ForgetPartition(topic string, partition int32) {
	c.verifier.ForgetPartition(topic, partition)
}
