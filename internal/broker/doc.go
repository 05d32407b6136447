// Package broker is kmirror's data plane: the ReplicaManager that owns the
// partitions this node hosts (their logs, leadership, high watermark and the
// waits on them), and the Kafka APIs a client listener serves on top of it —
// Produce, Fetch with incremental fetch sessions, ListOffsets,
// OffsetForLeaderEpoch, Metadata, DescribeConfigs, DeleteRecords,
// DescribeCluster, DescribeLogDirs, DescribeProducers, InitProducerId — and
// the admin APIs it forwards to the active controller (CreateTopics,
// DeleteTopics, CreatePartitions, AlterConfigs, IncrementalAlterConfigs,
// ElectLeaders).
//
// The layering:
//
//   - broker.go: Broker (construction, lifecycle, the list of served APIs).
//   - replica_manager.go, partition.go: the partitions, driven by metadata
//     deltas (the ReplicaManager is a metadata.Publisher); Partition is the
//     only path by which anything appends to or reads a local log, so that
//     leadership, the read-only state of mirrored topics and the high
//     watermark are checked and maintained in one place.
//   - delayed.go: change notifiers and the waits of long-poll fetches and
//     acks=all produces, without goroutines per request and without polling.
//   - replication: replica_fetchers.go points the partitions this node
//     follows at their leaders through package replication's fetchers (a
//     Partition is the fetcher's Target); partition_isr.go is the leader's
//     side — follower positions, the high watermark, ISR expansion and
//     shrinking — and alter_partition.go sends the ISR changes to the
//     controller; isr_checks.go runs the periodic shrink check.
//   - one file per API (produce.go, fetch.go, ...); fetch_session.go holds
//     the KIP-227 session cache and fetch_encode.go the streamed Fetch
//     response encoder that lets the server send records with sendfile.
//   - coordinator_host.go: the coordinator.Host the coordinator runtime
//     (group, transaction and mirror coordinators) uses for its internal
//     topics.
//
// Every per-partition failure becomes the Kafka error code of that
// partition in the response; a handler returns an error only when the
// request cannot be answered at all (and for acks=0 produces that failed,
// where Kafka closes the connection to make the client refresh metadata).
package broker
