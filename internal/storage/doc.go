// Package storage is kmirror's partition log engine: Kafka's on-disk format
// (segments of v2 record batches with sparse offset and time indexes,
// aborted-transaction indexes, producer snapshots, the leader epoch
// checkpoint, partition metadata) and the operations a broker, a follower and
// a cluster mirror need on top of it.
//
// The layering, bottom up:
//
//   - offset_index.go, time_index.go, index_file.go: the memory-mapped
//     fixed-size-entry index files (.index, .timeindex).
//   - segment.go and friends: one base offset's files (.log, .index,
//     .timeindex, .txnindex), appended under the Log's lock and read
//     concurrently by position; reference counted so that a read result
//     outlives retention or truncation of its segment.
//   - epoch_cache.go: the leader epoch cache (leader-epoch-checkpoint).
//   - log.go and log_*.go: the partition Log (append as leader or follower,
//     read, truncate, retention, recovery, offsets by timestamp).
//   - manager*.go: the Manager that owns log directories, loads partitions,
//     runs the background flush/checkpoint/retention tasks and writes the
//     per-directory checkpoint files and meta.properties.
//   - cleaner*.go, offset_map.go: log compaction, on the segment API of
//     segment_swap.go (read a segment's batches, write replacement segments,
//     swap them in crash-safely); cleaner threads are owned by the Manager.
//
// Files are byte-compatible with Apache Kafka's; docs/storage.md describes
// every format.
package storage
