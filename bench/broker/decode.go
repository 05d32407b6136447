package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The consume side's client ceiling: what franz-go's own processing of
// fetched batches (CRC check, decompression, building the records) reaches
// on this machine when it has nothing else to do, no broker to wait for and
// no socket to read. A consumer can go no faster through this client,
// whatever the broker.

// decodeRounds is how often the fetched data is decoded for one figure; the
// median round counts, so that one slow round (a GC, another job) does not.
const decodeRounds = 5

// clientDecode fetches every batch of topic (partitions 0..partitions-1)
// from bootstrap once, then times franz-go's kgo.ProcessFetchPartition over
// them and returns the payload MB/s (want records of payloadBytes in all).
func clientDecode(ctx context.Context, bootstrap, topic string, partitions int32, want int, payloadBytes int64) (float64, error) {
	cl, err := brokerClient(bootstrap)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	tds, err := kadm.NewClient(cl).ListTopics(ctx, topic)
	if err != nil {
		return 0, err
	}
	td, ok := tds[topic]
	if !ok || td.Err != nil {
		return 0, fmt.Errorf("topic %s: %v", topic, td.Err)
	}
	var fetched []kmsg.FetchResponseTopicPartition
	for p := range partitions {
		parts, err := fetchAll(ctx, cl, td.ID, p)
		if err != nil {
			return 0, fmt.Errorf("fetch %s/%d: %w", topic, p, err)
		}
		fetched = append(fetched, parts...)
	}
	var rounds []time.Duration
	for range decodeRounds {
		start := time.Now()
		got := 0
		for i := range fetched {
			fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
				Topic: topic, Partition: fetched[i].Partition,
			}, &fetched[i], kgo.DefaultDecompressor(), nil)
			if fp.Err != nil {
				return 0, fmt.Errorf("decode %s/%d: %w", topic, fetched[i].Partition, fp.Err)
			}
			got += len(fp.Records)
		}
		rounds = append(rounds, time.Since(start))
		if got != want {
			return 0, fmt.Errorf("decoded %d records, want %d", got, want)
		}
	}
	return mbps(payloadBytes, medianDuration(rounds)), nil
}

// fetchAll reads partition p of the topic with id from offset 0 to its high
// watermark with plain Fetch requests, returning every response's partition.
func fetchAll(ctx context.Context, cl *kgo.Client, id [16]byte, p int32) ([]kmsg.FetchResponseTopicPartition, error) {
	var out []kmsg.FetchResponseTopicPartition
	for offset := int64(0); ; {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis = 0
		req.MaxBytes = 64 << 20
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, offset, 16<<20
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return nil, errors.New("fetch response without the partition")
		}
		part := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(part.ErrorCode); err != nil {
			return nil, err
		}
		if offset >= part.HighWatermark {
			return out, nil
		}
		next, err := nextOffset(part.RecordBatches)
		if err != nil {
			return nil, err
		}
		if next <= offset {
			return nil, fmt.Errorf("no progress at offset %d", offset)
		}
		out = append(out, part)
		offset = next
	}
}

// nextOffset returns the offset after the last whole batch of a fetched
// record set (batch base offset + last offset delta + 1).
func nextOffset(b []byte) (int64, error) {
	next := int64(-1)
	for len(b) >= 61 {
		var h kmsg.RecordBatch
		size := 12 + int(int32(uint32(b[8])<<24|uint32(b[9])<<16|uint32(b[10])<<8|uint32(b[11])))
		if size < 61 || size > len(b) {
			break
		}
		if err := h.ReadFrom(b[:size]); err != nil {
			return 0, err
		}
		next = h.FirstOffset + int64(h.LastOffsetDelta) + 1
		b = b[size:]
	}
	if next < 0 {
		return 0, errors.New("no whole batch in a fetch response")
	}
	return next, nil
}

func medianDuration(d []time.Duration) time.Duration {
	s := make(samples, len(d))
	for i, v := range d {
		s[i] = float64(v)
	}
	return time.Duration(s.median())
}
