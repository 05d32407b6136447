package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// brokerClient creates a franz-go client for bootstrap with opts; both
// replication factors are measured through the same client and options.
func brokerClient(bootstrap string, opts ...kgo.Opt) (*kgo.Client, error) {
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(bootstrap, ",")...)}, opts...)...)
}

// payloads returns n distinct random record values of size bytes (seeded:
// every run sends the same bytes). Compression is off, so their content
// does not matter beyond being distinct.
func payloads(n, size int) [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([][]byte, n)
	for i := range out {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte('a' + r.IntN(26))
		}
		out[i] = b
	}
	return out
}

// createTopic creates topic with partitions and replication factor rf
// (min.insync.replicas = min(2, rf), so that acks=-1 on RF=1 is possible)
// and waits until every partition has its whole replica set in sync.
func createTopic(ctx context.Context, bootstrap, topic string, partitions int32, rf int16) error {
	cl, err := brokerClient(bootstrap)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	minISR := strconv.Itoa(int(min(rf, 2)))
	res, err := adm.CreateTopic(ctx, partitions, rf, map[string]*string{"min.insync.replicas": &minISR}, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			ready := true
			for _, p := range md.Topics[topic].Partitions {
				if p.Leader < 0 || len(p.ISR) != int(rf) {
					ready = false
				}
			}
			if ready && len(md.Topics[topic].Partitions) == int(partitions) {
				return nil
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("topic %s not ready: %w", topic, ctx.Err())
		}
		time.Sleep(50 * time.Millisecond) // polling the cluster's metadata
	}
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

// produce sends records records to topic with acks=-1 (idempotent, up to
// five requests in flight per broker) and returns the payload MB/s, timed
// from the first record handed to the client until the last is
// acknowledged. One warm-up record (connection, metadata, producer id) goes
// first and is not timed.
func produce(ctx context.Context, bootstrap, topic string, records int, values [][]byte) (float64, error) {
	cl, err := brokerClient(bootstrap,
		kgo.DefaultProduceTopic(topic),
		kgo.MaxBufferedRecords(50000),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)
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
	for i := range records {
		cl.Produce(ctx, &kgo.Record{Value: values[i%len(values)]}, done)
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, fmt.Errorf("flush: %w", err)
	}
	elapsed := time.Since(start)
	if n := failed.Load(); n > 0 {
		return 0, fmt.Errorf("%d records failed: %w", n, firstErr.Load().(error))
	}
	return float64(int64(records)*int64(len(values[0]))) / 1e6 / elapsed.Seconds(), nil
}
