package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// payloads builds n distinct record values of size bytes that compress like
// log lines (about 2-3x with lz4): fields and words from a small vocabulary
// with random numbers between them. Seeded, so every invocation stores the
// same bytes.
func payloads(n, size int) [][]byte {
	words := strings.Fields("alpha beta gamma delta order user item price count status ok error " +
		"checkout cart payment shipped region eu us asia click view session retry timeout")
	r := rand.New(rand.NewPCG(1, 2))
	out := make([][]byte, n)
	for i := range out {
		var b strings.Builder
		fmt.Fprintf(&b, `{"id":%d,"user":"u%05d","event":"`, i, r.IntN(100000))
		for b.Len() < size {
			b.WriteString(words[r.IntN(len(words))])
			if r.IntN(4) == 0 {
				fmt.Fprintf(&b, "=%d", r.IntN(1000000))
			}
			b.WriteByte(' ')
		}
		out[i] = []byte(b.String()[:size])
	}
	return out
}

// client creates a franz-go client for addr with opts.
func client(addr string, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
}

// createTopic creates topic with partitions and one replica on addr.
func createTopic(ctx context.Context, addr, topic string, partitions int32) error {
	cl, err := client(addr)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// fill produces records values (cycling through values) into topic with
// lz4 batches, as a busy producer writes them (franz-go's defaults: batches
// up to 1 MB, the sticky partitioner spreading batches over partitions).
func fill(ctx context.Context, addr, topic string, records int, values [][]byte) error {
	cl, err := client(addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.MaxBufferedRecords(100_000), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	var failed atomic.Int64
	var firstErr atomic.Value
	for i := range records {
		cl.Produce(ctx, &kgo.Record{Value: values[i%len(values)]}, func(_ *kgo.Record, err error) {
			if err != nil && failed.Add(1) == 1 {
				firstErr.Store(err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d records failed: %w", n, firstErr.Load().(error))
	}
	return nil
}

// endOffsets returns the log end offsets of every partition of topic on n.
func endOffsets(n *node, topic string, partitions int32) []int64 {
	out := make([]int64, partitions)
	for q := range partitions {
		out[q] = n.logEnd(topic, q)
	}
	return out
}
