package replication

// Target is where fetched data goes: the local replica of a partition (a
// follower's Partition in package broker; for the mirror, the mirrored
// partition on its leader). A fetcher calls a Target from one goroutine at a
// time, never after RemovePartitions for it returned.
type Target interface {
	// Append appends batches as the source wrote them: offsets, leader
	// epochs, producer ids and sequences unchanged. It returns the last
	// offset appended, -1 if nothing was (an incomplete trailing batch is
	// ignored). On error nothing was appended.
	Append(batches []byte) (lastOffset int64, err error)
	// Truncate removes every offset >= offset.
	Truncate(offset int64) error
	// TruncateFullyAndStartAt empties the log and restarts it at offset.
	TruncateFullyAndStartAt(offset int64) error
	// LogStartOffset and LogEndOffset are the local log's bounds.
	LogStartOffset() int64
	LogEndOffset() int64
	// LatestEpoch returns the leader epoch of the last batch in the local
	// log's epoch cache, false if the cache is empty.
	LatestEpoch() (int32, bool)
	// EndOffsetForEpoch answers OffsetForLeaderEpoch on the local log: the
	// largest epoch <= epoch it knows and that epoch's end offset, (-1, -1)
	// when there is none.
	EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64)
	// SetHighWatermark passes on the source's high watermark (a follower
	// keeps min(it, its log end); a mirror ignores it).
	SetHighWatermark(hw int64)
	// MaybeIncrementLogStartOffset passes on the source's log start offset
	// (a follower follows the leader's DeleteRecords and retention; a mirror
	// may ignore it).
	MaybeIncrementLogStartOffset(offset int64)
}
