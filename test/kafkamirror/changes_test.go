package kafkamirror_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// produceBatches writes n batches of 10 records to a partition (one
// ProduceSync of 10 records with no linger is one batch), idempotently
// with acks=all.
func produceBatches(t testing.TB, cl *kgo.Client, topic string, partition int32, n int) {
	t.Helper()
	for i := range n {
		var rs []*kgo.Record
		for j := range 10 {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: partition, Value: fmt.Appendf(nil, "%s-%d-%d-%d", topic, partition, i, j)})
		}
		if err := cl.ProduceSync(ctxFor(t), rs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s-%d: %v", topic, partition, err)
		}
	}
}

func manualProducer() []kgo.Opt {
	return []kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0)}
}

// startOffset returns a partition's log start offset.
func startOffset(t testing.TB, opts []kgo.Opt, topic string, partition int32) int64 {
	t.Helper()
	start, _, err := rawLog(opts, topic, partition)
	if err != nil {
		t.Fatalf("log of %s-%d: %v", topic, partition, err)
	}
	return start
}

// testSourceChanges (issue 13 item 3, the source's admin changes): Kafka's
// own tools change a mirrored topic on the source, and the mirror follows.
// kafka-delete-records moves the log start into a batch, on a topic being
// mirrored (kmirror's log start follows, the batch stays) and on one added
// to the mirror afterwards (it starts from there); kafka-topics adds
// partitions (the partition sync adds and mirrors them); kafka-configs
// changes and deletes configs (the config sync copies both).
func testSourceChanges(t *testing.T, s *source) {
	s.createTopic(t, "changes", 2, map[string]string{"max.message.bytes": "2000000"})
	s.createTopic(t, "trimmed", 1, nil)
	cl := s.client(t, manualProducer()...)
	for p := range int32(2) {
		produceBatches(t, cl, "changes", p, 5)
	}
	produceBatches(t, cl, "trimmed", 0, 5)

	d := startDest(t, 1, nil)
	d.mirror(t, s, "kafka", nil, "changes")
	d.waitStates(t, "kafka", mirroradmin.StateMirroring, 2, "changes")
	waitSameLogs(t, s, d, "changes", 2)

	// DeleteRecords inside a batch: offsets 25 and 15 are the middle of
	// the third and second batches.
	offsets := filepath.Join(t.TempDir(), "offsets.json")
	if err := os.WriteFile(offsets, []byte(`{"version":1,"partitions":[`+
		`{"topic":"changes","partition":0,"offset":25},{"topic":"trimmed","partition":0,"offset":15}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s.tool(t, "org.apache.kafka.tools.DeleteRecordsCommand", s.adminArgs("--offset-json-file", offsets)...)
	if got := startOffset(t, s.kc.ClientOpts(), "changes", 0); got != 25 {
		t.Fatalf("kafka-delete-records left the source's log start at %d, want 25", got)
	}
	poll(t, "kmirror's log start of changes-0 at 25", func() (bool, string) {
		got := startOffset(t, d.seeds(), "changes", 0)
		return got == 25, fmt.Sprintf("at %d", got)
	})
	produceBatches(t, cl, "changes", 0, 2)
	d.addTopics(t, "kafka", "trimmed")
	d.waitStates(t, "kafka", mirroradmin.StateMirroring, 1, "trimmed")
	produceBatches(t, cl, "trimmed", 0, 2)
	waitSameLogs(t, s, d, "changes", 2)
	waitSameLogs(t, s, d, "trimmed", 1)
	if got := startOffset(t, d.seeds(), "trimmed", 0); got != 15 {
		t.Errorf("trimmed-0 starts at %d on kmirror, want 15", got)
	}

	// More partitions on the source.
	s.tool(t, "org.apache.kafka.tools.TopicCommand", s.adminArgs("--alter", "--topic", "changes", "--partitions", "4")...)
	poll(t, "4 partitions of changes on the source", func() (bool, string) {
		n := partitionCount(t, s, "changes")
		return n == 4, fmt.Sprintf("%d partitions", n)
	})
	cl = s.client(t, manualProducer()...) // a client that never saw 2 partitions
	for p := range int32(4) {
		produceBatches(t, cl, "changes", p, 2)
	}
	d.waitStates(t, "kafka", mirroradmin.StateMirroring, 4, "changes")
	waitSameLogs(t, s, d, "changes", 4)
	sameTopicMetadata(t, s, d, "changes")

	// Configs changed and deleted on the source.
	s.tool(t, "org.apache.kafka.tools.ConfigCommand", s.adminArgs("--alter", "--entity-type", "topics", "--entity-name", "changes",
		"--add-config", "retention.ms=123456789,segment.jitter.ms=7", "--delete-config", "max.message.bytes")...)
	sameTopicConfigs(t, s, d, "changes")
	got := topicConfigs(t, d.admin(t), "changes")
	if got["retention.ms"] != "123456789" || got["segment.jitter.ms"] != "7" || got["max.message.bytes"] != "" {
		t.Errorf("kmirror's configs of changes: %v", got)
	}
}
