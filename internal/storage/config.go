package storage

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/kmirror/kmirror/internal/record"
)

// CleanupPolicy is a topic's cleanup.policy: delete old segments by
// retention, compact them to the latest value per key, or both.
type CleanupPolicy struct {
	Delete, Compact bool
}

// String returns Kafka's spelling: "delete", "compact" or "compact,delete".
func (p CleanupPolicy) String() string {
	switch {
	case p.Delete && p.Compact:
		return "compact,delete"
	case p.Compact:
		return "compact"
	case p.Delete:
		return "delete"
	}
	return ""
}

// ParseCleanupPolicy parses a cleanup.policy value: a comma-separated list of
// "delete" and "compact" (in any order, spaces allowed).
func ParseCleanupPolicy(s string) (CleanupPolicy, error) {
	var p CleanupPolicy
	for _, part := range strings.Split(s, ",") {
		switch strings.TrimSpace(strings.ToLower(part)) {
		case "delete":
			p.Delete = true
		case "compact":
			p.Compact = true
		default:
			return CleanupPolicy{}, fmt.Errorf("cleanup.policy %q: unknown policy %q", s, part)
		}
	}
	return p, nil
}

// Compression types a topic's compression.type may name besides the codecs.
const (
	// CompressionProducer keeps whatever codec the producer used.
	CompressionProducer = "producer"
	// CompressionUncompressed stores batches uncompressed.
	CompressionUncompressed = "uncompressed"
)

// LogConfig is the per-topic configuration of a log, with Kafka's topic
// config meanings (the Kafka name of each field is in its comment).
// Durations are milliseconds; -1 retention means unlimited and
// math.MaxInt64 flush settings mean "never".
type LogConfig struct {
	SegmentBytes       int32 // segment.bytes
	SegmentMs          int64 // segment.ms
	SegmentJitterMs    int64 // segment.jitter.ms
	SegmentIndexBytes  int32 // segment.index.bytes
	IndexIntervalBytes int32 // index.interval.bytes

	RetentionMs    int64 // retention.ms; -1 = unlimited
	RetentionBytes int64 // retention.bytes; -1 = unlimited

	CleanupPolicy          CleanupPolicy // cleanup.policy
	DeleteRetentionMs      int64         // delete.retention.ms
	MinCompactionLagMs     int64         // min.compaction.lag.ms
	MaxCompactionLagMs     int64         // max.compaction.lag.ms
	MinCleanableDirtyRatio float64       // min.cleanable.dirty.ratio

	MaxMessageBytes             int32                // max.message.bytes
	MessageTimestampType        record.TimestampType // message.timestamp.type
	MessageTimestampBeforeMaxMs int64                // message.timestamp.before.max.ms
	MessageTimestampAfterMaxMs  int64                // message.timestamp.after.max.ms

	// CompressionType is compression.type: "producer", "uncompressed",
	// "gzip", "snappy", "lz4" or "zstd".
	CompressionType string

	FlushMessages int64 // flush.messages
	FlushMs       int64 // flush.ms

	FileDeleteDelayMs int64 // file.delete.delay.ms
	Preallocate       bool  // preallocate
}

// DefaultLogConfig returns Kafka's (4.x) topic defaults.
func DefaultLogConfig() LogConfig {
	return LogConfig{
		SegmentBytes:                1 << 30,
		SegmentMs:                   7 * 24 * 60 * 60 * 1000,
		SegmentJitterMs:             0,
		SegmentIndexBytes:           10 << 20,
		IndexIntervalBytes:          4096,
		RetentionMs:                 7 * 24 * 60 * 60 * 1000,
		RetentionBytes:              -1,
		CleanupPolicy:               CleanupPolicy{Delete: true},
		DeleteRetentionMs:           24 * 60 * 60 * 1000,
		MinCompactionLagMs:          0,
		MaxCompactionLagMs:          math.MaxInt64,
		MinCleanableDirtyRatio:      0.5,
		MaxMessageBytes:             1024*1024 + 12,
		MessageTimestampType:        record.CreateTime,
		MessageTimestampBeforeMaxMs: math.MaxInt64,
		MessageTimestampAfterMaxMs:  60 * 60 * 1000,
		CompressionType:             CompressionProducer,
		FlushMessages:               math.MaxInt64,
		FlushMs:                     math.MaxInt64,
		FileDeleteDelayMs:           60 * 1000,
		Preallocate:                 false,
	}
}

// minSegmentIndexBytes lets each index hold at least one entry.
const minSegmentIndexBytes = timeIndexEntrySize

// Validate reports settings the log cannot work with. It is less strict than
// Kafka's broker-side validation (which, for example, refuses segment.bytes
// below 1 MiB) so that tests can use tiny segments.
func (c LogConfig) Validate() error {
	var errs []error
	if c.SegmentBytes < record.HeaderSize {
		errs = append(errs, fmt.Errorf("segment.bytes %d is below %d", c.SegmentBytes, record.HeaderSize))
	}
	if c.SegmentMs <= 0 {
		errs = append(errs, fmt.Errorf("segment.ms %d must be positive", c.SegmentMs))
	}
	if c.SegmentJitterMs < 0 {
		errs = append(errs, fmt.Errorf("segment.jitter.ms %d is negative", c.SegmentJitterMs))
	}
	if c.SegmentIndexBytes < minSegmentIndexBytes {
		errs = append(errs, fmt.Errorf("segment.index.bytes %d is below %d", c.SegmentIndexBytes, minSegmentIndexBytes))
	}
	if c.IndexIntervalBytes < 0 {
		errs = append(errs, fmt.Errorf("index.interval.bytes %d is negative", c.IndexIntervalBytes))
	}
	if c.RetentionMs < -1 {
		errs = append(errs, fmt.Errorf("retention.ms %d is below -1", c.RetentionMs))
	}
	if c.MaxMessageBytes < 0 {
		errs = append(errs, fmt.Errorf("max.message.bytes %d is negative", c.MaxMessageBytes))
	}
	if c.MessageTimestampType != record.CreateTime && c.MessageTimestampType != record.LogAppendTime {
		errs = append(errs, fmt.Errorf("message.timestamp.type %d is unknown", c.MessageTimestampType))
	}
	if c.MessageTimestampBeforeMaxMs < 0 || c.MessageTimestampAfterMaxMs < 0 {
		errs = append(errs, errors.New("message.timestamp.before/after.max.ms must not be negative"))
	}
	if _, _, err := c.targetCodec(); err != nil {
		errs = append(errs, err)
	}
	if c.FlushMessages < 1 || c.FlushMs < 0 {
		errs = append(errs, fmt.Errorf("flush.messages %d must be >= 1 and flush.ms %d >= 0", c.FlushMessages, c.FlushMs))
	}
	if c.FileDeleteDelayMs < 0 {
		errs = append(errs, fmt.Errorf("file.delete.delay.ms %d is negative", c.FileDeleteDelayMs))
	}
	if !c.CleanupPolicy.Delete && !c.CleanupPolicy.Compact {
		errs = append(errs, errors.New("cleanup.policy is empty"))
	}
	return errors.Join(errs...)
}

// targetCodec returns the codec compression.type asks for; keep is true for
// "producer" (no recompression).
func (c LogConfig) targetCodec() (codec record.Codec, keep bool, err error) {
	switch c.CompressionType {
	case CompressionProducer, "":
		return record.CodecNone, true, nil
	case CompressionUncompressed:
		return record.CodecNone, false, nil
	case "none":
		// Not a Kafka compression.type value; refused like Kafka does.
		return 0, false, fmt.Errorf("compression.type %q is not valid (use %q)", c.CompressionType, CompressionUncompressed)
	}
	codec, err = record.ParseCodec(c.CompressionType)
	if err != nil {
		return 0, false, fmt.Errorf("compression.type %q: %w", c.CompressionType, err)
	}
	return codec, false, nil
}
