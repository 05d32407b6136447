// Package controller is kmirror's active controller: the one node of the
// controller quorum that validates cluster-changing requests (topic creation
// and deletion, partitions, configs, producer-id blocks, broker registration
// and heartbeats) and turns them into metadata records.
//
// Every controller node runs a Controller; only the one whose quorum member
// is the Raft leader, and that has passed a barrier since it became leader,
// acts ("active"). The others answer NOT_CONTROLLER, and brokers reach the
// active one through a Channel, which works the same in-process and over
// the network.
//
// The decisions are pure functions from the current metadata image and a
// request to records and a response (create_topics.go, delete_topics.go,
// election.go, ...), table-tested without Raft. The driver (controller.go)
// runs them one at a time and proposes their records.
//
// Invariants:
//   - Decisions are serialised by Controller.mu, and a decision's records
//     are committed and applied (quorum.Propose returns only then) before
//     the next decision reads the image. So every decision sees the latest
//     image plus everything this controller proposed before it.
//   - A decision is taken only while active: the quorum leader, after a
//     barrier, with broker sessions rebuilt from that image. Losing
//     leadership makes proposals fail with NOT_CONTROLLER.
//   - Replay rules in package metadata are the last line of defence: a
//     record that became invalid (a second proposal after an outcome was
//     unknown) is rejected as a whole entry on every node, never half
//     applied. Producer-id blocks in particular can never overlap, because
//     the counter in the image only moves forward.
//   - Broker state that is not in the metadata log (heartbeat times,
//     reported metadata offsets) lives only on the active controller and is
//     rebuilt on activation, with every session starting fresh (a grace
//     period of one session timeout).
package controller
