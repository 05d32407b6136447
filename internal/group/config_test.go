package group

import (
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/config"
)

func TestFromBrokerConfig(t *testing.T) {
	bc, _, err := config.Load("", nil, map[string]string{
		"offsets.topic.num.partitions":        "7",
		"offsets.topic.replication.factor":    "1",
		"offsets.retention.minutes":           "60",
		"offsets.retention.check.interval.ms": "1000",
		"offsets.commit.timeout.ms":           "2500",
		"group.initial.rebalance.delay.ms":    "0",
		"group.min.session.timeout.ms":        "1000",
		"group.max.session.timeout.ms":        "60000",
		"group.max.size":                      "9",
	})
	if err != nil {
		t.Fatal(err)
	}
	c := FromBrokerConfig(bc)
	want := DefaultConfig()
	want.OffsetsTopicPartitions = 7
	want.OffsetsTopicReplicationFactor = 1
	want.OffsetsRetention = time.Hour
	want.OffsetsRetentionCheckInterval = time.Second
	want.OffsetsCommitTimeout = 2500 * time.Millisecond
	want.GroupInitialRebalanceDelay = 0
	want.GroupMinSessionTimeout = time.Second
	want.GroupMaxSessionTimeout = time.Minute
	want.GroupMaxSize = 9
	if c != want {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
	bc, _, err = config.Load("", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Kafka's defaults come through unchanged (the single-node profile of a
	// node without a config file lowers the replication factor to 1).
	want = DefaultConfig()
	want.OffsetsTopicReplicationFactor = bc.OffsetsTopicReplicationFactor
	if c := FromBrokerConfig(bc); c != want {
		t.Fatalf("defaults: got %+v\nwant %+v", c, want)
	}
}
