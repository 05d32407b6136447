// Package coordinator is the runtime shared by kmirror's log-backed
// coordinators (groups on __consumer_offsets, transactions on
// __transaction_state, mirrors on __mirror_state), after Kafka's
// coordinator-common runtime.
//
// A coordinator's state is partitioned like its internal compacted topic:
// one shard per partition. The runtime hosts a shard on every partition
// this node leads. When the node becomes leader it replays the partition
// into a fresh shard; then it serves operations on the shard, one at a
// time, on the shard's own goroutine. A write operation decides, from the
// shard's state, what records to write and what to do once they are
// committed; the runtime appends them as one batch, waits until the batch
// is committed (high watermark past it), and only then runs the
// operation's Apply. When the node stops leading the partition the shard is
// dropped and its pending operations fail with NOT_COORDINATOR.
//
// Invariants:
//   - a shard's persistent state is exactly the replay of its partition's
//     log up to the last committed write: state changes only by replay at
//     load, or by Apply after the batch that carries them is committed;
//   - a write that fails before anything reached the log leaves the state
//     as it was (the operation's OnError may react); a write whose fate is
//     unknown (timeout, storage error) makes the shard reload from the log;
//   - operations and timers of one shard never run concurrently, and none
//     runs after the shard is unloaded;
//   - a request for a partition that is loading is answered
//     COORDINATOR_LOAD_IN_PROGRESS, for one not led here NOT_COORDINATOR.
package coordinator
