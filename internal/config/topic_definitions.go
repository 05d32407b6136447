package config

import (
	"fmt"
	"strconv"
	"strings"
)

// MirrorNameConfig is the topic config that makes a topic part of a mirror.
// Its value is the mirror's name, "<mirror>.paused" while paused, or
// "<mirror>.removed" while failing over and "<mirror>.stopped" once failed
// over.
const MirrorNameConfig = "mirror.name"

// topicDefinitions is the table of topic configs. A topic config's Default
// is what applies when neither the topic nor any broker synonym is set; the
// synonyms' defaults agree with it (a test checks).
func topicDefinitions() []Definition {
	t := func(d Definition) Definition { d.Scope = TopicScope; return d }
	return []Definition{
		t(Definition{Name: "cleanup.policy", Type: TypeList, Default: str("delete"), Validator: ListOf("delete", "compact"), Importance: Medium,
			Synonyms: []string{"log.cleanup.policy"},
			Doc:      "'delete' removes old segments once they pass retention.ms or retention.bytes; 'compact' keeps at least the latest record of every key; 'delete,compact' does both."}),
		t(Definition{Name: "compression.type", Type: TypeString, Default: str("producer"), Validator: OneOf(compressionTypes...), Importance: Medium,
			Synonyms: []string{"compression.type"},
			Doc:      "Compression of stored batches: 'producer' keeps what the producer sent; 'uncompressed', 'gzip', 'snappy', 'lz4' or 'zstd' makes the broker recompress to that codec."}),
		t(Definition{Name: "delete.retention.ms", Type: TypeLong, Default: str("86400000"), Validator: AtLeast(0), Importance: Medium,
			Synonyms: []string{"log.cleaner.delete.retention.ms"},
			Doc:      "For compacted topics: how long tombstones and transaction markers stay after compaction reached them, so that a consumer reading from the start within this time sees deletes."}),
		t(Definition{Name: "file.delete.delay.ms", Type: TypeLong, Default: str("60000"), Validator: AtLeast(0), Importance: Medium,
			Synonyms: []string{"log.segment.delete.delay.ms"},
			Doc:      "Delay between removing a segment from the log and deleting its files."}),
		t(Definition{Name: "flush.messages", Type: TypeLong, Default: str(maxLong), Validator: AtLeast(1), Importance: Medium,
			Synonyms: []string{"log.flush.interval.messages"},
			Doc:      "Records appended between two fsyncs of the partition; 1 syncs every append. The default leaves flushing to the operating system and durability to replication."}),
		t(Definition{Name: "flush.ms", Type: TypeLong, Default: str(maxLong), Validator: AtLeast(0), Importance: Medium,
			Synonyms: []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
			Doc:      "Longest time appended records stay unflushed."}),
		t(Definition{Name: "index.interval.bytes", Type: TypeInt, Default: str("4096"), Validator: AtLeast(0), Importance: Medium,
			Synonyms: []string{"log.index.interval.bytes"},
			Doc:      "Log bytes between two offset index entries."}),
		t(Definition{Name: "max.compaction.lag.ms", Type: TypeLong, Default: str(maxLong), Validator: AtLeast(1), Importance: Medium,
			Synonyms: []string{"log.cleaner.max.compaction.lag.ms"},
			Doc:      "Longest time a record may stay uncompacted in a compacted topic."}),
		t(Definition{Name: "max.message.bytes", Type: TypeInt, Default: str("1048588"), Validator: AtLeast(0), Importance: Medium,
			Synonyms: []string{"message.max.bytes"},
			Doc:      "Largest record batch, after compression, the topic accepts; larger produces fail with MESSAGE_TOO_LARGE."}),
		t(Definition{Name: "message.timestamp.type", Type: TypeString, Default: str("CreateTime"), Validator: OneOf("CreateTime", "LogAppendTime"), Importance: Medium,
			Synonyms: []string{"log.message.timestamp.type"},
			Doc:      "Record timestamps kept: the producer's 'CreateTime', or 'LogAppendTime', set by the broker when appending."}),
		t(Definition{Name: "message.timestamp.before.max.ms", Type: TypeLong, Default: str(maxLong), Validator: AtLeast(0), Importance: Medium,
			Synonyms: []string{"log.message.timestamp.before.max.ms"},
			Doc:      "With CreateTime, how far a record's timestamp may lie behind the broker's clock; older records are rejected."}),
		t(Definition{Name: "message.timestamp.after.max.ms", Type: TypeLong, Default: str(maxLong), Validator: AtLeast(0), Importance: Medium,
			Synonyms: []string{"log.message.timestamp.after.max.ms"},
			Doc:      "With CreateTime, how far a record's timestamp may lie ahead of the broker's clock; records further in the future are rejected."}),
		t(Definition{Name: "min.cleanable.dirty.ratio", Type: TypeDouble, Default: str("0.5"), Validator: DoubleBetween(0, 1), Importance: Medium,
			Synonyms: []string{"log.cleaner.min.cleanable.ratio"},
			Doc:      "Share of the log not yet compacted above which the cleaner compacts a compacted topic."}),
		t(Definition{Name: "min.compaction.lag.ms", Type: TypeLong, Default: str("0"), Validator: AtLeast(0), Importance: Medium,
			Synonyms: []string{"log.cleaner.min.compaction.lag.ms"},
			Doc:      "Minimum age of a record before compaction may remove it."}),
		t(Definition{Name: "min.insync.replicas", Type: TypeInt, Default: str("1"), Validator: AtLeast(1), Importance: Medium,
			Synonyms: []string{"min.insync.replicas"},
			Doc:      "Least number of in-sync replicas that must hold a write for an acks=all produce to succeed; with fewer, such produces fail with NOT_ENOUGH_REPLICAS."}),
		t(Definition{Name: "preallocate", Type: TypeBoolean, Default: str("false"), Importance: Medium,
			Synonyms: []string{"log.preallocate"},
			Doc:      "Whether the file of a new segment is preallocated."}),
		t(Definition{Name: "retention.bytes", Type: TypeLong, Default: str("-1"), Importance: Medium,
			Synonyms: []string{"log.retention.bytes"},
			Doc:      "With cleanup.policy=delete, the largest size of a partition before its oldest segments are deleted; -1 means no limit."}),
		t(Definition{Name: "retention.ms", Type: TypeLong, Default: str("604800000"), Validator: AtLeast(-1), Importance: Medium,
			Synonyms: []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
			Doc:      "With cleanup.policy=delete, how long records are kept before their segment may be deleted; -1 keeps them forever."}),
		t(Definition{Name: "segment.bytes", Type: TypeInt, Default: str("1073741824"), Validator: AtLeast(14), Importance: Medium,
			Synonyms: []string{"log.segment.bytes"},
			Doc:      "Largest size of a segment file. Retention and compaction work on whole segments, so smaller segments mean finer-grained cleanup and more files."}),
		t(Definition{Name: "segment.index.bytes", Type: TypeInt, Default: str("10485760"), Validator: AtLeast(4), Importance: Medium,
			Synonyms: []string{"log.index.size.max.bytes"},
			Doc:      "Largest size of a segment's offset index."}),
		t(Definition{Name: "segment.jitter.ms", Type: TypeLong, Default: str("0"), Validator: AtLeast(0), Importance: Medium,
			Synonyms: []string{"log.roll.jitter.ms", "log.roll.jitter.hours"},
			Doc:      "Largest random amount subtracted from segment.ms, to avoid rolling many segments at once."}),
		t(Definition{Name: "segment.ms", Type: TypeLong, Default: str("604800000"), Validator: AtLeast(1), Importance: Medium,
			Synonyms: []string{"log.roll.ms", "log.roll.hours"},
			Doc:      "Time after which the active segment is rolled even if not full, so that retention and compaction can reach its records."}),
		t(Definition{Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: str("false"), Importance: Medium,
			Synonyms: []string{"unclean.leader.election.enable"},
			Doc:      "Whether an out-of-sync replica may become leader when no in-sync one is left, at the cost of losing acknowledged records."}),
		t(Definition{Name: "leader.replication.throttled.replicas", Type: TypeList, Default: str(""), Validator: throttledReplicasValidator, Importance: Medium,
			Doc: "Replicas whose replication is throttled on the leader side, as partition:broker pairs (0:101,1:102) or * for all."}),
		t(Definition{Name: "follower.replication.throttled.replicas", Type: TypeList, Default: str(""), Validator: throttledReplicasValidator, Importance: Medium,
			Doc: "Replicas whose replication is throttled on the follower side, as partition:broker pairs (0:101,1:102) or * for all."}),
		t(Definition{Name: MirrorNameConfig, Type: TypeString, Importance: Medium, Internal: true, Kmirror: true,
			Doc: "kmirror: the mirror this topic belongs to. Set only by the mirror APIs: AddTopicsToMirror sets the mirror's name (the topic is then read-only and copied from the source), PauseMirrorTopics appends '.paused', RemoveTopicsFromMirror appends '.removed' (failover: each partition becomes writable when it reaches STOPPED), which becomes '.stopped' once every partition is STOPPED (the failover is complete). Clients cannot set it with CreateTopics or AlterConfigs."}),
	}
}

// throttledReplicasValidator accepts "*" or partition:broker pairs.
var throttledReplicasValidator = ValidatorFunc("[partitionId]:[brokerId],[partitionId]:[brokerId],... or *", func(v Value) error {
	items := v.List()
	if len(items) == 1 && items[0] == "*" {
		return nil
	}
	for _, it := range items {
		p, b, ok := strings.Cut(it, ":")
		if !ok {
			return fmt.Errorf("%q is not partition:broker", it)
		}
		if _, err := strconv.ParseInt(p, 10, 32); err != nil {
			return fmt.Errorf("%q has an invalid partition %q", it, p)
		}
		if _, err := strconv.ParseInt(b, 10, 32); err != nil {
			return fmt.Errorf("%q has an invalid broker id %q", it, b)
		}
	}
	return nil
})
