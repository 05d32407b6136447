package clients

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// requireKafkaJS returns node's path and the test/js directory, failing the
// test when node or the pinned kafkajs is not installed.
func requireKafkaJS(t *testing.T) (node, dir string) {
	t.Helper()
	node = requireTool(t, "node")
	dir = repoFile(t, "test/js")
	if _, err := os.Stat(dir + "/node_modules/kafkajs/package.json"); err != nil {
		t.Fatalf("kafkajs is not installed in test/js: run make test, which installs it")
	}
	return node, dir
}

// TestKafkaJSProduce produces with kafkajs and checks every record with
// franz-go. (kafkajs consumes only through a consumer group; that test is
// TestKafkaJSConsume.)
func TestKafkaJSProduce(t *testing.T) {
	node, dir := requireKafkaJS(t)
	bs := startBroker(t)
	for _, tc := range []struct {
		codec      string
		partitions int32
		count      int
	}{
		{"none", 3, 1000},
		{"gzip", 1, 300},
	} {
		t.Run(tc.codec, func(t *testing.T) {
			topic := "js-" + tc.codec
			createTopic(t, bs, topic, tc.partitions)
			out := runTool(t, "", node, dir+"/produce.js", bs, topic, fmt.Sprint(tc.count), tc.codec)
			if strings.TrimSpace(out) != fmt.Sprintf(`{"produced":%d}`, tc.count) {
				t.Fatalf("produce.js printed %q", out)
			}
			seen := make(map[int]bool, tc.count)
			perPartition := map[int32]int64{}
			for _, rec := range readAll(t, bs, topic, tc.count) {
				var i int
				if _, err := fmt.Sscanf(string(rec.Key), "k-%d", &i); err != nil || seen[i] {
					t.Fatalf("unexpected or repeated key %q", rec.Key)
				}
				seen[i] = true
				if string(rec.Value) != fmt.Sprintf("kafkajs-%d", i) || len(rec.Headers) != 1 ||
					rec.Headers[0].Key != "h" || string(rec.Headers[0].Value) != fmt.Sprintf("v-%d", i) {
					t.Fatalf("record %q = %q %+v", rec.Key, rec.Value, rec.Headers)
				}
				if rec.Offset != perPartition[rec.Partition] {
					t.Fatalf("partition %d: offset %d, want %d (dense offsets from 0)", rec.Partition, rec.Offset, perPartition[rec.Partition])
				}
				perPartition[rec.Partition]++
			}
			if len(perPartition) != int(tc.partitions) {
				t.Fatalf("records landed in %d partitions, want all %d", len(perPartition), tc.partitions)
			}
		})
	}
}
