// Package txn is kmirror's transaction coordinator: it owns the
// transactional ids whose partition of __transaction_state this node leads
// and drives their transactions (InitProducerId, AddPartitionsToTxn,
// AddOffsetsToTxn, EndTxn), writes the COMMIT and ABORT markers into the
// partitions of a transaction (WriteTxnMarkers to their leaders, or a direct
// call for partitions led here), aborts transactions that outlive their
// timeout and forgets idle ids. It stores its state in __transaction_state
// exactly as Apache Kafka does (kmsg's TxnMetadataKey and TxnMetadataValue),
// so that the topic is byte-compatible with Kafka's.
//
// The package has three layers:
//
//   - A pure state machine (machine.go): a transactional id's metadata
//     (Txn) and an event give the metadata after it, whether it must be
//     written, the answer and the markers to send. No IO, no clock, no
//     locks: tables of events test it.
//   - A driver on the coordinator runtime (package coordinator): one shard
//     per __transaction_state partition this node leads holds the Txn of
//     every id of that partition, replays the partition when it becomes
//     leader, writes a transition's record and installs it only once the
//     record is committed, and runs the marker jobs and timers.
//   - The broker side of transactions, served on every broker: the
//     WriteTxnMarkers service (NewMarkerService) that appends markers to the
//     partitions this broker leads, and the Verifier that checks, before a
//     transactional batch is appended, that its partition belongs to the
//     producer's ongoing transaction (KIP-890 part 1).
//
// Invariants:
//   - the Txn a shard holds for an id is what replaying the partition
//     yields: a transition changes it only after its record is committed,
//     and a write whose fate is unknown makes the runtime reload;
//   - a transaction in PrepareCommit or PrepareAbort has exactly one marker
//     job while its partition is loaded here; the job ends by writing
//     CompleteCommit or CompleteAbort, or when the shard unloads (the next
//     leader's load restarts it);
//   - markers carry the producer epoch of the prepared transaction and the
//     coordinator epoch of the partition (its leader epoch), so that a
//     partition refuses the markers of a zombie coordinator or producer;
//   - PrepareEpochFence is never stored nor held: a fence bumps the epoch
//     and writes PrepareAbort in one step, as Kafka's pending fence does.
package txn
