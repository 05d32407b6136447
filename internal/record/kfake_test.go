package record

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// These tests exchange batches with franz-go's client through kfake, so
// that compression, CRC and layout are checked against an implementation
// nobody here wrote: batches the kgo producer compressed are decoded by us,
// and batches we compressed are decoded and CRC-checked by the kgo consumer.

var kgoCodecs = map[Codec]kgo.CompressionCodec{
	CodecNone:   kgo.NoCompression(),
	CodecGzip:   kgo.GzipCompression(),
	CodecSnappy: kgo.SnappyCompression(),
	CodecLZ4:    kgo.Lz4Compression(),
	CodecZstd:   kgo.ZstdCompression(),
}

func startFake(t *testing.T, topics ...string) (*kfake.Cluster, context.Context) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c, ctx
}

func newClient(t *testing.T, c *kfake.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	// Version 3.0 caps Fetch at v12, which names topics rather than ids.
	opts = append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.MaxVersions(kversion.V3_0_0())}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestDecodeBatchesProducedByKgo(t *testing.T) {
	var topics []string
	for c := range kgoCodecs {
		topics = append(topics, "from-kgo-"+c.String())
	}
	fake, ctx := startFake(t, topics...)
	for codec, kc := range kgoCodecs {
		topic := "from-kgo-" + codec.String()
		cl := newClient(t, fake, kgo.ProducerBatchCompression(kc), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(time.Minute))
		const n = 50
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{
				Key:     []byte(fmt.Sprintf("key-%d", i)),
				Value:   bytes.Repeat([]byte(fmt.Sprintf("value %d ", i)), 40),
				Headers: []kgo.RecordHeader{{Key: "i", Value: []byte{byte(i)}}},
			})
		}
		// With a minute of linger, all records wait for Flush and go out together.
		for _, r := range recs {
			cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("%v: produce: %v", codec, err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}

		batches := fetchRaw(t, ctx, cl, topic)
		seen := 0
		for len(batches) > 0 {
			b, rest, err := NextBatch(batches)
			if err != nil {
				t.Fatalf("%v: %v", codec, err)
			}
			batches = rest
			h, _ := ParseHeader(b)
			if h.Codec() != codec {
				t.Fatalf("kgo wrote codec %v, want %v", h.Codec(), codec)
			}
			if !h.HasProducerID() || h.BaseSequence != int32(seen) {
				t.Errorf("%v: idempotent producer header %+v", codec, h)
			}
			if err := ValidateRecords(b, true, 0); err != nil {
				t.Fatalf("%v: %v", codec, err)
			}
			err = ForEachRecord(b, 0, func(r Record) error {
				want := recs[seen]
				if !bytes.Equal(r.Key, want.Key) || !bytes.Equal(r.Value, want.Value) ||
					len(r.Headers) != 1 || r.Headers[0].Key != "i" || !bytes.Equal(r.Headers[0].Value, want.Headers[0].Value) ||
					h.BaseTimestamp+r.TimestampDelta != want.Timestamp.UnixMilli() || h.BaseOffset+int64(r.OffsetDelta) != want.Offset {
					t.Errorf("%v: record %d = %+v", codec, seen, r)
				}
				seen++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if seen != n {
			t.Fatalf("%v: decoded %d records, want %d", codec, seen, n)
		}
	}
}

// fetchRaw fetches partition 0 of topic from offset 0 and returns the raw
// record batch bytes.
func fetchRaw(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) []byte {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 0
	req.MaxBytes = 64 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 64 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("fetch response %+v", resp)
	}
	return resp.Topics[0].Partitions[0].RecordBatches
}

func TestKgoConsumesOurBatches(t *testing.T) {
	var topics []string
	for c := range kgoCodecs {
		topics = append(topics, "from-us-"+c.String())
	}
	fake, ctx := startFake(t, topics...)
	producer := newClient(t, fake)
	for codec := range kgoCodecs {
		topic := "from-us-" + codec.String()
		want := sampleRecords()
		want[4].TimestampDelta = 12345 // a time.Time cannot hold the sample's huge delta
		b, err := Build(BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Codec: codec, BaseTimestamp: 1700000000000}, want)
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		req.TimeoutMillis = 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = b
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, producer)
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("%v: produce error code %d", codec, code)
		}

		consumer := newClient(t, fake, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []*kgo.Record
		for len(got) < len(want) {
			fs := consumer.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("%v: consumed %d of %d records before the deadline", codec, len(got), len(want))
			}
			for _, fe := range fs.Errors() {
				t.Fatalf("%v: fetch error: %v", codec, fe.Err)
			}
			got = append(got, fs.Records()...)
		}
		for i, r := range got {
			w := want[i]
			if !nullableEqual(r.Key, w.Key) && !(len(r.Key) == 0 && len(w.Key) == 0) {
				t.Errorf("%v: record %d key %q, want %q", codec, i, r.Key, w.Key)
			}
			if !bytes.Equal(r.Value, w.Value) || r.Offset != int64(i) || r.Attrs.CompressionType() != uint8(codec) ||
				r.Timestamp.UnixMilli() != 1700000000000+w.TimestampDelta || len(r.Headers) != len(w.Headers) {
				t.Errorf("%v: record %d = %+v", codec, i, r)
			}
		}
	}
}
