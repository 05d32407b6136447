package group

import (
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/coordinator"
)

// OffsetsTopic is Kafka's internal topic of group metadata and offsets.
const OffsetsTopic = "__consumer_offsets"

// Config configures the group coordinator. Field comments name the Kafka
// setting each one is.
type Config struct {
	OffsetsTopicPartitions        int32         // offsets.topic.num.partitions
	OffsetsTopicReplicationFactor int16         // offsets.topic.replication.factor
	OffsetsTopicSegmentBytes      int32         // offsets.topic.segment.bytes
	OffsetsRetention              time.Duration // offsets.retention.minutes
	OffsetsRetentionCheckInterval time.Duration // offsets.retention.check.interval.ms
	OffsetMetadataMaxBytes        int           // offset.metadata.max.bytes
	OffsetsCommitTimeout          time.Duration // offsets.commit.timeout.ms
	OffsetsLoadBufferSize         int           // offsets.load.buffer.size
	GroupMinSessionTimeout        time.Duration // group.min.session.timeout.ms
	GroupMaxSessionTimeout        time.Duration // group.max.session.timeout.ms
	GroupInitialRebalanceDelay    time.Duration // group.initial.rebalance.delay.ms
	GroupMaxSize                  int           // group.max.size

	// Clock and Logger default to the wall clock and slog.Default().
	Clock  coordinator.Clock
	Logger *slog.Logger
}

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		OffsetsTopicPartitions:        50,
		OffsetsTopicReplicationFactor: 3,
		OffsetsTopicSegmentBytes:      100 << 20,
		OffsetsRetention:              7 * 24 * time.Hour,
		OffsetsRetentionCheckInterval: 10 * time.Minute,
		OffsetMetadataMaxBytes:        4096,
		OffsetsCommitTimeout:          5 * time.Second,
		OffsetsLoadBufferSize:         5 << 20,
		GroupMinSessionTimeout:        6 * time.Second,
		GroupMaxSessionTimeout:        30 * time.Minute,
		GroupInitialRebalanceDelay:    3 * time.Second,
		GroupMaxSize:                  math.MaxInt32,
	}
}

// FromBrokerConfig returns the group coordinator's settings from the
// node's configuration (Kafka's names; offset.metadata.max.bytes, which
// the node configuration does not carry, keeps Kafka's default).
func FromBrokerConfig(bc *config.Config) Config {
	c := DefaultConfig()
	c.OffsetsTopicPartitions = bc.OffsetsTopicNumPartitions
	c.OffsetsTopicReplicationFactor = bc.OffsetsTopicReplicationFactor
	c.OffsetsTopicSegmentBytes = bc.OffsetsTopicSegmentBytes
	c.OffsetsRetention = time.Duration(bc.OffsetsRetentionMinutes) * time.Minute
	c.OffsetsRetentionCheckInterval = time.Duration(bc.OffsetsRetentionCheckIntervalMs) * time.Millisecond
	c.OffsetsCommitTimeout = time.Duration(bc.OffsetsCommitTimeoutMs) * time.Millisecond
	c.OffsetsLoadBufferSize = int(bc.OffsetsLoadBufferSize)
	c.GroupMinSessionTimeout = time.Duration(bc.GroupMinSessionTimeoutMs) * time.Millisecond
	c.GroupMaxSessionTimeout = time.Duration(bc.GroupMaxSessionTimeoutMs) * time.Millisecond
	c.GroupInitialRebalanceDelay = time.Duration(bc.GroupInitialRebalanceDelayMs) * time.Millisecond
	c.GroupMaxSize = int(bc.GroupMaxSize)
	return c
}

func (c *Config) machine() MachineConfig {
	return MachineConfig{
		InitialRebalanceDelay: c.GroupInitialRebalanceDelay,
		MaxSize:               c.GroupMaxSize,
		NewMemberJoinTimeout:  DefaultNewMemberJoinTimeout,
	}
}

// topicConfigs are the configs __consumer_offsets is created with.
func (c *Config) topicConfigs() map[string]string {
	return map[string]string{
		"cleanup.policy":   "compact",
		"compression.type": "producer",
		"segment.bytes":    strconv.FormatInt(int64(c.OffsetsTopicSegmentBytes), 10),
	}
}
