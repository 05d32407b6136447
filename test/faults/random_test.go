package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// groupReader consumes a topic in a consumer group in the background and
// counts how often it saw each record (at least once is the guarantee).
type groupReader struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	seen    map[string]int
	records int
	errs    int
}

// startGroupReader starts a group member reading topic from its start.
func (c *procCluster) startGroupReader(group, topic string) *groupReader {
	c.t.Helper()
	g := &groupReader{
		cl: c.client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(500*time.Millisecond)),
		done: make(chan struct{}),
		seen: map[string]int{},
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	go func() {
		defer close(g.done)
		for ctx.Err() == nil {
			fs := g.cl.PollFetches(ctx)
			g.mu.Lock()
			fs.EachError(func(string, int32, error) { g.errs++ })
			fs.EachRecord(func(r *kgo.Record) {
				g.seen[string(r.Value)]++
				g.records++
			})
			g.mu.Unlock()
		}
	}()
	c.t.Cleanup(g.stop)
	return g
}

// stop stops the reader (idempotent).
func (g *groupReader) stop() {
	g.cancel()
	<-g.done
}

// missing returns how many of values the reader has not seen yet.
func (g *groupReader) missing(values []string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, v := range values {
		if g.seen[v] == 0 {
			n++
		}
	}
	return n
}

// ackedValues returns the values of every acknowledged record.
func (sp *seqProducer) ackedValues() []string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	var out []string
	for p, seqs := range sp.acked {
		for seq := range seqs {
			out = append(out, value(sp.topic, int32(p), seq))
		}
	}
	return out
}

// faultKind is one kind of fault of the randomized run.
type faultKind int

const (
	faultKill    faultKind = iota // SIGKILL, then start again
	faultPause                    // SIGSTOP, then SIGCONT
	faultRestart                  // SIGTERM (clean stop), then start again
)

func (k faultKind) String() string { return [...]string{"kill", "pause", "restart"}[k] }

// TestRandomFaults runs an idempotent acks=-1 producer and a consumer group
// on three nodes while a seeded random schedule kills (SIGKILL), pauses
// (SIGSTOP for up to 4 s, past replica.lag.time.max.ms and the broker
// session) and cleanly restarts one node at a time — partition leaders,
// followers, the controller and the group coordinator alike — for a
// bounded time (20 s; KMIRROR_LONG=1: 3 minutes). After each fault is
// healed the cluster must make progress again. At the end no acknowledged
// record is lost, none is duplicated or reordered, the group has seen every
// one, and the replicas are byte-identical. The seed is logged;
// KMIRROR_FAULT_SEED=<seed> replays the schedule (not its timing).
func TestRandomFaults(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KMIRROR_FAULT_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("KMIRROR_FAULT_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (KMIRROR_FAULT_SEED=%d replays this schedule)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	duration := 20 * time.Second
	if long() {
		duration = 3 * time.Minute
	}

	c := threeNodes(t, map[string]string{"replica.lag.time.max.ms": "3000"})
	const topic, parts = "random", 3
	c.createTopic(topic, parts, nil)
	prod := c.startProducer(topic, parts)
	reader := c.startGroupReader("random-group", topic)
	prod.waitAcks(300)

	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo))) }
	var counts [3]int
	begin := time.Now()
	end := begin.Add(duration)
	for i := 0; time.Now().Before(end); i++ {
		kind := faultKind(rng.IntN(3))
		n := c.node(int32(1 + rng.IntN(len(c.nodes))))
		hold := between(300*time.Millisecond, 4*time.Second)
		gap := between(0, 1500*time.Millisecond)
		ctrl, _ := c.controller()
		t.Logf("fault %d at %v: %s node %d for %v (controller %d)", i, time.Since(begin).Round(time.Millisecond), kind, n.id, hold.Round(time.Millisecond), ctrl)
		counts[kind]++
		switch kind {
		case faultKill:
			n.kill()
			sleepFor(hold)
			n.start()
		case faultPause:
			n.pause()
			sleepFor(hold)
			n.resume()
		case faultRestart:
			n.stop()
			sleepFor(hold)
			n.start()
		}
		// Liveness: once healed, acks=-1 writes go on.
		prod.waitProgress(100)
		sleepFor(gap)
	}
	t.Logf("%d kills, %d pauses, %d clean restarts", counts[faultKill], counts[faultPause], counts[faultRestart])

	prod.stop()
	acked := prod.ackedValues()
	waitFor(t, "the consumer group to see every acknowledged record", func() (bool, string) {
		m := reader.missing(acked)
		return m == 0, fmt.Sprintf("%d of %d not seen yet", m, len(acked))
	})
	reader.stop()
	reader.mu.Lock()
	t.Logf("consumer group: %d records read for %d acknowledged (at-least-once re-reads after faults), %d fetch errors", reader.records, len(acked), reader.errs)
	reader.mu.Unlock()
	prod.checkLog(c.readAll(topic, parts))
	c.stopAndCompare(map[string]int32{topic: parts})
}

// sleepFor holds a fault (or the gap between faults) for d: the schedule's
// own timing, not a wait for the cluster.
func sleepFor(d time.Duration) { time.Sleep(d) }
