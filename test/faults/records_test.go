package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// seqProducer produces numbered records (partition p gets seq 0, 1, 2, …)
// to every partition of a topic in the background with acks=-1 and
// idempotence, at a bounded rate, and remembers which were acknowledged.
// The client retries for ever, so a record fails only on an error the
// client gives up on, which the checks report.
type seqProducer struct {
	t      *testing.T
	topic  string
	parts  int32
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	acked   []map[int]bool // partition → acknowledged seqs
	nAcked  int
	nFailed int
	errs    []string // the first few failures
}

// produceRate is the records per second a seqProducer aims at: enough to
// have requests in flight at every fault, little enough that two cores
// still run three nodes' heartbeats on time.
const produceRate = 2000

// padding makes records about 100 bytes.
var padding = strings.Repeat("x", 80)

// value is the record for seq of partition p.
func value(topic string, p int32, seq int) string {
	return fmt.Sprintf("%s/%d/%08d/%s", topic, p, seq, padding)
}

// parseValue returns the partition and seq of a record made by value.
func parseValue(topic, v string) (int32, int, bool) {
	var p int32
	var seq int
	rest, ok := strings.CutPrefix(v, topic+"/")
	if !ok {
		return 0, 0, false
	}
	if _, err := fmt.Sscanf(rest, "%d/%d/", &p, &seq); err != nil {
		return 0, 0, false
	}
	return p, seq, true
}

// startProducer starts a seqProducer on topic's parts partitions.
func (c *procCluster) startProducer(topic string, parts int32, opts ...kgo.Opt) *seqProducer {
	c.t.Helper()
	all := append([]kgo.Opt{
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MaxBufferedRecords(500),
		kgo.ProducerLinger(2 * time.Millisecond),
	}, opts...)
	sp := &seqProducer{t: c.t, topic: topic, parts: parts, cl: c.client(all...), done: make(chan struct{})}
	for range parts {
		sp.acked = append(sp.acked, map[int]bool{})
	}
	ctx, cancel := context.WithCancel(context.Background())
	sp.cancel = cancel
	go sp.run(ctx)
	c.t.Cleanup(sp.halt)
	return sp
}

func (sp *seqProducer) run(ctx context.Context) {
	defer close(sp.done)
	const tick = 10 * time.Millisecond
	perTick := produceRate * int(tick) / int(time.Second)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	next := make([]int, sp.parts)
	for i := 0; ; {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		for range perTick {
			p := int32(i % int(sp.parts))
			i++
			seq := next[p]
			next[p]++
			r := &kgo.Record{Partition: p, Value: []byte(value(sp.topic, p, seq))}
			// Produce blocks while 500 records are buffered, so a stalled
			// cluster slows the producer instead of growing memory.
			sp.cl.Produce(ctx, r, func(_ *kgo.Record, err error) { sp.ack(p, seq, err) })
			if ctx.Err() != nil {
				return
			}
		}
	}
}

func (sp *seqProducer) ack(p int32, seq int, err error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if err != nil {
		if err == context.Canceled {
			return // never sent: produced after stop
		}
		sp.nFailed++
		if len(sp.errs) < 5 {
			sp.errs = append(sp.errs, fmt.Sprintf("%d/%d: %v", p, seq, err))
		}
		return
	}
	sp.acked[p][seq] = true
	sp.nAcked++
}

// acks returns how many records were acknowledged so far.
func (sp *seqProducer) acks() int {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.nAcked
}

// waitAcks waits until at least n records are acknowledged.
func (sp *seqProducer) waitAcks(n int) {
	sp.t.Helper()
	waitFor(sp.t, fmt.Sprintf("%d acknowledged records", n), func() (bool, string) {
		got := sp.acks()
		return got >= n, fmt.Sprintf("%d acknowledged", got)
	})
}

// waitProgress waits until n more records than now are acknowledged.
func (sp *seqProducer) waitProgress(n int) { sp.t.Helper(); sp.waitAcks(sp.acks() + n) }

// stop stops producing and waits until every record handed to the client
// is acknowledged or failed.
func (sp *seqProducer) stop() {
	sp.t.Helper()
	sp.cancel()
	<-sp.done
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := sp.cl.Flush(ctx); err != nil {
		sp.t.Fatalf("flush the producer: %v", err)
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.t.Logf("producer to %s: %d records acknowledged, %d failed %v", sp.topic, sp.nAcked, sp.nFailed, sp.errs)
	if sp.nFailed > 0 {
		sp.t.Errorf("the idempotent producer gave up on %d records: %v", sp.nFailed, sp.errs)
	}
}

// halt stops the goroutine without waiting for the records (cleanup).
func (sp *seqProducer) halt() {
	sp.cancel()
	<-sp.done
}

// checkLog checks records read back from every partition against what was
// acknowledged: in each partition the seqs increase strictly (in order, no
// duplicates), and every acknowledged seq is there. It returns the number
// of records checked.
func (sp *seqProducer) checkLog(got map[int32][]*kgo.Record) int {
	sp.t.Helper()
	sp.mu.Lock()
	defer sp.mu.Unlock()
	n := 0
	for p := range sp.parts {
		present := map[int]bool{}
		last := -1
		for _, r := range got[p] {
			rp, seq, ok := parseValue(sp.topic, string(r.Value))
			if !ok || rp != p {
				sp.t.Fatalf("%s-%d offset %d: foreign record %.40q", sp.topic, p, r.Offset, r.Value)
			}
			if seq <= last {
				sp.t.Fatalf("%s-%d offset %d: seq %d after %d (duplicate or out of order)", sp.topic, p, r.Offset, seq, last)
			}
			last = seq
			present[seq] = true
			n++
		}
		for seq := range sp.acked[p] {
			if !present[seq] {
				sp.t.Errorf("%s-%d: acknowledged seq %d lost", sp.topic, p, seq)
			}
		}
	}
	if n < sp.nAcked {
		sp.t.Fatalf("%d records in the log, %d acknowledged", n, sp.nAcked)
	}
	return n
}

// readAll reads every partition of topic from its start up to its high
// watermark (READ_UNCOMMITTED) with a fresh client.
func (c *procCluster) readAll(topic string, parts int32) map[int32][]*kgo.Record {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	adm := c.admin()
	var ends map[int32]int64
	waitFor(c.t, topic+" end offsets", func() (bool, string) {
		res, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return false, err.Error()
		}
		ends = map[int32]int64{}
		for p := range parts {
			o, ok := res.Lookup(topic, p)
			if !ok || o.Err != nil {
				return false, fmt.Sprintf("partition %d: %v", p, o.Err)
			}
			ends[p] = o.Offset
		}
		return true, ""
	})
	starts := map[int32]kgo.Offset{}
	for p := range parts {
		starts[p] = kgo.NewOffset().AtStart()
	}
	cl := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}))
	defer cl.Close()
	out := map[int32][]*kgo.Record{}
	done := func() bool {
		for p := range parts {
			if rs := out[p]; ends[p] > 0 && (len(rs) == 0 || rs[len(rs)-1].Offset < ends[p]-1) {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			c.t.Fatalf("read %s: timed out (ends %v)", topic, ends)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < ends[r.Partition] {
				out[r.Partition] = append(out[r.Partition], r)
			}
		})
	}
	return out
}
