package coordinator

import "context"

// PartitionLog is one partition of an internal topic as a coordinator sees
// it. The broker implements it over its replica manager.
type PartitionLog interface {
	// Read returns whole record batches starting with the one that holds
	// offset (offsets below the log start read from the log start), at
	// least one batch if any and up to about maxBytes, together with the
	// log end offset. A coordinator reads up to the log end, not the high
	// watermark: as leader, everything in its log will be committed.
	Read(ctx context.Context, offset int64, maxBytes int) (batches []byte, logEnd int64, err error)
	// Append appends one batch with coordinator origin (producer epochs and
	// coordinator epochs are checked, sequence numbers are not; transaction
	// markers are allowed) if this node still leads the partition at
	// leaderEpoch, then waits until the batch is committed (the high
	// watermark passed it, as for acks=all) and returns its base offset.
	// Errors wrap Kafka's codes: NOT_LEADER_OR_FOLLOWER or
	// FENCED_LEADER_EPOCH when leadership moved (nothing was written),
	// MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, CORRUPT_MESSAGE,
	// INVALID_RECORD, NOT_ENOUGH_REPLICAS and producer errors when the batch
	// was refused (nothing was written), REQUEST_TIMED_OUT or the context's
	// error when the wait for the commit ended early.
	Append(ctx context.Context, batch []byte, leaderEpoch int32) (baseOffset int64, err error)
}

// Host is what the broker offers a coordinator runtime: its internal-topic
// partitions, who leads them, and topic creation.
type Host interface {
	// PartitionLog returns the local log of a partition of topic.
	PartitionLog(topic string, partition int32) (PartitionLog, error)
	// WatchLeadership calls fn for every partition of topic this node leads
	// when the call is made, and then whenever it starts or stops leading
	// one, or its leader epoch changes. Calls are in order for a partition
	// and fn must not block. stop ends the watch; no call happens after it
	// returns.
	WatchLeadership(topic string, fn func(partition int32, leader bool, leaderEpoch int32)) (stop func())
	// EnsureTopic creates the internal topic through the controller if it
	// does not exist yet; an existing topic is success.
	EnsureTopic(ctx context.Context, spec TopicSpec) error
}

// TopicSpec describes an internal topic to create.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
}
