package server_test

import (
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// dropProxy forwards Kafka connections to a broker, and instead of
// forwarding some Produce responses it closes the connection: the client
// cannot know whether those batches were written and must retry them.
type dropProxy struct {
	ln        net.Listener
	target    string
	dropEvery int // drop every dropEvery-th Produce response ...
	maxDrops  int // ... this many times at most

	mu       sync.Mutex
	produces int
	drops    int
	conns    map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup
}

func startDropProxy(t *testing.T, ln net.Listener, target string, dropEvery, maxDrops int) *dropProxy {
	p := &dropProxy{ln: ln, target: target, dropEvery: dropEvery, maxDrops: maxDrops, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *dropProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, s) {
			return
		}
		keys := &corrKeys{m: map[int32]int16{}}
		p.wg.Add(2)
		go p.pipe(c, s, keys, true)
		go p.pipe(s, c, keys, false)
	}
}

func (p *dropProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

// corrKeys maps the correlation ids of one connection's requests to their
// API keys.
type corrKeys struct {
	mu sync.Mutex
	m  map[int32]int16
}

// pipe copies frames from src to dst. Requests (client to broker) are
// noted; responses to Produce may be dropped, closing both connections.
func (p *dropProxy) pipe(src, dst net.Conn, keys *corrKeys, requests bool) {
	defer p.wg.Done()
	defer src.Close()
	defer dst.Close()
	for {
		frame, err := wire.ReadFrame(src, 1<<30, nil)
		if err != nil {
			return
		}
		if len(frame) < 8 {
			return
		}
		if requests {
			keys.mu.Lock()
			keys.m[int32(binary.BigEndian.Uint32(frame[4:]))] = int16(binary.BigEndian.Uint16(frame))
			keys.mu.Unlock()
		} else {
			corr := int32(binary.BigEndian.Uint32(frame))
			keys.mu.Lock()
			key, ok := keys.m[corr]
			delete(keys.m, corr)
			keys.mu.Unlock()
			if ok && key == int16(kmsg.Produce) && p.drop() {
				return
			}
		}
		out := binary.BigEndian.AppendUint32(nil, uint32(len(frame)))
		if _, err := dst.Write(append(out, frame...)); err != nil {
			return
		}
	}
}

func (p *dropProxy) drop() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.produces++
	if p.drops < p.maxDrops && p.produces%p.dropEvery == 0 {
		p.drops++
		return true
	}
	return false
}

func (p *dropProxy) dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.drops
}

func (p *dropProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// TestIdempotentRetriesAfterLostResponses: an idempotent producer whose
// Produce responses are lost (the connection dies after the broker wrote
// the batch) retries the batches, and the broker recognises the retries as
// duplicates: every record is in the log exactly once, in order.
func TestIdempotentRetriesAfterLostResponses(t *testing.T) {
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	proxyAddr := pl.Addr().String()
	// Clients learn the broker's address from Metadata, so the broker
	// advertises the proxy.
	c := testcluster.Start(t, testcluster.Config("advertised.listeners", "PLAINTEXT://"+proxyAddr))
	proxy := startDropProxy(t, pl, c.Node(1).Addr(), 5, 25)

	const topic, partitions, perPartition = "idempotent", 3, 2000
	createTopic(t, c.Admin(t), topic, partitions, nil)
	producer, err := kgo.NewClient(
		kgo.SeedBrokers(proxyAddr),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(time.Millisecond),
		kgo.MaxBufferedRecords(200), // many small requests, so many responses to lose
		kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()

	ctx := testCtx(t, 2*time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	for seq := range perPartition {
		for p := int32(0); p < partitions; p++ {
			wg.Add(1)
			producer.Produce(ctx, &kgo.Record{Partition: p, Value: []byte(value(topic, p, seq))}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			})
		}
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("produce: %v", err)
	default:
	}
	if proxy.dropped() == 0 {
		t.Fatal("the proxy dropped no Produce response; the test proved nothing")
	}
	t.Logf("%d Produce responses dropped", proxy.dropped())

	got := consumeExactly(t, c.Client(t), topic, partitions, perPartition)
	for p := int32(0); p < partitions; p++ {
		if len(got[p]) != perPartition {
			t.Fatalf("partition %d holds %d records, want %d", p, len(got[p]), perPartition)
		}
		for i, r := range got[p] {
			if string(r.Value) != value(topic, p, i) {
				t.Fatalf("partition %d offset %d: %q, want %q (a duplicate or a gap)", p, r.Offset, r.Value, value(topic, p, i))
			}
		}
	}
	// Nothing beyond the expected records: the log end is exactly there.
	ends, err := c.Admin(t).ListEndOffsets(testCtx(t, 30*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil || o.Offset != perPartition {
			t.Fatalf("partition %d ends at %d (%v), want %d", o.Partition, o.Offset, o.Err, perPartition)
		}
	})
}
