package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestFranzGoClientAgainstANode drives the broker's APIs with a real client
// through a node: idempotent lz4 produces, consumption with incremental
// fetch sessions (franz-go uses them) under a small response limit, and a
// READ_COMMITTED consumer.
func TestFranzGoClientAgainstANode(t *testing.T) {
	c := testcluster.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := c.Admin(t)
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "it"); err != nil {
		t.Fatal(err)
	}
	prod := c.Client(t, kgo.ProducerBatchCompression(kgo.Lz4Compression()), kgo.DefaultProduceTopic("it"))
	const n = 3000
	for i := 0; i < n; i++ {
		prod.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprint(i))}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cons := c.Client(t, kgo.ConsumeTopics("it"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(64<<10))
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %d records: %v", len(seen), err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Value)] {
				t.Fatalf("record %s consumed twice", r.Value)
			}
			seen[string(r.Value)] = true
		})
	}

	// franz-go fetched through an incremental fetch session.
	if got := c.Node(1).Server().Broker().FetchSessionCount(); got < 1 {
		t.Fatalf("%d fetch sessions while a consumer runs", got)
	}
	// A READ_COMMITTED consumer reads the same records (there is no open
	// transaction, so the last stable offset is the high watermark).
	rc := c.Client(t, kgo.ConsumeTopics("it"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	for count := 0; count < n; {
		fs := rc.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("read committed after %d records: %v", count, err)
		}
		count += fs.NumRecords()
	}

	offs, err := adm.ListEndOffsets(ctx, "it")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	offs.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total < n {
		t.Fatalf("end offsets sum to %d, want at least %d", total, n)
	}
}
