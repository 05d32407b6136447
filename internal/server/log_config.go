package server

import (
	"strings"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
)

// logConfigOf converts the broker-wide topic defaults into the log
// configuration the log manager opens partitions with before the broker
// applies each topic's own configuration.
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

// cleanerConfigOf maps the log.cleaner.* settings to the log manager's
// cleaner: off when log.cleaner.enable is false or there are no threads.
func cleanerConfigOf(c *config.Config) storage.CleanerConfig {
	get := func(name string) config.Value {
		v, _ := c.Get(name)
		return v
	}
	return storage.CleanerConfig{
		Disabled:         !c.LogCleanerEnable || c.LogCleanerThreads == 0,
		Threads:          int(c.LogCleanerThreads),
		DedupeBufferSize: get("log.cleaner.dedupe.buffer.size").Long(),
		LoadFactor:       get("log.cleaner.io.buffer.load.factor").Double(),
		BackoffMs:        get("log.cleaner.backoff.ms").Long(),
	}
}
