// Package testcluster starts kmirror nodes for integration tests: in-process
// clusters of one or more nodes on 127.0.0.1 with temporary directories
// (Start), and the real kmirror binary as a child process for crash tests
// (BuildBinary, StartProcess).
//
// Everything a helper starts is stopped by the test's cleanup; tests never
// need to sleep: Start returns once every node serves clients, and
// StartProcess once the child answers Kafka requests.
package testcluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/server"
	"github.com/kmirror/kmirror/internal/storage"
)

// StartTimeout bounds how long Start, StartNode and RestartNode wait for a
// node to serve clients.
const StartTimeout = 60 * time.Second

// Option configures a cluster.
type Option func(*options)

type options struct {
	nodes    int
	configs  map[string]string
	perNode  map[int32]map[string]string
	logLevel slog.Level
}

// Nodes sets how many nodes the cluster has (default 1). Every node has
// both roles and votes in the metadata quorum.
func Nodes(n int) Option { return func(o *options) { o.nodes = n } }

// Config sets a config (Kafka's name) on every node.
func Config(key, value string) Option {
	return func(o *options) { o.configs[key] = value }
}

// NodeConfig sets a config on one node only; it wins over Config.
func NodeConfig(id int32, key, value string) Option {
	return func(o *options) {
		if o.perNode[id] == nil {
			o.perNode[id] = map[string]string{}
		}
		o.perNode[id][key] = value
	}
}

// LogLevel sets the least level of node logs copied to the test log
// (default warn; KMIRROR_TEST_LOG=debug|info|warn|error overrides it).
func LogLevel(l slog.Level) Option { return func(o *options) { o.logLevel = l } }

// Cluster is a set of in-process nodes.
type Cluster struct {
	t         testing.TB
	clusterID string
	opts      options
	log       *testLog

	mu    sync.Mutex
	nodes []*Node
}

// Node is one node of a Cluster. Its ports and directories stay the same
// across restarts.
type Node struct {
	ID int32
	// Dir holds the node's data (log.dirs) and metadata log.
	Dir string
	// Port and ControllerPort are its PLAINTEXT and CONTROLLER ports.
	Port, ControllerPort int

	c      *Cluster
	server *server.Node // nil while stopped
}

// Start starts a cluster and returns once every node serves clients. The
// cluster is shut down when the test ends.
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	o := options{nodes: 1, configs: map[string]string{}, perNode: map[int32]map[string]string{}, logLevel: slog.LevelWarn}
	for _, opt := range opts {
		opt(&o)
	}
	if o.nodes < 1 {
		t.Fatalf("testcluster: %d nodes", o.nodes)
	}
	if env := os.Getenv("KMIRROR_TEST_LOG"); env != "" {
		if err := o.logLevel.UnmarshalText([]byte(env)); err != nil {
			t.Fatalf("KMIRROR_TEST_LOG=%q: %v", env, err)
		}
	}
	// The directory first: cleanups run last-in first-out, and the nodes
	// must stop before their directories are removed.
	base := t.TempDir()
	c := &Cluster{t: t, clusterID: storage.NewDirectoryID(), opts: o, log: newTestLog(t)}
	t.Cleanup(c.shutdown)

	// Bind every port first: each node's config names every voter.
	lns := map[int32][2]net.Listener{}
	for i := 1; i <= o.nodes; i++ {
		id := int32(i)
		kl, cl := listen(t, 0), listen(t, 0)
		lns[id] = [2]net.Listener{kl, cl}
		c.nodes = append(c.nodes, &Node{
			ID: id, Dir: filepath.Join(base, "node-"+strconv.Itoa(i)), c: c,
			Port: kl.Addr().(*net.TCPAddr).Port, ControllerPort: cl.Addr().(*net.TCPAddr).Port,
		})
	}
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.start(lns[n.ID][0], lns[n.ID][1])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("testcluster: %v", err)
		}
	}
	c.waitConverged()
	return c
}

// waitConverged waits until every running node's broker serves metadata in
// which every running node is an unfenced broker: each node's Start waits
// only for its own unfencing, and the others learn of it a moment later.
func (c *Cluster) waitConverged() {
	c.t.Helper()
	deadline := time.Now().Add(StartTimeout)
	for {
		running := map[int32]bool{}
		var servers []*server.Node
		for _, n := range c.Nodes() {
			c.mu.Lock()
			if n.server != nil {
				running[n.ID] = true
				servers = append(servers, n.server)
			}
			c.mu.Unlock()
		}
		converged := true
		for _, s := range servers {
			img := s.Broker().Replicas().Image()
			for id := range running {
				if b, ok := img.Broker(id); !ok || b.Fenced {
					converged = false
				}
			}
		}
		if converged {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("testcluster: the nodes' metadata did not converge within %v", StartTimeout)
		}
		time.Sleep(5 * time.Millisecond) // polling other nodes' views; there is no event to wait on
	}
}

// listen binds 127.0.0.1:port.
func listen(t testing.TB, port int) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("testcluster: listen: %v", err)
	}
	return ln
}

// ClusterID returns the cluster's id.
func (c *Cluster) ClusterID() string { return c.clusterID }

// Nodes returns the cluster's nodes, running or not.
func (c *Cluster) Nodes() []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Node(nil), c.nodes...)
}

// Node returns the node with id, failing the test if there is none.
func (c *Cluster) Node(id int32) *Node {
	c.t.Helper()
	for _, n := range c.Nodes() {
		if n.ID == id {
			return n
		}
	}
	c.t.Fatalf("testcluster: no node %d", id)
	return nil
}

// Bootstrap returns the client bootstrap addresses of the running nodes,
// comma-separated.
func (c *Cluster) Bootstrap() string {
	return strings.Join(c.BootstrapAddrs(), ",")
}

// BootstrapAddrs returns the client addresses of the running nodes.
func (c *Cluster) BootstrapAddrs() []string {
	var out []string
	for _, n := range c.Nodes() {
		if n.Running() {
			out = append(out, n.Addr())
		}
	}
	return out
}

// Client returns a franz-go client bootstrapped from the cluster (opts are
// added after the seed brokers), closed when the test ends.
func (c *Cluster) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	// Seed every node, running or not: a client outlives restarts.
	var seeds []string
	for _, n := range c.Nodes() {
		seeds = append(seeds, n.Addr())
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatalf("testcluster: client: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Admin returns an admin client on a new Client.
func (c *Cluster) Admin(t testing.TB) *kadm.Client {
	t.Helper()
	return kadm.NewClient(c.Client(t))
}

// Addr returns the node's client address (PLAINTEXT listener).
func (n *Node) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port)) }

// ControllerAddr returns the node's controller listener address.
func (n *Node) ControllerAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.ControllerPort))
}

// Running reports whether the node is started.
func (n *Node) Running() bool {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	return n.server != nil
}

// Server returns the running node's server, failing the test when stopped.
func (n *Node) Server() *server.Node {
	n.c.t.Helper()
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if n.server == nil {
		n.c.t.Fatalf("testcluster: node %d is stopped", n.ID)
	}
	return n.server
}

// Stop shuts the node down cleanly (controlled shutdown, clean-shutdown
// markers).
func (n *Node) Stop() {
	n.c.t.Helper()
	n.c.mu.Lock()
	s := n.server
	n.server = nil
	n.c.mu.Unlock()
	if s == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		n.c.t.Fatalf("testcluster: stop node %d: %v", n.ID, err)
	}
}

// Start starts a stopped node on its old ports and directories and returns
// once it serves clients.
func (n *Node) Start() {
	n.c.t.Helper()
	if n.Running() {
		n.c.t.Fatalf("testcluster: node %d is running", n.ID)
	}
	if err := n.start(listen(n.c.t, n.Port), listen(n.c.t, n.ControllerPort)); err != nil {
		n.c.t.Fatalf("testcluster: %v", err)
	}
	n.c.waitConverged()
}

// Restart stops the node cleanly and starts it again.
func (n *Node) Restart() {
	n.c.t.Helper()
	n.Stop()
	n.Start()
}

// Config returns the properties the node runs with (before Load's
// defaults).
func (n *Node) Config() map[string]string {
	c := n.c
	var voters []string
	for _, o := range c.nodes {
		voters = append(voters, fmt.Sprintf("%d@%s", o.ID, o.ControllerAddr()))
	}
	props := map[string]string{
		"node.id":                   strconv.Itoa(int(n.ID)),
		"process.roles":             "broker,controller",
		"listeners":                 "PLAINTEXT://" + n.Addr() + ",CONTROLLER://" + n.ControllerAddr(),
		"controller.listener.names": "CONTROLLER",
		"controller.quorum.voters":  strings.Join(voters, ","),
		"log.dirs":                  filepath.Join(n.Dir, "data"),
	}
	for k, v := range c.opts.configs {
		props[k] = v
	}
	for k, v := range c.opts.perNode[n.ID] {
		props[k] = v
	}
	return props
}

// start starts the node on the given (already bound) listeners.
func (n *Node) start(kafka, ctrl net.Listener) error {
	cfg, warnings, err := config.Load("", nil, n.Config())
	if err != nil {
		kafka.Close()
		ctrl.Close()
		return fmt.Errorf("node %d config: %w", n.ID, err)
	}
	for _, w := range warnings {
		n.c.t.Logf("node %d config: %s", n.ID, w)
	}
	logger := slog.New(slog.NewTextHandler(n.c.log, &slog.HandlerOptions{Level: n.c.opts.logLevel})).With("test_node", n.ID)
	s, err := server.New(cfg, logger, server.WithClusterID(n.c.clusterID),
		server.WithListener("PLAINTEXT", kafka), server.WithListener("CONTROLLER", ctrl))
	if err != nil {
		kafka.Close()
		ctrl.Close()
		return fmt.Errorf("node %d: %w", n.ID, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		return fmt.Errorf("start node %d: %w", n.ID, err)
	}
	n.c.mu.Lock()
	n.server = s
	n.c.mu.Unlock()
	return nil
}

// shutdown stops every running node; it is the test's cleanup.
func (c *Cluster) shutdown() {
	var wg sync.WaitGroup
	for _, n := range c.Nodes() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.mu.Lock()
			s := n.server
			n.server = nil
			c.mu.Unlock()
			if s == nil {
				return
			}
			// An ended context skips the controlled shutdown, which
			// cannot complete once the other voters are gone.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := s.Shutdown(ctx); err != nil {
				c.t.Errorf("testcluster: shut down node %d: %v", n.ID, err)
			}
		}()
	}
	wg.Wait()
	c.log.close()
}
