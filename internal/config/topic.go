package config

import (
	"maps"
	"slices"
)

// TopicConfig is the effective configuration of one topic: its overrides on
// top of the broker defaults. Durations are in milliseconds, sizes in bytes,
// as the config names say.
type TopicConfig struct {
	CleanupPolicy                        []string
	CompressionType                      string
	DeleteRetentionMs                    int64
	FileDeleteDelayMs                    int64
	FlushMessages                        int64
	FlushMs                              int64
	IndexIntervalBytes                   int32
	MaxCompactionLagMs                   int64
	MaxMessageBytes                      int32
	MessageTimestampType                 string
	MessageTimestampBeforeMaxMs          int64
	MessageTimestampAfterMaxMs           int64
	MinCleanableDirtyRatio               float64
	MinCompactionLagMs                   int64
	MinInsyncReplicas                    int32
	Preallocate                          bool
	RetentionBytes                       int64
	RetentionMs                          int64
	SegmentBytes                         int32
	SegmentIndexBytes                    int32
	SegmentJitterMs                      int64
	SegmentMs                            int64
	UncleanLeaderElectionEnable          bool
	LeaderReplicationThrottledReplicas   []string
	FollowerReplicationThrottledReplicas []string
	// MirrorName is the raw mirror.name ("" when the topic is in no
	// mirror).
	MirrorName string
}

// Compact reports whether cleanup.policy includes compact.
func (t TopicConfig) Compact() bool { return slices.Contains(t.CleanupPolicy, "compact") }

// Delete reports whether cleanup.policy includes delete.
func (t TopicConfig) Delete() bool { return slices.Contains(t.CleanupPolicy, "delete") }

// Topic returns the effective configuration of a topic with these overrides
// (as stored for the topic, mirror.name included). Overrides are validated
// as ValidateInternalTopicConfigs does; an invalid one is an error wrapping
// kerr.InvalidConfig.
func (c *Config) Topic(overrides map[string]string) (TopicConfig, error) {
	if err := ValidateInternalTopicConfigs(overrides); err != nil {
		return TopicConfig{}, err
	}
	g := func(name string) Value {
		v, _, _ := c.topicValue(topicDef(name), overrides)
		return v
	}
	return TopicConfig{
		CleanupPolicy:                        g("cleanup.policy").List(),
		CompressionType:                      g("compression.type").Str(),
		DeleteRetentionMs:                    g("delete.retention.ms").Long(),
		FileDeleteDelayMs:                    g("file.delete.delay.ms").Long(),
		FlushMessages:                        g("flush.messages").Long(),
		FlushMs:                              g("flush.ms").Long(),
		IndexIntervalBytes:                   g("index.interval.bytes").Int(),
		MaxCompactionLagMs:                   g("max.compaction.lag.ms").Long(),
		MaxMessageBytes:                      g("max.message.bytes").Int(),
		MessageTimestampType:                 g("message.timestamp.type").Str(),
		MessageTimestampBeforeMaxMs:          g("message.timestamp.before.max.ms").Long(),
		MessageTimestampAfterMaxMs:           g("message.timestamp.after.max.ms").Long(),
		MinCleanableDirtyRatio:               g("min.cleanable.dirty.ratio").Double(),
		MinCompactionLagMs:                   g("min.compaction.lag.ms").Long(),
		MinInsyncReplicas:                    g("min.insync.replicas").Int(),
		Preallocate:                          g("preallocate").Bool(),
		RetentionBytes:                       g("retention.bytes").Long(),
		RetentionMs:                          g("retention.ms").Long(),
		SegmentBytes:                         g("segment.bytes").Int(),
		SegmentIndexBytes:                    g("segment.index.bytes").Int(),
		SegmentJitterMs:                      g("segment.jitter.ms").Long(),
		SegmentMs:                            g("segment.ms").Long(),
		UncleanLeaderElectionEnable:          g("unclean.leader.election.enable").Bool(),
		LeaderReplicationThrottledReplicas:   g("leader.replication.throttled.replicas").List(),
		FollowerReplicationThrottledReplicas: g("follower.replication.throttled.replicas").List(),
		MirrorName:                           g(MirrorNameConfig).Str(),
	}, nil
}

// ValidateTopicConfigs checks a set of topic configs a client sends with
// CreateTopics or AlterConfigs. An unknown name, a config only kmirror may
// set (mirror.name), a value that does not parse or validate, and
// min.compaction.lag.ms above max.compaction.lag.ms are errors wrapping
// kerr.InvalidConfig that name the config and the rule. Configs are checked
// in name order and the first problem is returned, as Kafka reports one.
func ValidateTopicConfigs(cfgs map[string]string) error {
	return validateTopicConfigs(cfgs, false)
}

// ValidateInternalTopicConfigs is ValidateTopicConfigs for kmirror's own
// writes, which may also set internal configs such as mirror.name.
func ValidateInternalTopicConfigs(cfgs map[string]string) error {
	return validateTopicConfigs(cfgs, true)
}

func validateTopicConfigs(cfgs map[string]string, internal bool) error {
	vals := map[string]Value{}
	for _, name := range slices.Sorted(maps.Keys(cfgs)) {
		td := topicDef(name)
		if td == nil {
			return &ValueError{Name: name, Reason: "unknown topic config"}
		}
		if td.Internal && !internal {
			return &ValueError{Name: name, Reason: "is set only by kmirror's mirror APIs"}
		}
		v, err := td.Parse(cfgs[name])
		if err != nil {
			return err
		}
		vals[name] = v
	}
	minLag, okMin := vals["min.compaction.lag.ms"]
	maxLag, okMax := vals["max.compaction.lag.ms"]
	if okMin && okMax && minLag.Long() > maxLag.Long() {
		return &ValueError{Name: "min.compaction.lag.ms", Reason: "is above max.compaction.lag.ms"}
	}
	return nil
}
