package server_test

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestProduceAndReadBack100k produces 100,000 records over 12 partitions
// with acks=-1 (idempotent) and with acks=1, and reads every one back: the
// same values in the same order per partition, at consecutive offsets from
// zero.
func TestProduceAndReadBack100k(t *testing.T) {
	c := testcluster.Start(t)
	adm := c.Admin(t)
	const partitions, total = 12, 100_000
	cases := []struct {
		topic string
		opts  []kgo.Opt
	}{
		{"acks-all", []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}},
		{"acks-leader", []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}},
	}
	for _, tc := range cases {
		t.Run(tc.topic, func(t *testing.T) {
			createTopic(t, adm, tc.topic, partitions, nil)
			opts := append([]kgo.Opt{
				kgo.DefaultProduceTopic(tc.topic),
				kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.ProducerLinger(5 * time.Millisecond),
			}, tc.opts...)
			producer := c.Client(t, opts...)
			ctx := testCtx(t, 2*time.Minute)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var firstErr error
			perPartition := total / partitions
			for seq := range perPartition {
				for p := int32(0); p < partitions; p++ {
					wg.Add(1)
					r := &kgo.Record{Partition: p, Value: []byte(value(tc.topic, p, seq))}
					producer.Produce(ctx, r, func(r *kgo.Record, err error) {
						defer wg.Done()
						if err != nil {
							mu.Lock()
							if firstErr == nil {
								firstErr = err
							}
							mu.Unlock()
						}
					})
				}
			}
			wg.Wait()
			if firstErr != nil {
				t.Fatalf("produce: %v", firstErr)
			}

			got := consumeExactly(t, c.Client(t), tc.topic, partitions, perPartition)
			for p := int32(0); p < partitions; p++ {
				recs := got[p]
				if len(recs) != perPartition {
					t.Fatalf("partition %d: %d records, want %d", p, len(recs), perPartition)
				}
				for i, r := range recs {
					if r.Offset != int64(i) || string(r.Value) != value(tc.topic, p, i) {
						t.Fatalf("partition %d record %d: offset %d value %q, want offset %d value %q",
							p, i, r.Offset, r.Value, i, value(tc.topic, p, i))
					}
				}
			}
		})
	}
}
