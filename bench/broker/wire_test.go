package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The wire generator's smoke tests: a few requests against kfake, an
// in-process kmirror node and the sink, checked from the other side. The
// benchmark itself runs only from the command.

const (
	testPartitions   = 3
	testBatchRecords = 4
	testRequests     = 10
)

// wireRoundTrip produces testRequests requests of both codecs into fresh
// topics of the broker at bootstrap, reads each acks=-1 topic back with the
// raw fetch loop and with a franz-go consumer, and checks that the consumer
// sees exactly the values encoded, in order, in every partition.
func wireRoundTrip(t *testing.T, bootstrap string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	values := payloads(16, 100)
	for _, lz4 := range []bool{false, true} {
		pb, err := encodeProduceBatches(testPartitions, testBatchRecords, values, lz4)
		if err != nil {
			t.Fatal(err)
		}
		if want := int64(testPartitions * testBatchRecords * 100); pb.payload != want {
			t.Fatalf("payload of the batches %d, want %d", pb.payload, want)
		}
		for _, acks := range []int16{1, -1} {
			topic := fmt.Sprintf("wire-lz4-%v-acks%d-%d", lz4, acks, time.Now().UnixNano())
			if err := createTopic(ctx, bootstrap, topic, testPartitions); err != nil {
				t.Fatal(err)
			}
			load := newProduceLoad(topic, acks, pb)
			mbs, err := wireProduce(ctx, bootstrap, load, testRequests, 2, 2)
			if err != nil {
				t.Fatalf("lz4=%v acks=%d: %v", lz4, acks, err)
			}
			if mbs <= 0 {
				t.Fatalf("lz4=%v acks=%d: %.1f MB/s", lz4, acks, mbs)
			}
			if acks != -1 {
				continue
			}
			end := int64(testRequests * testBatchRecords)
			ends := []int64{end, end, end}
			if _, err := wireFetch(ctx, bootstrap, topic, ends, 2); err != nil {
				t.Fatalf("lz4=%v: fetch: %v", lz4, err)
			}
			// One record more than was produced is missing, and the
			// fetch loop must say so rather than wait.
			if _, err := wireFetch(ctx, bootstrap, topic, []int64{end, end + 1, end}, 1); err == nil {
				t.Fatalf("lz4=%v: fetch up to an offset past the end succeeded", lz4)
			}
			checkConsumed(ctx, t, bootstrap, topic, values, int(end))
		}
	}
}

// checkConsumed reads topic with franz-go and checks that partition p holds
// perPartition records whose values are values[p*testBatchRecords+i], i
// cycling through one batch (every request repeats the same batches).
func checkConsumed(ctx context.Context, t *testing.T, bootstrap, topic string, values [][]byte, perPartition int) {
	t.Helper()
	cl, err := brokerClient(bootstrap, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := make([]int, testPartitions)
	total := 0
	for total < testPartitions*perPartition {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d records: %v", total, err)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch partition %d: %v", p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			p := r.Partition
			want := values[(int(p)*testBatchRecords+got[p]%testBatchRecords)%len(values)]
			if r.Offset != int64(got[p]) || !bytes.Equal(r.Value, want) || r.Key != nil {
				t.Fatalf("partition %d offset %d (want %d): value %.20q key %q, want value %.20q and no key", p, r.Offset, got[p], r.Value, r.Key, want)
			}
			got[p]++
			total++
		})
	}
	for p, n := range got {
		if n != perPartition {
			t.Fatalf("partition %d: %d records, want %d", p, n, perPartition)
		}
	}
}

func TestWireKfake(t *testing.T) {
	k, err := startKfake()
	if err != nil {
		t.Fatal(err)
	}
	defer k.close()
	wireRoundTrip(t, k.bootstrap())
}

func TestWireKmirror(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	k, err := startKmirror(t.TempDir(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := k.close(); err != nil {
			t.Error(err)
		}
	}()
	wireRoundTrip(t, k.bootstrap())
}

// TestWireProduceErrors: a partition the topic does not have is a failed
// run, not a figure.
func TestWireProduceErrors(t *testing.T) {
	k, err := startKfake()
	if err != nil {
		t.Fatal(err)
	}
	defer k.close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := createTopic(ctx, k.bootstrap(), "two", 2); err != nil {
		t.Fatal(err)
	}
	pb, err := encodeProduceBatches(3, 2, payloads(4, 64), false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = wireProduce(ctx, k.bootstrap(), newProduceLoad("two", 1, pb), 4, 1, 2)
	if !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("produce to partition 2 of a 2-partition topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}

// TestWireSink: the sink answers every request, so the generator's own
// ceiling is measurable.
func TestWireSink(t *testing.T) {
	s, err := startProduceSink("t", testPartitions)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := encodeProduceBatches(testPartitions, testBatchRecords, payloads(16, 100), false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := wireProduce(ctx, s.addr(), newProduceLoad("t", 1, pb), 50, 3, 4); err != nil {
		t.Fatal(err)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
}

// batchHeader returns a record batch header (and body of size-61 zero
// bytes) at base with records offsets.
func batchHeader(base int64, records int32, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint64(b, uint64(base))
	binary.BigEndian.PutUint32(b[8:], uint32(size-12))
	binary.BigEndian.PutUint32(b[23:], uint32(records-1))
	return b
}

func TestWalkBatches(t *testing.T) {
	two := append(batchHeader(10, 5, 100), batchHeader(15, 3, 80)...)
	for _, c := range []struct {
		name string
		b    []byte
		from int64
		want int64
		err  bool
	}{
		{name: "empty", b: nil, from: 7, want: 7},
		{name: "two batches", b: two, from: 10, want: 18},
		{name: "partial batch at the end", b: append(two, batchHeader(18, 2, 90)[:70]...), from: 10, want: 18},
		{name: "gap", b: append(batchHeader(10, 5, 100), batchHeader(16, 3, 80)...), from: 10, err: true},
		{name: "not at the fetch offset", b: two, from: 9, err: true},
		{name: "size below a header", b: batchHeader(10, 5, 61)[:61:61], from: 10, want: 15},
		{name: "negative delta", b: batchHeader(10, -5, 100), from: 10, err: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := walkBatches(c.b, c.from)
			if (err != nil) != c.err || (!c.err && got != c.want) {
				t.Fatalf("walkBatches = %d, %v; want %d, error %v", got, err, c.want, c.err)
			}
		})
	}
	short := batchHeader(10, 5, 100)
	binary.BigEndian.PutUint32(short[8:], 20)
	if _, err := walkBatches(short, 10); err == nil {
		t.Fatal("a batch announcing 32 bytes was accepted")
	}
}

func TestLoopbackAndRelay(t *testing.T) {
	if v, err := loopbackTCP(8<<20, 3, 64<<10); err != nil || v <= 0 {
		t.Fatalf("loopback: %.1f MB/s, %v", v, err)
	}
	if v, err := relayTCPToDisk(t.TempDir(), 8<<20, 2); err != nil || v <= 0 {
		t.Fatalf("relay: %.1f MB/s, %v", v, err)
	}
}

// FuzzWalkBatches: whatever a broker answers, the fetch loop's header walk
// neither panics nor goes backwards.
func FuzzWalkBatches(f *testing.F) {
	f.Add(append(batchHeader(0, 3, 80), batchHeader(3, 1, 70)...), int64(0))
	f.Add(batchHeader(5, 1, 61)[:40], int64(5))
	f.Fuzz(func(t *testing.T, b []byte, from int64) {
		next, err := walkBatches(b, from)
		if err == nil && next < from {
			t.Fatalf("walkBatches went from %d back to %d", from, next)
		}
	})
}

// FuzzReadResponse: response frames and header tag sections of any shape
// are read or refused, never a panic or an allocation past the bound.
func FuzzReadResponse(f *testing.F) {
	f.Add([]byte{0, 0, 0, 5, 0, 0, 0, 7, 0}, true)
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 7, 1, 3, 2, 0xaa, 0xbb}, true)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, false)
	f.Fuzz(func(t *testing.T, b []byte, flexible bool) {
		c := &wireConn{br: bufioReader(b)}
		for range 4 {
			if _, _, err := c.readResponse(flexible); err != nil {
				return
			}
		}
	})
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// TestCoreSecondsPerGB: the report's core-s per GB is the process's CPU
// seconds between the samples per 10^9 bytes, and nothing when /proc could
// not be read.
func TestCoreSecondsPerGB(t *testing.T) {
	from := cpuSample{self: 10, readable: true}
	to := cpuSample{self: 10.6, readable: true}
	if c, ok := coreSecondsPerGB(from, to, 2e9); !ok || c < 0.2999 || c > 0.3001 {
		t.Fatalf("0.6 s for 2 GB: %v %v, want 0.3", c, ok)
	}
	if _, ok := coreSecondsPerGB(cpuSample{}, to, 2e9); ok {
		t.Fatal("a figure from an unreadable sample")
	}
	var r row
	r.addCPUPerGB(from, to, 1e9)
	r.addCPUPerGB(from, cpuSample{self: 11, readable: true}, 1e9)
	r.addCPUPerGB(from, cpuSample{self: 10.2, readable: true}, 1e9)
	if got := r.cpuPerGBCell(); got != "0.60" {
		t.Fatalf("median cell %q, want 0.60", got)
	}
}
