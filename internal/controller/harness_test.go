package controller

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/quorum"
	"github.com/kmirror/kmirror/internal/wire"
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

func testLogger(t *testing.T) *slog.Logger {
	w := &testLog{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// fakeClock is the controller's session clock in tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// node is one controller node of an in-process cluster. Its TCP listener
// plays the server's part: it sniffs the first 4 bytes of a connection and
// hands raft connections to the quorum's stream layer and Kafka
// connections to a loop that serves the controller's APIs, as the
// controller listener of a real node does.
type node struct {
	id     int32
	dir    string
	ln     net.Listener
	stream atomic.Pointer[quorum.StreamLayer]
	ctl    atomic.Pointer[Controller]
	q      *quorum.Quorum
	// kafkaConns counts Kafka connections accepted.
	kafkaConns atomic.Int32
	// hung, when set, makes the node's Kafka listener read requests and
	// never answer them, like a paused process whose sockets stay open.
	hung atomic.Bool
	// hungRequests counts the requests a hung node took.
	hungRequests atomic.Int32
}

func (n *node) addr() string { return n.ln.Addr().String() }

// testCluster is a set of controller nodes on 127.0.0.1.
type testCluster struct {
	t         *testing.T
	log       *slog.Logger
	clock     *fakeClock
	overrides map[string]string
	nodes     map[int32]*node
	voters    []quorum.Voter
	wg        sync.WaitGroup
	// beforeStart, when set, sees each controller between New and Start.
	beforeStart func(*Controller)

	connMu sync.Mutex
	conns  map[net.Conn]bool
}

// newTestCluster makes n voters' listeners (not started). Session
// timeouts use the fake clock.
func newTestCluster(t *testing.T, n int, overrides map[string]string) *testCluster {
	return newMixedCluster(t, n, 0, overrides)
}

// newMixedCluster makes listeners for voters 1..voters and broker-only
// nodes voters+1..voters+others (not started).
func newMixedCluster(t *testing.T, voters, others int, overrides map[string]string) *testCluster {
	c := &testCluster{t: t, log: testLogger(t), clock: newFakeClock(), overrides: overrides,
		nodes: map[int32]*node{}, conns: map[net.Conn]bool{}}
	for i := int32(1); i <= int32(voters+others); i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		nd := &node{id: i, dir: t.TempDir(), ln: ln}
		c.nodes[i] = nd
		if i <= int32(voters) {
			c.voters = append(c.voters, quorum.Voter{ID: i, Addr: nd.addr()})
		}
		c.wg.Add(1)
		go c.accept(nd)
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			if ctl := nd.ctl.Load(); ctl != nil {
				ctl.Close()
			}
			if nd.q != nil {
				nd.q.Close()
			}
			nd.ln.Close()
		}
		c.connMu.Lock()
		for conn := range c.conns {
			conn.Close()
		}
		c.connMu.Unlock()
		c.wg.Wait()
	})
	return c
}

func (c *testCluster) track(conn net.Conn) bool {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	if c.conns == nil {
		return false
	}
	c.conns[conn] = true
	return true
}

func (c *testCluster) untrack(conn net.Conn) {
	c.connMu.Lock()
	defer c.connMu.Unlock()
	delete(c.conns, conn)
}

func (c *testCluster) accept(nd *node) {
	defer c.wg.Done()
	for {
		conn, err := nd.ln.Accept()
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
			if quorum.IsRaftPreamble(first4[:]) {
				if _, err := quorum.ReadPreambleRest(conn, first4[:]); err != nil {
					conn.Close()
					return
				}
				conn.SetReadDeadline(time.Time{})
				if s := nd.stream.Load(); s != nil {
					s.Handoff(conn)
				} else {
					conn.Close()
				}
				return
			}
			conn.SetReadDeadline(time.Time{})
			nd.kafkaConns.Add(1)
			if !c.track(conn) {
				conn.Close()
				return
			}
			defer c.untrack(conn)
			defer conn.Close()
			c.serveKafka(nd, conn, io.MultiReader(bytes.NewReader(first4[:]), bufio.NewReader(conn)))
		}()
	}
}

// serveKafka is a minimal controller listener: one request at a time,
// dispatched to the node's current controller's APIs.
func (c *testCluster) serveKafka(nd *node, conn net.Conn, r io.Reader) {
	for {
		frame, err := wire.ReadFrame(r, 1<<20, nil)
		if err != nil {
			return
		}
		if nd.hung.Load() {
			nd.hungRequests.Add(1)
			continue // read, never answered
		}
		ctl := nd.ctl.Load()
		if ctl == nil {
			return
		}
		reg := wire.NewRegistry()
		handlers := map[int16]wire.Handler{}
		for _, a := range ctl.APIs() {
			reg.Add(a.Key, a.MinVersion, a.MaxVersion)
			handlers[a.Key] = a.Handle
		}
		hdr, req, err := wire.ParseRequest(frame, reg)
		if err != nil {
			return
		}
		rc := &wire.RequestContext{Header: hdr, Listener: "CONTROLLER", SecurityProtocol: "PLAINTEXT", Principal: wire.AnonymousPrincipal, ClientAddr: conn.RemoteAddr()}
		resp, err := handlers[hdr.APIKey](context.Background(), rc, req)
		if err != nil {
			return
		}
		kr, ok := resp.(kmsg.Response)
		if !ok {
			return
		}
		if _, err := conn.Write(wire.AppendResponse(nil, hdr.CorrelationID, kr)); err != nil {
			return
		}
	}
}

// startMember opens node id's quorum member only: a broker-only node,
// which waits to be added as a non-voter.
func (c *testCluster) startMember(id int32) *node {
	c.t.Helper()
	nd := c.nodes[id]
	s := quorum.NewStreamLayer(nd.ln.Addr())
	nd.stream.Store(s)
	q, err := quorum.Open(quorum.Config{
		NodeID: id, Dir: nd.dir, Voters: c.voters, AdvertiseAddr: nd.addr(), Stream: s, Logger: c.log,
		HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond,
		LeaderLeaseTimeout: 300 * time.Millisecond, CommitTimeout: 10 * time.Millisecond,
	})
	if err != nil {
		c.t.Fatalf("open quorum of node %d: %v", id, err)
	}
	nd.q = q
	return nd
}

// start opens node id's quorum member and starts its controller.
func (c *testCluster) start(id int32) *node {
	c.t.Helper()
	nd := c.nodes[id]
	s := quorum.NewStreamLayer(nd.ln.Addr())
	nd.stream.Store(s)
	q, err := quorum.Open(quorum.Config{
		NodeID: id, Dir: nd.dir, Voters: c.voters, AdvertiseAddr: nd.addr(), Stream: s, Logger: c.log,
		HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond,
		LeaderLeaseTimeout: 300 * time.Millisecond, CommitTimeout: 10 * time.Millisecond,
	})
	if err != nil {
		c.t.Fatalf("open quorum of node %d: %v", id, err)
	}
	nd.q = q
	var voters []string
	for _, v := range c.voters {
		voters = append(voters, strconv.Itoa(int(v.ID))+"@"+v.Addr)
	}
	overrides := map[string]string{"node.id": strconv.Itoa(int(id)), "controller.quorum.voters": strings.Join(voters, ",")}
	for k, v := range c.overrides {
		overrides[k] = v
	}
	ctl, err := New(Config{NodeID: id, Cfg: testConfig(c.t, overrides), Logger: c.log, Now: c.clock.Now}, q)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.beforeStart != nil {
		c.beforeStart(ctl)
	}
	if err := ctl.Start(); err != nil {
		c.t.Fatal(err)
	}
	nd.ctl.Store(ctl)
	return nd
}

// stop closes node id's controller and quorum member.
func (c *testCluster) stop(id int32) {
	c.t.Helper()
	nd := c.nodes[id]
	if ctl := nd.ctl.Swap(nil); ctl != nil {
		ctl.Close()
	}
	if err := nd.q.Close(); err != nil {
		c.t.Fatalf("close node %d: %v", id, err)
	}
	nd.q = nil
	nd.stream.Store(nil)
}

// active waits until exactly one running node's controller is active and
// returns it.
func (c *testCluster) active() *node {
	c.t.Helper()
	return waitFor(c.t, 20*time.Second, "an active controller", func() *node {
		var found *node
		for _, nd := range c.nodes {
			if ctl := nd.ctl.Load(); ctl != nil && ctl.IsActive() {
				if found != nil {
					return nil
				}
				found = nd
			}
		}
		return found
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

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
