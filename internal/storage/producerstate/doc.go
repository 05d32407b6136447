// Package producerstate keeps the producer state of one partition, as Kafka's
// ProducerStateManager does: per producer id its epoch, the sequence ranges
// of its last five batches (to answer retries with their original offsets),
// the coordinator epoch of its last transaction marker and the first offset
// of its ongoing transaction. From that state it derives the first unstable
// offset (which bounds the last stable offset, LSO) and the entries of the
// aborted-transaction index (.txnindex) that READ_COMMITTED fetches read.
//
// Invariants the package keeps:
//
//   - The state equals a replay of the log from its start (or from the
//     snapshot it was loaded from) up to MapEndOffset. Every replica reaches
//     the same state from the same bytes, whatever the origin of the append,
//     because OriginReplication applies batches without validating them.
//   - A producer has an ongoing transaction exactly when its entry has
//     CurrentTxnFirstOffset >= 0; such an entry never expires.
//   - A producer entry keeps at most five batches, oldest first, and all of
//     them carry the entry's current epoch (an epoch change clears them).
//   - A MIRROR_PID_RESET control batch (type 7) removes every producer entry
//     and every ongoing transaction at its position in the log: batches before
//     it are applied first, batches after it start from an empty state.
//   - A completed transaction holds the LSO back until its marker is below
//     the high watermark (OnHighWatermarkUpdated).
//
// Snapshots use Kafka's producer snapshot file format (version 1), so a
// partition directory written by kmirror can be read by Kafka's tools and the
// other way round.
package producerstate
