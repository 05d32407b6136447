package broker

import (
	"fmt"
	"strings"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
)

// topicSettings is what a partition needs from its topic's effective
// configuration: the log's configuration and the settings the broker
// itself enforces.
type topicSettings struct {
	log       storage.LogConfig
	minISR    int32
	mirrorRaw string // mirror.name as stored ("" when in no mirror)
	// leaderThrottled is leader.replication.throttled.replicas
	// (replication_quota.go).
	leaderThrottled []string
}

// resolveTopicSettings computes a topic's effective configuration from its
// overrides (as stored in the metadata image) over the broker's defaults.
// An override that no longer validates (it cannot normally be stored) makes
// the topic fall back to the broker defaults for everything, and the error
// is returned for logging.
func resolveTopicSettings(c *config.Config, overrides map[string]string) (topicSettings, error) {
	tc, err := c.Topic(overrides)
	if err != nil {
		tc2, err2 := c.Topic(nil)
		if err2 != nil {
			return topicSettings{log: storage.DefaultLogConfig(), minISR: 1}, fmt.Errorf("broker topic defaults: %w", err2)
		}
		tc = tc2
	}
	return topicSettings{log: logConfigOf(tc), minISR: tc.MinInsyncReplicas, mirrorRaw: tc.MirrorName,
		leaderThrottled: tc.LeaderReplicationThrottledReplicas}, err
}

// logConfigOf converts a topic's effective configuration into the storage
// layer's LogConfig.
func logConfigOf(tc config.TopicConfig) storage.LogConfig {
	lc := storage.DefaultLogConfig()
	lc.SegmentBytes = tc.SegmentBytes
	lc.SegmentMs = tc.SegmentMs
	lc.SegmentJitterMs = tc.SegmentJitterMs
	lc.SegmentIndexBytes = tc.SegmentIndexBytes
	lc.IndexIntervalBytes = tc.IndexIntervalBytes
	lc.RetentionMs = tc.RetentionMs
	lc.RetentionBytes = tc.RetentionBytes
	lc.CleanupPolicy = storage.CleanupPolicy{Delete: tc.Delete(), Compact: tc.Compact()}
	lc.DeleteRetentionMs = tc.DeleteRetentionMs
	lc.MinCompactionLagMs = tc.MinCompactionLagMs
	lc.MaxCompactionLagMs = tc.MaxCompactionLagMs
	lc.MinCleanableDirtyRatio = tc.MinCleanableDirtyRatio
	lc.MaxMessageBytes = tc.MaxMessageBytes
	lc.MessageTimestampType = record.CreateTime
	if strings.EqualFold(tc.MessageTimestampType, "LogAppendTime") {
		lc.MessageTimestampType = record.LogAppendTime
	}
	lc.MessageTimestampBeforeMaxMs = tc.MessageTimestampBeforeMaxMs
	lc.MessageTimestampAfterMaxMs = tc.MessageTimestampAfterMaxMs
	lc.CompressionType = tc.CompressionType
	lc.FlushMessages = tc.FlushMessages
	lc.FlushMs = tc.FlushMs
	lc.FileDeleteDelayMs = tc.FileDeleteDelayMs
	lc.Preallocate = tc.Preallocate
	return lc
}
