package group

import (
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

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

// ConfigFromProperties returns the defaults overridden by the settings in
// props that the group coordinator knows (Kafka's names); other keys are
// ignored. A value that does not parse or is out of range is an error
// naming the key.
func ConfigFromProperties(props map[string]string) (Config, error) {
	c := DefaultConfig()
	type setter struct {
		min int64
		set func(int64)
	}
	ms := func(d *time.Duration, unit time.Duration) func(int64) {
		return func(v int64) { *d = time.Duration(v) * unit }
	}
	setters := map[string]setter{
		"offsets.topic.num.partitions":        {1, func(v int64) { c.OffsetsTopicPartitions = int32(v) }},
		"offsets.topic.replication.factor":    {1, func(v int64) { c.OffsetsTopicReplicationFactor = int16(v) }},
		"offsets.topic.segment.bytes":         {1, func(v int64) { c.OffsetsTopicSegmentBytes = int32(v) }},
		"offsets.retention.minutes":           {1, ms(&c.OffsetsRetention, time.Minute)},
		"offsets.retention.check.interval.ms": {1, ms(&c.OffsetsRetentionCheckInterval, time.Millisecond)},
		"offset.metadata.max.bytes":           {0, func(v int64) { c.OffsetMetadataMaxBytes = int(v) }},
		"offsets.commit.timeout.ms":           {1, ms(&c.OffsetsCommitTimeout, time.Millisecond)},
		"offsets.load.buffer.size":            {1, func(v int64) { c.OffsetsLoadBufferSize = int(v) }},
		"group.min.session.timeout.ms":        {0, ms(&c.GroupMinSessionTimeout, time.Millisecond)},
		"group.max.session.timeout.ms":        {0, ms(&c.GroupMaxSessionTimeout, time.Millisecond)},
		"group.initial.rebalance.delay.ms":    {0, ms(&c.GroupInitialRebalanceDelay, time.Millisecond)},
		"group.max.size":                      {1, func(v int64) { c.GroupMaxSize = int(v) }},
	}
	limits := map[string]int64{
		"offsets.topic.num.partitions":     math.MaxInt32,
		"offsets.topic.replication.factor": math.MaxInt16,
		"offsets.topic.segment.bytes":      math.MaxInt32,
		"group.max.size":                   math.MaxInt32,
		"offsets.load.buffer.size":         math.MaxInt32,
		"offset.metadata.max.bytes":        math.MaxInt32,
	}
	for k, s := range setters {
		raw, ok := props[k]
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return Config{}, fmt.Errorf("%s: %q is not an integer", k, raw)
		}
		hi, bounded := limits[k]
		if v < s.min || (bounded && v > hi) {
			return Config{}, fmt.Errorf("%s: %d is out of range", k, v)
		}
		s.set(v)
	}
	if c.GroupMinSessionTimeout > c.GroupMaxSessionTimeout {
		return Config{}, fmt.Errorf("group.min.session.timeout.ms %v exceeds group.max.session.timeout.ms %v",
			c.GroupMinSessionTimeout, c.GroupMaxSessionTimeout)
	}
	return c, nil
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
