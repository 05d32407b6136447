package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchVersion is the Fetch version of the raw fetch loop: the last one that
// names topics (v13 uses topic ids), flexible, served by kmirror and kfake.
const fetchVersion = 12

// Kafka's consumer defaults (fetch.max.bytes, max.partition.fetch.bytes).
const (
	fetchMaxBytes          = 50 << 20
	fetchPartitionMaxBytes = 1 << 20
)

// batchHeaderLen is the size of a v2 record batch header.
const batchHeaderLen = 61

// wireFetch reads partitions 0..len(ends)-1 of topic from offset 0 to ends
// over conns connections to addr (partition p on connection p % conns),
// each with one Fetch in flight that asks for all of its partitions not read
// to the end yet, and returns the time from the first request to the last
// response. Records are not decoded: only batch headers are read, to find
// the next offset, and they must follow each other without a gap; when a
// partition is done its high watermark must be exactly its end.
func wireFetch(ctx context.Context, addr, topic string, ends []int64, conns int) (time.Duration, error) {
	conns = max(1, min(conns, len(ends)))
	cs, err := dialWires(ctx, addr, conns)
	if err != nil {
		return 0, err
	}
	defer closeWires(cs)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := closeOnDone(ctx, cs)
	defer stop()

	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range cs {
		var mine []int32
		for p := i; p < len(ends); p += conns {
			mine = append(mine, int32(p))
		}
		wg.Go(func() {
			if err := fetchPartitions(c, topic, mine, ends); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return 0, err
	}
	return elapsed, nil
}

// fetchPartitions is one connection's fetch loop over parts.
func fetchPartitions(c *wireConn, topic string, parts []int32, ends []int64) error {
	pos := make(map[int32]int64, len(parts))
	for _, p := range parts {
		pos[p] = 0
	}
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(wireClientID))
	resp := kmsg.NewPtrFetchResponse()
	var frame []byte
	for corr := int32(0); len(pos) > 0; corr++ {
		req := kmsg.NewPtrFetchRequest()
		req.Version = fetchVersion
		req.ReplicaID = -1
		req.MaxWaitMillis = 500
		req.MinBytes = 1
		req.MaxBytes = fetchMaxBytes
		req.SessionEpoch = -1 // a full fetch: no session is created
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for _, p := range parts {
			off, ok := pos[p]
			if !ok {
				continue
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, fetchPartitionMaxBytes
			rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		frame = f.AppendRequest(frame[:0], req, corr)
		if _, err := c.nc.Write(frame); err != nil {
			return fmt.Errorf("write fetch request: %w", err)
		}
		got, body, err := c.readResponse(true)
		if err != nil {
			return fmt.Errorf("fetch response: %w", err)
		}
		if got != corr {
			return fmt.Errorf("fetch response with correlation id %d, want %d", got, corr)
		}
		resp.Default()
		resp.Version = fetchVersion
		if err := resp.UnsafeReadFrom(body); err != nil {
			return fmt.Errorf("decode fetch response: %w", err)
		}
		if resp.ErrorCode != 0 {
			return fmt.Errorf("fetch: %w", kerr.ErrorForCode(resp.ErrorCode))
		}
		progress := false
		for _, t := range resp.Topics {
			for _, rp := range t.Partitions {
				p := rp.Partition
				off, ok := pos[p]
				if !ok {
					return fmt.Errorf("fetch response for %s/%d, not asked for", topic, p)
				}
				if rp.ErrorCode != 0 {
					return fmt.Errorf("fetch %s/%d at %d: %w", topic, p, off, kerr.ErrorForCode(rp.ErrorCode))
				}
				next, err := walkBatches(rp.RecordBatches, off)
				if err != nil {
					return fmt.Errorf("fetch %s/%d at %d: %w", topic, p, off, err)
				}
				progress = progress || next > off
				switch end := ends[p]; {
				case next > end:
					return fmt.Errorf("%s/%d holds offsets up to %d, %d were produced", topic, p, next, end)
				case next == end:
					if rp.HighWatermark != end {
						return fmt.Errorf("%s/%d: high watermark %d once all %d produced records were read", topic, p, rp.HighWatermark, end)
					}
					delete(pos, p)
				case next == off && rp.HighWatermark <= off:
					// Everything was acknowledged before the fetch
					// loop started: nothing may be missing.
					return fmt.Errorf("%s/%d ends at %d (high watermark %d), %d were produced", topic, p, off, rp.HighWatermark, end)
				default:
					pos[p] = next
				}
			}
		}
		if !progress && len(pos) > 0 {
			return fmt.Errorf("fetch of %s made no progress (partitions at %v)", topic, pos)
		}
	}
	return nil
}

// walkBatches reads the headers of the whole record batches in b, which
// must start at offset from and follow each other, and returns the offset
// after the last one (from if there is none). A partial batch at the end (a
// response cut at the partition's byte limit) is ignored.
func walkBatches(b []byte, from int64) (int64, error) {
	next := from
	for len(b) >= batchHeaderLen {
		size := int64(binary.BigEndian.Uint32(b[8:])) + 12
		if size < batchHeaderLen {
			return 0, fmt.Errorf("record batch of %d bytes at offset %d", size, next)
		}
		if size > int64(len(b)) {
			break
		}
		base := int64(binary.BigEndian.Uint64(b))
		if base != next {
			return 0, fmt.Errorf("record batch at offset %d, want %d", base, next)
		}
		next = base + int64(int32(binary.BigEndian.Uint32(b[23:]))) + 1
		if next <= base {
			return 0, fmt.Errorf("record batch at offset %d with a negative last offset delta", base)
		}
		b = b[size:]
	}
	return next, nil
}
