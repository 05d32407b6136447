package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKafkaJSConsume has franz-go produce records and a kafkajs consumer group
// read every one back with its key, value, headers, partition and offset.
func TestKafkaJSConsume(t *testing.T) {
	node, dir := requireKafkaJS(t)
	bs := startBroker(t)
	createTopic(t, bs, "js-consume", 3)
	const count = 600
	recs := make([]*kgo.Record, count)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "js-consume", Key: []byte(fmt.Sprintf("k-%d", i)), Value: []byte(fmt.Sprintf("v-%d", i)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprintf("h-%d", i))}}}
	}
	// kafkajs decodes only gzip without codec plugins; franz-go's default
	// is snappy.
	cl := newClient(t, bs, kgo.ProducerBatchCompression(kgo.GzipCompression()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	want := make(map[string]*kgo.Record, count)
	for _, r := range recs {
		want[string(r.Key)] = r
	}

	out := runTool(t, "", node, dir+"/consume.js", bs, "js-consume", fmt.Sprint(count), "kmirror-js-group", "60000")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != count {
		t.Fatalf("consume.js printed %d records, want %d", len(lines), count)
	}
	for _, line := range lines {
		var got struct {
			Partition int32
			Offset    int64
			Key       string
			Value     string
			Headers   map[string]string
		}
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("consume.js line %q: %v", line, err)
		}
		w, ok := want[got.Key]
		if !ok {
			t.Fatalf("kafkajs read unknown or repeated record %+v", got)
		}
		delete(want, got.Key)
		if got.Value != string(w.Value) || got.Partition != w.Partition || got.Offset != w.Offset ||
			got.Headers["h"] != string(w.Headers[0].Value) {
			t.Fatalf("kafkajs read %+v, want partition %d offset %d value %q", got, w.Partition, w.Offset, w.Value)
		}
	}
}
