package mirror_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestCatchUpThroughput measures how fast B catches up with a pre-filled
// topic on A, beside a franz-go consumer reading the same data from A (the
// fetch limit of this machine). It runs with KMIRROR_LONG=1 only
// (KMIRROR_MIRROR_MB sets the volume, default 256 MiB); the figures are
// logged. The benchmark of record is bench/mirror (docs/benchmarks.md).
func TestCatchUpThroughput(t *testing.T) {
	if os.Getenv("KMIRROR_LONG") == "" {
		t.Skip("long test: set KMIRROR_LONG=1")
	}
	mb := 256
	if v, err := strconv.Atoi(os.Getenv("KMIRROR_MIRROR_MB")); err == nil && v > 0 {
		mb = v
	}
	const parts = 8
	a := startCluster(t)
	var bopts []testcluster.Option
	for _, kv := range strings.Fields(os.Getenv("KMIRROR_MIRROR_B_CONFIG")) {
		k, v, _ := strings.Cut(kv, "=")
		bopts = append(bopts, testcluster.Config(k, v))
	}
	b := startCluster(t, bopts...)
	createTopic(t, a, "bulk", parts, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	p := a.Client(t, kgo.DefaultProduceTopic("bulk"), kgo.ProducerBatchCompression(kgo.Lz4Compression()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond))
	// Half random, half repeated bytes: compressible like typical data.
	rng := rand.New(rand.NewPCG(1, 2))
	pool := make([]byte, 8<<20)
	for i := range pool {
		if i%1024 < 512 {
			pool[i] = byte('a' + rng.IntN(26))
		} else {
			pool[i] = 'x'
		}
	}
	n := mb * 1024
	start := time.Now()
	for i := range n {
		off := (i * 1024) % (len(pool) - 1024)
		p.Produce(ctx, &kgo.Record{Value: pool[off : off+1024]}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
		_ = i
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("produced %d MiB of 1 KiB records (lz4) in %v", mb, time.Since(start).Round(time.Millisecond))
	an, bn := a.Nodes()[0], b.Nodes()[0]
	var bytesOnDisk int64
	for q := range int32(parts) {
		if pp, ok := an.Server().Broker().Replicas().Partition(tpOf("bulk", q)); ok {
			bytesOnDisk += pp.Log().Size()
		}
	}

	// The fetch limit: a consumer reading everything from A.
	start = time.Now()
	cl := a.Client(t, kgo.ConsumeTopics("bulk"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(50<<20))
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		got += fs.NumRecords()
	}
	consumer := time.Since(start)
	cl.Close()

	start = time.Now()
	createMirror(t, b, a, "bulk")
	mirrorTopics(t, b, opAdd, "bulk", "bulk")
	waitStates(t, b, "bulk", "bulk", parts, wire.MirrorStateMirroring)
	setup := time.Since(start)
	target := leos(t, an, "bulk", parts)
	for {
		done := true
		for q, end := range target {
			if leo(t, bn, "bulk", int32(q)) < end {
				done = false
			}
		}
		if done {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
		time.Sleep(5 * time.Millisecond)
	}
	mirror := time.Since(start)
	mib := float64(bytesOnDisk) / (1 << 20)
	t.Logf("%.0f MiB on disk: consumer from A %v (%.0f MiB/s), mirror catch-up %v (%.0f MiB/s, %.2f of the consumer; %v of it to create the mirror and reach MIRRORING)",
		mib, consumer.Round(time.Millisecond), mib/consumer.Seconds(), mirror.Round(time.Millisecond), mib/mirror.Seconds(), consumer.Seconds()/mirror.Seconds(), setup.Round(time.Millisecond))
}

// TestFailoverTime measures how long failing over 100 mirrored partitions
// takes, from RemoveTopicsFromMirror until every partition is STOPPED
// (KMIRROR_LONG=1 only; the figure is logged).
func TestFailoverTime(t *testing.T) {
	if os.Getenv("KMIRROR_LONG") == "" {
		t.Skip("long test: set KMIRROR_LONG=1")
	}
	const parts = 100
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "many", parts, nil)
	produceN(t, a, "many", "x", 500)
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "many")
	waitStates(t, b, "m", "many", parts, wire.MirrorStateMirroring)
	waitIdentical(t, a.Nodes()[0], b.Nodes()[0], "many", parts)
	start := time.Now()
	mirrorTopics(t, b, opRemove, "m", "many")
	waitStates(t, b, "m", "many", parts, wire.MirrorStateStopped)
	t.Logf("failover of %d partitions: %v", parts, time.Since(start).Round(time.Millisecond))
}
