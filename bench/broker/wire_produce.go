package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceVersion is the Produce version the generator sends: the first
// flexible one, which kmirror (v3-v11) and kfake (v3-v13) both serve and
// which still names topics (v13 uses topic ids).
const produceVersion = 9

// produceBatches are the record batches of one codec, encoded once per
// invocation (the lz4 compression included): batch p goes to partition p of
// every request.
type produceBatches struct {
	lz4     bool
	records int   // records per batch
	payload int64 // record value bytes of all the batches together
	batches [][]byte
}

// encodeProduceBatches builds partitions batches of batchRecords records
// each, drawing values in turn from values so that partitions hold different
// bytes, as a non-idempotent producer writes them: producer id, epoch and
// base sequence -1, CreateTime stamped now, no keys, no headers.
func encodeProduceBatches(partitions int32, batchRecords int, values [][]byte, lz4 bool) (produceBatches, error) {
	pb := produceBatches{lz4: lz4, records: batchRecords}
	var comp kgo.Compressor
	if lz4 {
		c, err := kgo.DefaultCompressor(kgo.Lz4Compression())
		if err != nil {
			return pb, fmt.Errorf("lz4 compressor: %w", err)
		}
		comp = c
	}
	now := time.Now().UnixMilli()
	next := 0
	for range partitions {
		vs := make([][]byte, batchRecords)
		for i := range vs {
			vs[i] = values[next%len(values)]
			pb.payload += int64(len(vs[i]))
			next++
		}
		b, err := encodeBatch(vs, now, comp)
		if err != nil {
			return pb, err
		}
		pb.batches = append(pb.batches, b)
	}
	return pb, nil
}

// castagnoli is the CRC-32C table of record batch checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeBatch builds one v2 record batch holding values (offset deltas 0..n-1,
// timestamp ts), its records compressed with comp if it is not nil.
func encodeBatch(values [][]byte, ts int64, comp kgo.Compressor) ([]byte, error) {
	var recs, body []byte
	for i, v := range values {
		body = append(body[:0], 0)                 // record attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = binary.AppendVarint(body, -1)       // null key
		body = binary.AppendVarint(body, int64(len(v)))
		body = append(body, v...)
		body = binary.AppendVarint(body, 0) // no headers
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	var attrs int16
	if comp != nil {
		var buf bytes.Buffer
		out, codec := comp.Compress(&buf, recs)
		if codec != kgo.CodecLz4 {
			return nil, fmt.Errorf("compressing a batch gave codec %d, want lz4", codec)
		}
		recs, attrs = slices.Clone(out), int16(codec)
	}
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(len(values) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(len(values)),
		Records:              recs,
	}
	b := rb.AppendTo(nil)
	// The length counts what follows it; the CRC covers the attributes
	// (byte 21) to the end.
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b, nil
}

// produceLoad is a whole Produce request frame for one topic, sent again
// and again: only its correlation id changes between sends. Every request
// carries one batch for each partition of the topic.
type produceLoad struct {
	frame      []byte
	partitions int32
	records    int   // records per request
	payload    int64 // record value bytes per request
}

// newProduceLoad encodes the request that writes pb's batches to topic
// with acks.
func newProduceLoad(topic string, acks int16, pb produceBatches) produceLoad {
	req := kmsg.NewPtrProduceRequest()
	req.Version = produceVersion
	req.Acks = acks
	req.TimeoutMillis = 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p, b := range pb.batches {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = int32(p), b
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	n := len(pb.batches)
	return produceLoad{
		frame:      kmsg.NewRequestFormatter(kmsg.FormatterClientID(wireClientID)).AppendRequest(nil, req, 0),
		partitions: int32(n),
		records:    n * pb.records,
		payload:    pb.payload,
	}
}

// corrAt is where a request frame holds its correlation id: after the size
// prefix, the API key and the version.
const corrAt = 8

// wireProduce sends requests copies of load's request over conns
// connections to addr, with at most window requests unanswered on each
// connection, and checks every response: answered in request order, every
// partition without error. It returns the record value MB/s, timed from the
// first request written to the last response read (the connections are
// opened before).
func wireProduce(ctx context.Context, addr string, load produceLoad, requests, conns, window int) (float64, error) {
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
		n := requests / conns
		if i < requests%conns {
			n++
		}
		// slots holds one token per request written and not yet
		// answered: the writer blocks when window are out.
		slots := make(chan struct{}, window)
		wg.Go(func() {
			if err := writeRequests(ctx, c, load.frame, n, slots); err != nil {
				cancel(err)
			}
		})
		wg.Go(func() {
			if err := readProduceResponses(c, load, n, slots); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return 0, err
	}
	return mbps(int64(requests)*load.payload, elapsed), nil
}

// writeRequests writes n copies of frame to c with correlation ids 0..n-1,
// taking a slot before each.
func writeRequests(ctx context.Context, c *wireConn, frame []byte, n int, slots chan<- struct{}) error {
	frame = slices.Clone(frame) // the correlation id is patched in place
	for corr := range n {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		binary.BigEndian.PutUint32(frame[corrAt:], uint32(corr))
		// Write returns once the kernel has every byte, so the frame
		// may be patched again afterwards.
		if _, err := c.nc.Write(frame); err != nil {
			return fmt.Errorf("write produce request %d: %w", corr, err)
		}
	}
	return nil
}

// readProduceResponses reads n Produce responses from c, which must come in
// request order and answer every partition of load without error, and
// frees a slot after each.
func readProduceResponses(c *wireConn, load produceLoad, n int, slots <-chan struct{}) error {
	resp := kmsg.NewPtrProduceResponse()
	for want := range n {
		corr, body, err := c.readResponse(true)
		if err != nil {
			return fmt.Errorf("produce response %d: %w", want, err)
		}
		if corr != int32(want) {
			return fmt.Errorf("produce response with correlation id %d, want %d (responses out of order)", corr, want)
		}
		resp.Default()
		resp.Version = produceVersion
		if err := resp.ReadFrom(body); err != nil {
			return fmt.Errorf("decode produce response %d: %w", want, err)
		}
		if err := checkProduceResponse(resp, load.partitions); err != nil {
			return fmt.Errorf("produce response %d: %w", want, err)
		}
		<-slots
	}
	return nil
}

// checkProduceResponse wants every partition 0..partitions-1 answered once,
// without error.
func checkProduceResponse(resp *kmsg.ProduceResponse, partitions int32) error {
	got := int32(0)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				msg := ""
				if p.ErrorMessage != nil {
					msg = ": " + *p.ErrorMessage
				}
				return fmt.Errorf("%s/%d%s: %w", t.Topic, p.Partition, msg, kerr.ErrorForCode(p.ErrorCode))
			}
			got++
		}
	}
	if got != partitions {
		return fmt.Errorf("%d partitions answered, want %d", got, partitions)
	}
	return nil
}

// bytes is the size of all the batches, what a request carries.
func (pb produceBatches) bytes() int64 {
	var n int64
	for _, b := range pb.batches {
		n += int64(len(b))
	}
	return n
}
