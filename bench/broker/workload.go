package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// workload is one produce configuration measured against every broker.
type workload struct {
	acks       string // "1" or "all"
	lz4        bool
	partitions int32
	records    int
	size       int // value bytes per record
}

func (w workload) String() string {
	codec := "off"
	if w.lz4 {
		codec = "on"
	}
	return fmt.Sprintf("acks=%-3s lz4=%-3s %dp", w.acks, codec, w.partitions)
}

// bytes is the payload volume a run moves: record values only, uncompressed,
// so that every column of the report counts the same bytes.
func (w workload) bytes() int64 { return int64(w.records) * int64(w.size) }

// payloads builds n distinct record values of size bytes that compress like
// log lines (about 2-3x with lz4): fields and words from a small vocabulary
// with random numbers between them. Seeded, so every run sends the same bytes.
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

// brokerClient creates a franz-go client for bootstrap with opts; every broker
// is measured through the same client and options.
func brokerClient(bootstrap string, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(bootstrap, ",")...)}, opts...)...)
}

func createTopic(ctx context.Context, bootstrap, topic string, partitions int32) error {
	cl, err := brokerClient(bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

func deleteTopic(ctx context.Context, bootstrap, topic string) error {
	cl, err := brokerClient(bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).DeleteTopic(ctx, topic); err != nil {
		return fmt.Errorf("delete topic %s: %w", topic, err)
	}
	return nil
}

// produce sends w.records records to topic and returns the payload MB/s,
// timed from the first record handed to the client until the last is
// acknowledged. One warm-up record (connection, metadata, producer id) goes
// first and is not timed; consumers therefore read w.records+1 records.
func produce(ctx context.Context, bootstrap, topic string, w workload, values [][]byte) (float64, error) {
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(topic),
		kgo.MaxBufferedRecords(50000),
	}
	if w.lz4 {
		opts = append(opts, kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	} else {
		opts = append(opts, kgo.ProducerBatchCompression(kgo.NoCompression()))
	}
	switch w.acks {
	case "1":
		// Without idempotence franz-go keeps one request in flight per
		// broker; 5 is what Kafka's producer allows
		// (max.in.flight.requests.per.connection) and what the idempotent
		// acks=all case gets, so the two rows differ only in acks.
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
			kgo.MaxProduceRequestsInflightPerBroker(5))
	case "all":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	default:
		return 0, fmt.Errorf("acks %q: want 1 or all", w.acks)
	}
	cl, err := brokerClient(bootstrap, opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: values[0]}).FirstErr(); err != nil {
		return 0, fmt.Errorf("warm-up produce: %w", err)
	}

	var failed atomic.Int64
	var firstErr atomic.Value
	done := func(_ *kgo.Record, err error) {
		if err != nil && failed.Add(1) == 1 {
			firstErr.Store(err)
		}
	}
	start := time.Now()
	for i := range w.records {
		cl.Produce(ctx, &kgo.Record{Value: values[i%len(values)]}, done)
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, fmt.Errorf("flush: %w", err)
	}
	elapsed := time.Since(start)
	if n := failed.Load(); n > 0 {
		return 0, fmt.Errorf("%d records failed: %w", n, firstErr.Load().(error))
	}
	return mbps(w.bytes(), elapsed), nil
}

// consume reads the whole topic (want records) from the start with a fresh
// client and returns the payload MB/s, timed from client creation to the last
// record.
func consume(ctx context.Context, bootstrap, topic string, want int, payloadBytes int64) (float64, error) {
	start := time.Now()
	cl, err := brokerClient(bootstrap, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	got := 0
	for got < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("consumed %d of %d records: %w", got, want, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && ferr == nil {
				ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
			}
		})
		if ferr != nil {
			return 0, ferr
		}
		got += fs.NumRecords()
	}
	return mbps(payloadBytes, time.Since(start)), nil
}

// mbps is decimal megabytes per second.
func mbps(n int64, d time.Duration) float64 {
	return float64(n) / 1e6 / d.Seconds()
}
