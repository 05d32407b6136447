package faults

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// waitTimeout bounds every wait for the cluster to reach a state
// (elections, ISR changes, catch-up, convergence).
const waitTimeout = 60 * time.Second

// stopTimeout bounds a clean stop (SIGTERM): the controlled shutdown gives
// up after broker.session.timeout.ms when no controller answers.
const stopTimeout = 30 * time.Second

// Roles of the nodes of a cluster.
const (
	combined       = "broker,controller"
	brokerOnly     = "broker"
	controllerOnly = "controller"
)

// baseProps are the settings every test cluster runs with: Kafka's
// replicated defaults for three brokers (RF=3, min.insync.replicas=2,
// internal topics RF=3), small internal topics so that they load fast, and
// broker sessions short enough that a killed node is fenced within
// seconds.
var baseProps = map[string]string{
	"num.partitions":                           "3",
	"default.replication.factor":               "3",
	"min.insync.replicas":                      "2",
	"offsets.topic.replication.factor":         "3",
	"offsets.topic.num.partitions":             "6",
	"transaction.state.log.replication.factor": "3",
	"transaction.state.log.min.isr":            "2",
	"transaction.state.log.num.partitions":     "6",
	"broker.session.timeout.ms":                "3000",
	"broker.heartbeat.interval.ms":             "250",
	"replica.lag.time.max.ms":                  "5000",
	"group.initial.rebalance.delay.ms":         "0",
	// The tests decide leadership; a rebalance in the middle would only
	// add noise (it is tested in process).
	"auto.leader.rebalance.enable": "false",
}

// procCluster is a kmirror cluster whose nodes are child processes of the
// test, on loopback ports that stay the same across restarts.
type procCluster struct {
	t         *testing.T
	bin       string
	clusterID string
	nodes     []*procNode // node i has id i+1
}

// procNode is one node of a procCluster.
type procNode struct {
	c     *procCluster
	id    int32
	roles string
	// port is the client (PLAINTEXT) port of a broker, cport the
	// CONTROLLER port of a controller; 0 when the node lacks the role.
	port, cport int
	dir         string // the node's directory; its log.dirs is dir/data
	file        string // its server.properties

	mu     sync.Mutex
	proc   *testcluster.Process // nil while down
	paused bool
}

// startCluster starts nodes with the given roles (ids 1, 2, ...) and
// returns once every node is ready and every broker node sees every broker
// unfenced. props are added to baseProps on every node.
func startCluster(t *testing.T, roles []string, props map[string]string) *procCluster {
	t.Helper()
	c := &procCluster{t: t, bin: testcluster.BuildBinary(t), clusterID: storage.NewDirectoryID()}
	base := t.TempDir()
	for i, r := range roles {
		n := &procNode{c: c, id: int32(i + 1), roles: r, dir: filepath.Join(base, "node-"+strconv.Itoa(i+1))}
		if n.isBroker() {
			n.port = testcluster.FreePort(t)
		}
		if n.isController() {
			n.cport = testcluster.FreePort(t)
		}
		c.nodes = append(c.nodes, n)
	}
	var voters []string
	for _, n := range c.nodes {
		if n.isController() {
			voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", n.id, n.cport))
		}
	}
	for _, n := range c.nodes {
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := maps.Clone(baseProps)
		maps.Copy(p, props)
		var listeners []string
		if n.isBroker() {
			listeners = append(listeners, fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", n.port))
		}
		if n.isController() {
			listeners = append(listeners, fmt.Sprintf("CONTROLLER://127.0.0.1:%d", n.cport))
		}
		maps.Copy(p, map[string]string{
			"node.id":                        strconv.Itoa(int(n.id)),
			"process.roles":                  n.roles,
			"listeners":                      strings.Join(listeners, ","),
			"inter.broker.listener.name":     "PLAINTEXT",
			"controller.listener.names":      "CONTROLLER",
			"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
			"controller.quorum.voters":       strings.Join(voters, ","),
			"log.dirs":                       n.logDir(),
		})
		n.file = testcluster.WriteProperties(t, n.dir, p)
	}
	// The voters of a new quorum can only finish starting together.
	for _, n := range c.nodes {
		n.mu.Lock()
		n.proc = testcluster.LaunchProcess(t, c.bin, n.readyAddr(), n.args()...)
		n.mu.Unlock()
	}
	for _, n := range c.nodes {
		if err := n.process().WaitReady(testcluster.StartTimeout); err != nil {
			t.Fatalf("node %d did not start: %v\n%s", n.id, err, n.process().Output())
		}
		n.checkIdentity()
	}
	c.waitBrokersUnfenced()
	return c
}

// threeNodes starts three combined nodes (each broker and controller).
func threeNodes(t *testing.T, props map[string]string) *procCluster {
	t.Helper()
	return startCluster(t, []string{combined, combined, combined}, props)
}

func (n *procNode) isBroker() bool     { return strings.Contains(n.roles, "broker") }
func (n *procNode) isController() bool { return strings.Contains(n.roles, "controller") }

// logDir is the node's single log directory.
func (n *procNode) logDir() string { return filepath.Join(n.dir, "data") }

// addr is the node's client address ("" for a controller-only node).
func (n *procNode) addr() string {
	if n.port == 0 {
		return ""
	}
	return "127.0.0.1:" + strconv.Itoa(n.port)
}

// readyAddr is where the node answers ApiVersions once started.
func (n *procNode) readyAddr() string {
	if n.isBroker() {
		return n.addr()
	}
	return "127.0.0.1:" + strconv.Itoa(n.cport)
}

func (n *procNode) args() []string {
	level := "warn"
	if l := os.Getenv("KMIRROR_TEST_LOG"); l != "" {
		level = l
	}
	return []string{"server", "--config", n.file, "--cluster-id", n.c.clusterID, "--log-level", level}
}

func (n *procNode) process() *testcluster.Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

// node returns the node with id.
func (c *procCluster) node(id int32) *procNode {
	c.t.Helper()
	if id < 1 || int(id) > len(c.nodes) {
		c.t.Fatalf("no node %d", id)
	}
	return c.nodes[id-1]
}

// brokers returns the nodes with the broker role.
func (c *procCluster) brokers() []*procNode {
	var out []*procNode
	for _, n := range c.nodes {
		if n.isBroker() {
			out = append(out, n)
		}
	}
	return out
}

// up reports whether the node runs and is not paused.
func (n *procNode) up() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil && !n.paused
}

// running reports whether the node's process exists (paused or not).
func (n *procNode) running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil
}

// kill kills the node with SIGKILL: no controlled shutdown, no flush; its
// partitions keep it as leader until the controller fences it.
func (n *procNode) kill() {
	n.c.t.Helper()
	n.mu.Lock()
	p := n.proc
	n.proc, n.paused = nil, false
	n.mu.Unlock()
	if p == nil {
		n.c.t.Fatalf("node %d is not running", n.id)
	}
	p.Kill()
	n.c.t.Logf("node %d killed", n.id)
}

// stop stops the node cleanly (SIGTERM: controlled shutdown, clean-shutdown
// markers) and checks that it exited 0.
func (n *procNode) stop() {
	n.c.t.Helper()
	n.mu.Lock()
	p, paused := n.proc, n.paused
	n.proc, n.paused = nil, false
	n.mu.Unlock()
	if p == nil {
		n.c.t.Fatalf("node %d is not running", n.id)
	}
	p.Signal(syscall.SIGTERM)
	if paused {
		p.Signal(syscall.SIGCONT) // the SIGTERM waits for it
	}
	if code := p.Wait(stopTimeout); code != 0 {
		n.c.t.Fatalf("node %d exited %d after SIGTERM\n%s", n.id, code, p.Output())
	}
	n.c.t.Logf("node %d stopped", n.id)
}

// start starts a down node on its old ports and directory and returns once
// it serves clients (a broker: once the controller unfenced it).
func (n *procNode) start() {
	n.c.t.Helper()
	if n.running() {
		n.c.t.Fatalf("node %d is running", n.id)
	}
	p := testcluster.StartProcess(n.c.t, n.c.bin, n.readyAddr(), n.args()...)
	n.mu.Lock()
	n.proc = p
	n.mu.Unlock()
	n.checkIdentity()
	n.c.t.Logf("node %d started", n.id)
}

// checkIdentity fails the test unless the broker answering on the node's
// address belongs to this test's cluster: a port taken by another process
// between FreePort and the bind would otherwise pass for the node.
func (n *procNode) checkIdentity() {
	n.c.t.Helper()
	if !n.isBroker() {
		return
	}
	v, err := n.view()
	if err != nil {
		n.c.t.Fatalf("node %d: %v", n.id, err)
	}
	if v.clusterID != n.c.clusterID {
		n.c.t.Fatalf("node %d: %s answers for cluster %q, not this test's %q", n.id, n.addr(), v.clusterID, n.c.clusterID)
	}
}

// pause stops the node's process with SIGSTOP: it keeps its sockets but
// answers nothing, like a node in a long GC pause or a partitioned one.
func (n *procNode) pause() {
	n.c.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || n.paused {
		n.c.t.Fatalf("node %d cannot be paused (running %v, paused %v)", n.id, n.proc != nil, n.paused)
	}
	n.proc.Signal(syscall.SIGSTOP)
	n.paused = true
	n.c.t.Logf("node %d paused", n.id)
}

// resume continues a paused node (SIGCONT).
func (n *procNode) resume() {
	n.c.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil || !n.paused {
		n.c.t.Fatalf("node %d is not paused", n.id)
	}
	n.proc.Signal(syscall.SIGCONT)
	n.paused = false
	n.c.t.Logf("node %d resumed", n.id)
}

// stopAll stops every running node cleanly: broker-only nodes first, so
// that their controlled shutdowns find a controller, then the others all
// at once (the controlled shutdown of the last combined node finds no
// quorum and gives up after broker.session.timeout.ms).
func (c *procCluster) stopAll() {
	c.t.Helper()
	var first, then []*procNode
	for _, n := range c.nodes {
		if n.roles == brokerOnly {
			first = append(first, n)
		} else {
			then = append(then, n)
		}
	}
	for _, group := range [][]*procNode{first, then} {
		var procs []*testcluster.Process
		for _, n := range group {
			n.mu.Lock()
			p, paused := n.proc, n.paused
			n.proc, n.paused = nil, false
			n.mu.Unlock()
			if p == nil {
				continue
			}
			p.Signal(syscall.SIGTERM)
			if paused {
				p.Signal(syscall.SIGCONT)
			}
			procs = append(procs, p)
		}
		for _, p := range procs {
			if code := p.Wait(stopTimeout); code != 0 {
				c.t.Fatalf("a node exited %d after SIGTERM\n%s", code, p.Output())
			}
		}
	}
}

// seeds returns the client addresses of every broker node, up or not: a
// client outlives restarts.
func (c *procCluster) seeds() []string {
	var out []string
	for _, n := range c.brokers() {
		out = append(out, n.addr())
	}
	return out
}

// clientOpts are the options of every client of the tests: requests to a
// paused broker time out in seconds rather than the default tens.
func clientOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.RequestTimeoutOverhead(3 * time.Second),
		kgo.ProduceRequestTimeout(5 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.MetadataMinAge(200 * time.Millisecond),
	}
}

// client returns a franz-go client seeded with every broker, closed when
// the test ends.
func (c *procCluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	all := append(append([]kgo.Opt{kgo.SeedBrokers(c.seeds()...)}, clientOpts()...), opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// admin returns an admin client seeded with the brokers that are up now.
func (c *procCluster) admin() *kadm.Client {
	c.t.Helper()
	var seeds []string
	for _, n := range c.brokers() {
		if n.up() {
			seeds = append(seeds, n.addr())
		}
	}
	all := append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, clientOpts()...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// waitFor polls cond until it holds, failing the test with what and the
// last reason cond gave after waitTimeout.
func waitFor(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	waitForWithin(t, waitTimeout, what, cond)
}

func waitForWithin(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", d, what, why)
		}
		time.Sleep(20 * time.Millisecond) // polling other processes' state; there is no event to wait on
	}
}

// sortedIDs returns ids sorted, for comparisons and messages.
func sortedIDs(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}
