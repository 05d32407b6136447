// Package group is kmirror's group coordinator for the classic consumer
// group protocol, stored in the __consumer_offsets topic exactly as Apache
// Kafka stores it.
//
// The package has two layers:
//
//   - A pure state machine (Group.Handle): a group's membership and
//     rebalance protocol as (state, event) → (state, persist?, replies,
//     timers). It does no IO, reads no clock and holds no locks; time comes
//     in with every event and timers are outputs. Tests drive it with tables
//     of events.
//   - A driver on the coordinator runtime (package coordinator): one shard
//     per __consumer_offsets partition this node leads holds the groups and
//     committed offsets of that partition, replays the partition when it
//     becomes leader, writes records through the runtime and installs a
//     transition only after its records are committed.
//
// Invariants:
//   - the committed offsets and group metadata a shard holds are what
//     replaying its partition yields; volatile state (members waiting in a
//     rebalance, sessions) is rebuilt by the protocol after a reload;
//   - a request waiting on the state machine (JoinGroup, SyncGroup) is
//     answered exactly once: by a Reply, or with NOT_COORDINATOR when its
//     shard unloads.
package group
