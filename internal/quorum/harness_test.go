package quorum

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/metadata"
)

// testLog routes logs to t.Log until the test ends (raft's goroutines may
// log after Close returns, which t.Log does not allow).
type testLog struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func newTestLogger(t *testing.T) *slog.Logger {
	w := &testLog{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// testNode is one node of an in-process cluster. Its TCP listener plays the
// server's part: it sniffs 4 bytes, and hands raft connections to the
// node's current stream layer (replaced on restart).
type testNode struct {
	id     int32
	voter  bool
	dir    string
	ln     net.Listener
	stream atomic.Pointer[StreamLayer]
	q      *Quorum
	// kafkaConns counts connections the sniffer classified as not raft.
	kafkaConns atomic.Int32
}

func (n *testNode) addr() string { return n.ln.Addr().String() }

type testCluster struct {
	t      *testing.T
	log    *slog.Logger
	nodes  map[int32]*testNode
	voters []Voter
	wg     sync.WaitGroup
	tune   func(*Config)
}

// newCluster makes listeners for nodes 1..voters (voters) and
// voters+1..voters+nonVoters (non-voters) without starting them.
func newCluster(t *testing.T, voters, nonVoters int) *testCluster {
	c := &testCluster{t: t, log: newTestLogger(t), nodes: map[int32]*testNode{}}
	for i := 1; i <= voters+nonVoters; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		n := &testNode{id: int32(i), voter: i <= voters, dir: t.TempDir(), ln: ln}
		c.nodes[n.id] = n
		if n.voter {
			c.voters = append(c.voters, Voter{ID: n.id, Addr: n.addr()})
		}
		c.wg.Add(1)
		go c.serve(n)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			if n.q != nil {
				n.q.Close()
			}
			n.ln.Close()
		}
		c.wg.Wait()
	})
	return c
}

func (c *testCluster) serve(n *testNode) {
	defer c.wg.Done()
	for {
		conn, err := n.ln.Accept()
		if err != nil {
			return
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			var first4 [4]byte
			if _, err := io.ReadFull(conn, first4[:]); err != nil {
				conn.Close()
				return
			}
			if !IsRaftPreamble(first4[:]) {
				n.kafkaConns.Add(1)
				conn.Close()
				return
			}
			if _, err := ReadPreambleRest(conn, first4[:]); err != nil {
				conn.Close()
				return
			}
			conn.SetReadDeadline(time.Time{})
			if s := n.stream.Load(); s != nil {
				s.Handoff(conn)
			} else {
				conn.Close()
			}
		}()
	}
}

// testTiming keeps elections quick but tolerant of a loaded 2-core machine
// running the race detector.
func testTiming(cfg *Config) {
	cfg.HeartbeatTimeout = 300 * time.Millisecond
	cfg.ElectionTimeout = 300 * time.Millisecond
	cfg.LeaderLeaseTimeout = 300 * time.Millisecond
	cfg.CommitTimeout = 10 * time.Millisecond
}

func (c *testCluster) start(id int32) *Quorum {
	c.t.Helper()
	n := c.nodes[id]
	s := NewStreamLayer(n.ln.Addr())
	n.stream.Store(s)
	cfg := Config{NodeID: id, Dir: n.dir, Voters: c.voters, AdvertiseAddr: n.addr(), Stream: s, Logger: c.log}
	testTiming(&cfg)
	if c.tune != nil {
		c.tune(&cfg)
	}
	q, err := Open(cfg)
	if err != nil {
		c.t.Fatalf("open node %d: %v", id, err)
	}
	n.q = q
	return q
}

func (c *testCluster) stop(id int32) {
	c.t.Helper()
	n := c.nodes[id]
	if err := n.q.Close(); err != nil {
		c.t.Fatalf("close node %d: %v", id, err)
	}
	n.q = nil
	n.stream.Store(nil)
}

// waitLeader polls until one running node leads and every running voter
// agrees, and returns it.
func (c *testCluster) waitLeader() *testNode {
	c.t.Helper()
	return waitFor(c.t, 20*time.Second, "a leader every node agrees on", func() *testNode {
		var leader *testNode
		for _, n := range c.nodes {
			if n.q != nil && n.q.IsLeader() {
				if leader != nil {
					return nil
				}
				leader = n
			}
		}
		if leader == nil {
			return nil
		}
		for _, n := range c.nodes {
			if n.q == nil || !n.voter {
				continue
			}
			if id, addr, ok := n.q.Leader(); !ok || id != leader.id || addr != leader.addr() {
				return nil
			}
		}
		return leader
	})
}

// waitFor polls f until it returns a non-zero value or the deadline passes.
func waitFor[T comparable](t testing.TB, d time.Duration, what string, f func() T) T {
	t.Helper()
	var zero T
	deadline := time.Now().Add(d)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if v := f(); v != zero {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		<-tick.C
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// topicRecords creates a one-partition topic led by leader.
func topicRecords(name string, leader int32) []metadata.Record {
	id := metadata.RandomUuid()
	return []metadata.Record{
		&metadata.TopicRecord{Name: name, ID: id},
		&metadata.PartitionRecord{TopicID: id, Partition: 0, PartitionState: metadata.PartitionState{
			Replicas: []int32{leader}, ISR: []int32{leader}, Leader: leader}},
	}
}

// proposeTopic creates a topic through the cluster's leader, retrying while
// leadership moves. A retry after an unknown outcome may find the topic
// already created by the first attempt.
func (c *testCluster) proposeTopic(name string) uint64 {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	retried := false
	for {
		leader := c.waitLeader()
		if retried {
			if err := leader.q.Barrier(ctxT(c.t)); err == nil {
				if _, ok := leader.q.Image().Topic(name); ok {
					return leader.q.Image().Offset()
				}
			}
		}
		off, err := leader.q.Propose(ctxT(c.t), topicRecords(name, leader.id))
		if err == nil {
			return off
		}
		var nl *NotLeaderError
		if !errors.As(err, &nl) || time.Now().After(deadline) {
			c.t.Fatalf("propose %s: %v", name, err)
		}
		retried = true
	}
}

func imageBytes(im *metadata.Image) string {
	return fmt.Sprintf("%d:%x", im.Offset(), metadata.EncodeBatch(nil, im.ToRecords()))
}
