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

// TestCatchUpThroughput has B catch up with a pre-filled topic on A, beside
// a franz-go consumer reading the same data from A (the fetch limit of this
// machine): B must end byte-identical with A and the consumer must read
// every record. The normal run copies 4 MiB; with KMIRROR_LONG=1 it copies
// KMIRROR_MIRROR_MB (default 256 MiB) and is a measurement. The figures
// are logged, never asserted: the benchmark of record is bench/mirror
// (docs/benchmarks.md).
func TestCatchUpThroughput(t *testing.T) {
	mb := 4
	if os.Getenv("KMIRROR_LONG") != "" {
		mb = 256
		if v, err := strconv.Atoi(os.Getenv("KMIRROR_MIRROR_MB")); err == nil && v > 0 {
			mb = v
		}
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
			t.Fatalf("the consumer read %d of %d records: %v", got, n, ctx.Err())
		}
		got += fs.NumRecords()
	}
	consumer := time.Since(start)
	cl.Close()
	if got != n {
		t.Fatalf("the consumer read %d records, %d were produced", got, n)
	}

	start = time.Now()
	createMirror(t, b, a, "bulk")
	mirrorTopics(t, b, opAdd, "bulk", "bulk")
	waitStates(t, b, "bulk", "bulk", parts, wire.MirrorStateMirroring)
	setup := time.Since(start)
	target := leos(t, an, "bulk", parts)
	copied := func() bool {
		for q, end := range target {
			if leo(t, bn, "bulk", int32(q)) < end {
				return false
			}
		}
		return true
	}
	if os.Getenv("KMIRROR_LONG") == "" {
		waitFor(t, "B to catch up", copied)
	} else {
		for !copied() {
			if ctx.Err() != nil {
				t.Fatal(ctx.Err())
			}
			time.Sleep(5 * time.Millisecond) // pacing the poll of a measurement
		}
	}
	mirror := time.Since(start)
	waitIdentical(t, an, bn, "bulk", parts)
	mib := float64(bytesOnDisk) / (1 << 20)
	t.Logf("%.0f MiB on disk: consumer from A %v (%.0f MiB/s), mirror catch-up %v (%.0f MiB/s, %.2f of the consumer; %v of it to create the mirror and reach MIRRORING)",
		mib, consumer.Round(time.Millisecond), mib/consumer.Seconds(), mirror.Round(time.Millisecond), mib/mirror.Seconds(), consumer.Seconds()/mirror.Seconds(), setup.Round(time.Millisecond))
}

// TestFailoverTime fails over 100 mirrored partitions at once: every one
// must reach STOPPED, holding A's log byte for byte followed by one
// barrier, and take writes. How long it took, from RemoveTopicsFromMirror
// until every partition is STOPPED, is logged, never asserted. With
// KMIRROR_LONG=1 each partition holds more data (50 records instead of 5).
func TestFailoverTime(t *testing.T) {
	const parts = 100
	records := 500
	if os.Getenv("KMIRROR_LONG") != "" {
		records = 5000
	}
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "many", parts, nil)
	produceN(t, a, "many", "x", records)
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "many")
	waitStates(t, b, "m", "many", parts, wire.MirrorStateMirroring)
	an, bn := a.Nodes()[0], b.Nodes()[0]
	waitIdentical(t, an, bn, "many", parts)
	start := time.Now()
	mirrorTopics(t, b, opRemove, "m", "many")
	waitStates(t, b, "m", "many", parts, wire.MirrorStateStopped)
	t.Logf("failover of %d partitions: %v", parts, time.Since(start).Round(time.Millisecond))
	for p := range int32(parts) {
		_, src := logBytes(t, an, "many", p)
		_, data := logBytes(t, bn, "many", p)
		checkFailedOver(t, "many-"+itoa(int(p)), src, data) // A has no open transaction
	}
	if err := produceErr(t, b, "many"); err != nil {
		t.Fatalf("produce after the failover: %v", err)
	}
}
