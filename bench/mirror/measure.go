package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// consumeAll reads want records of topic from the start of addr with a
// fresh franz-go consumer (franz-go's default fetch settings: 50 MiB per
// response, 1 MiB per partition) and returns the time from client creation
// to the last record: what a consumer of the source can read, the fetch
// limit the mirror is compared with.
func consumeAll(ctx context.Context, addr, topic string, want int) (time.Duration, error) {
	start := time.Now()
	cl, err := client(addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
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
		if err := fetchErr(fs); err != nil {
			return 0, err
		}
		got += fs.NumRecords()
	}
	return time.Since(start), nil
}

func fetchErr(fs kgo.Fetches) error {
	var ferr error
	fs.EachError(func(t string, p int32, err error) {
		if !errors.Is(err, context.Canceled) && ferr == nil {
			ferr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
		}
	})
	return ferr
}

// createMirror creates mirror of src on dst and returns how long it took:
// the first mirror of a cluster also creates __mirror_state, a one-time
// cost kept out of the catch-up figure.
func createMirror(ctx context.Context, src, dst *node, mirror string) (time.Duration, error) {
	adm, err := mirroradmin.NewFromAddrs([]string{dst.addr})
	if err != nil {
		return 0, err
	}
	defer adm.Close()
	start := time.Now()
	if err := adm.CreateMirror(ctx, mirror, map[string]string{"bootstrap.servers": src.addr}); err != nil {
		return 0, fmt.Errorf("create mirror %s: %w", mirror, err)
	}
	return time.Since(start), nil
}

// mirrorCatchUp adds topic to mirror (which exists on dst) and returns the
// time from the AddTopicsToMirror request until every partition on dst
// reaches the source's log end offsets ends (the mirror copies batches as
// they are, so equal log ends mean the same data), and how much of it went
// to the first appended batch (the controller's checks against the
// source, topic creation, PREPARING).
func mirrorCatchUp(ctx context.Context, dst *node, mirror, topic string, ends []int64) (total, setup time.Duration, err error) {
	adm, err := mirroradmin.NewFromAddrs([]string{dst.addr})
	if err != nil {
		return 0, 0, err
	}
	defer adm.Close()
	start := time.Now()
	res, err := adm.AddTopics(ctx, mirror, topic)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("add %s to the mirror: %w", topic, err)
	}
	for setup == 0 {
		for q := range ends {
			if dst.logEnd(topic, int32(q)) > 0 {
				setup = time.Since(start)
			}
		}
		if err := pause(ctx, time.Millisecond); err != nil {
			return 0, 0, fmt.Errorf("no data mirrored: %w", err)
		}
	}
	if err := dst.waitCaughtUp(ctx, topic, ends); err != nil {
		return 0, 0, err
	}
	return time.Since(start), setup, nil
}

// fetchAll reads every partition of topic from offset 0 to ends with raw
// Fetch requests (kmsg, no record decoding, one request in flight, 50 MiB
// per response and 1 MiB per partition like franz-go's consumer) and
// returns the time from client creation to the last batch: the bytes the
// source can serve to one sequential fetcher, what the mirror's fetcher
// does minus the appends.
func fetchAll(ctx context.Context, addr, topic string, ends []int64) (time.Duration, error) {
	start := time.Now()
	// v12 names topics (v13+ wants topic ids); franz-go sends the highest
	// version both sides know unless capped.
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(int16(kmsg.Fetch), 12)
	cl, err := client(addr, kgo.MaxVersions(versions))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	pos := make([]int64, len(ends))
	for {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.ReplicaID = -1
		req.MaxWaitMillis = 500
		req.MinBytes = 1
		req.MaxBytes = 50 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for q, end := range ends {
			if pos[q] >= end {
				continue
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = int32(q), pos[q], 1<<20
			rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) == 0 {
			return time.Since(start), nil
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return 0, fmt.Errorf("fetch: %w", err)
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return 0, fmt.Errorf("fetch %s/%d: %w", topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
				}
				if next := nextOffset(p.RecordBatches); next > pos[p.Partition] {
					pos[p.Partition] = next
				}
			}
		}
	}
}

// nextOffset returns the offset after the last complete batch in b, -1 if
// there is none; only the batch headers are read.
func nextOffset(b []byte) int64 {
	next := int64(-1)
	for len(b) >= 61 {
		size := int(binary.BigEndian.Uint32(b[8:])) + 12
		if size > len(b) {
			break
		}
		base := int64(binary.BigEndian.Uint64(b))
		next = base + int64(binary.BigEndian.Uint32(b[23:])) + 1
		b = b[size:]
	}
	return next
}

// copyTopic is a MirrorMaker-style copier written with franz-go: a consumer
// of topic on src and a producer to the same partition of topic on dst
// (lz4, acks=all, idempotent: franz-go's producer defaults, as MirrorMaker
// 2's producer uses), records re-sent one by one with their keys, values,
// headers and timestamps. It returns the time from the consumer's creation
// until the last of want records is acknowledged by dst.
func copyTopic(ctx context.Context, src, dst, topic string, want int) (time.Duration, error) {
	start := time.Now()
	in, err := client(src, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := client(dst, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.Lz4Compression()), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return 0, err
	}
	defer out.Close()
	var failed atomic.Int64
	var firstErr atomic.Value
	done := func(_ *kgo.Record, err error) {
		if err != nil && failed.Add(1) == 1 {
			firstErr.Store(err)
		}
	}
	got := 0
	for got < want {
		fs := in.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("copied %d of %d records: %w", got, want, err)
		}
		if err := fetchErr(fs); err != nil {
			return 0, err
		}
		fs.EachRecord(func(r *kgo.Record) {
			out.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp,
				Partition: r.Partition}, done)
			got++
		})
	}
	if err := out.Flush(ctx); err != nil {
		return 0, fmt.Errorf("flush: %w", err)
	}
	if n := failed.Load(); n > 0 {
		return 0, fmt.Errorf("%d records failed: %w", n, firstErr.Load().(error))
	}
	return time.Since(start), nil
}

// failoverTime adds topic (already filled on src, partitions partitions)
// to mirror on dst, waits until it is copied, then fails it over and
// returns the time from the RemoveTopicsFromMirror request until
// DescribeMirrors shows every partition STOPPED.
func failoverTime(ctx context.Context, src, dst *node, mirror, topic string, partitions int32) (time.Duration, error) {
	adm, err := mirroradmin.NewFromAddrs([]string{dst.addr})
	if err != nil {
		return 0, err
	}
	defer adm.Close()
	res, err := adm.AddTopics(ctx, mirror, topic)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("add %s to the mirror: %w", topic, err)
	}
	if err := waitStates(ctx, adm, mirror, topic, partitions, mirroradmin.StateMirroring); err != nil {
		return 0, err
	}
	if err := dst.waitCaughtUp(ctx, topic, endOffsets(src, topic, partitions)); err != nil {
		return 0, err
	}
	start := time.Now()
	res, err = adm.Failover(ctx, mirror, topic)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return 0, fmt.Errorf("fail over %s: %w", topic, err)
	}
	if err := waitStates(ctx, adm, mirror, topic, partitions, mirroradmin.StateStopped); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// waitStates polls DescribeMirrors until every partition of topic is in
// state.
func waitStates(ctx context.Context, adm *mirroradmin.Client, mirror, topic string, partitions int32, state mirroradmin.State) error {
	for {
		ms, err := adm.DescribeMirrors(ctx, mirror)
		if err != nil {
			return fmt.Errorf("describe %s: %w", mirror, err)
		}
		var states []mirroradmin.State
		if m, ok := ms.On(mirror); ok {
			for _, t := range m.Topics {
				if t.Name == topic {
					for _, p := range t.Partitions {
						states = append(states, p.State)
					}
				}
			}
		}
		if len(states) == int(partitions) && !slices.ContainsFunc(states, func(s mirroradmin.State) bool { return s != state }) {
			return nil
		}
		if err := pause(ctx, 5*time.Millisecond); err != nil {
			return fmt.Errorf("%s partitions of %s never all %v: %w", mirror, topic, state, err)
		}
	}
}

// pause waits for d or the end of ctx.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
