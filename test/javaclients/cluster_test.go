package javaclients

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// waitTimeout bounds every wait for the cluster or a Java program to reach
// a state (elections, catch-up, a program's progress).
const waitTimeout = 90 * time.Second

// clusterProps are Kafka's replicated settings for three brokers (RF=3,
// min.insync.replicas=2, internal topics RF=3), small internal topics that
// load fast, and broker sessions short enough that a killed node is fenced
// within seconds.
var clusterProps = map[string]string{
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
	// A killed transactional producer's transaction is aborted within a
	// second of its timeout, not ten.
	"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
	// The tests decide which node dies; a leader rebalance would only
	// move the partitions under the Admin checks.
	"auto.leader.rebalance.enable": "false",
}

// procCluster is a three-node kmirror cluster (every node broker and
// controller) whose nodes are child processes of the test, on loopback
// ports that stay the same across restarts, so that a node can be killed
// with SIGKILL and started again.
type procCluster struct {
	t         *testing.T
	bin       string
	clusterID string
	nodes     []*procNode // node i has id i+1
}

// procNode is one node of a procCluster.
type procNode struct {
	c           *procCluster
	id          int32
	port, cport int    // client (PLAINTEXT) and CONTROLLER ports
	dir         string // the node's directory; its log.dirs is dir/data
	file        string // its server.properties

	mu   sync.Mutex
	proc *testcluster.Process // nil while down
}

// startCluster starts three nodes and returns once every node serves
// clients and sees every broker unfenced.
func startCluster(t *testing.T) *procCluster {
	t.Helper()
	c := &procCluster{t: t, bin: testcluster.BuildBinary(t), clusterID: storage.NewDirectoryID()}
	base := t.TempDir()
	for i := range 3 {
		c.nodes = append(c.nodes, &procNode{c: c, id: int32(i + 1),
			port: testcluster.FreePort(t), cport: testcluster.FreePort(t),
			dir: filepath.Join(base, "node-"+strconv.Itoa(i+1))})
	}
	var voters []string
	for _, n := range c.nodes {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", n.id, n.cport))
	}
	for _, n := range c.nodes {
		if err := os.MkdirAll(n.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := maps.Clone(clusterProps)
		maps.Copy(p, map[string]string{
			"node.id":                        strconv.Itoa(int(n.id)),
			"process.roles":                  "broker,controller",
			"listeners":                      fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.port, n.cport),
			"inter.broker.listener.name":     "PLAINTEXT",
			"controller.listener.names":      "CONTROLLER",
			"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
			"controller.quorum.voters":       strings.Join(voters, ","),
			"log.dirs":                       filepath.Join(n.dir, "data"),
		})
		n.file = testcluster.WriteProperties(t, n.dir, p)
	}
	// The voters of a new quorum can only finish starting together.
	for _, n := range c.nodes {
		n.mu.Lock()
		n.proc = testcluster.LaunchProcess(t, c.bin, n.addr(), n.args()...)
		n.mu.Unlock()
	}
	for _, n := range c.nodes {
		if err := n.process().WaitReady(testcluster.StartTimeout); err != nil {
			t.Fatalf("node %d did not start: %v\n%s", n.id, err, n.process().Output())
		}
	}
	c.waitBrokersUnfenced()
	for _, n := range c.nodes {
		if v, err := n.view(); err != nil || v.clusterID != c.clusterID {
			// A port taken by another process between FreePort and the
			// bind would otherwise pass for the node.
			t.Fatalf("node %d: %s answers for cluster %q (%v), not this test's %q", n.id, n.addr(), v.clusterID, err, c.clusterID)
		}
	}
	return c
}

func (n *procNode) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

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

func (n *procNode) up() bool { return n.process() != nil }

// node returns the node with id.
func (c *procCluster) node(id int32) *procNode {
	c.t.Helper()
	if id < 1 || int(id) > len(c.nodes) {
		c.t.Fatalf("no node %d", id)
	}
	return c.nodes[id-1]
}

// kill kills the node with SIGKILL: no controlled shutdown, no flush.
func (n *procNode) kill() {
	n.c.t.Helper()
	n.mu.Lock()
	p := n.proc
	n.proc = nil
	n.mu.Unlock()
	if p == nil {
		n.c.t.Fatalf("node %d is not running", n.id)
	}
	p.Kill()
	n.c.t.Logf("node %d killed", n.id)
}

// start starts a down node on its old ports and directory and returns once
// it serves clients.
func (n *procNode) start() {
	n.c.t.Helper()
	if n.up() {
		n.c.t.Fatalf("node %d is running", n.id)
	}
	p := testcluster.StartProcess(n.c.t, n.c.bin, n.addr(), n.args()...)
	n.mu.Lock()
	n.proc = p
	n.mu.Unlock()
	n.c.t.Logf("node %d started", n.id)
}

// bootstrap is every node's client address, comma-separated, for the
// Java clients: a client outlives restarts.
func (c *procCluster) bootstrap() string {
	var addrs []string
	for _, n := range c.nodes {
		addrs = append(addrs, n.addr())
	}
	return strings.Join(addrs, ",")
}

// client returns a franz-go client seeded with every node, closed when the
// test ends: requests to a dead node time out in seconds.
func (c *procCluster) client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	all := append([]kgo.Opt{
		kgo.SeedBrokers(strings.Split(c.bootstrap(), ",")...),
		kgo.RequestTimeoutOverhead(3 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.MetadataMinAge(200 * time.Millisecond),
	}, opts...)
	cl, err := kgo.NewClient(all...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// admin returns an admin client over a new client.
func (c *procCluster) admin() *kadm.Client { return kadm.NewClient(c.client()) }

// createTopic creates topic with parts partitions and three replicas, and
// waits until every node knows every partition's leader.
func (c *procCluster) createTopic(topic string, parts int32) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	res, err := c.admin().CreateTopic(ctx, parts, 3, nil, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		c.t.Fatalf("create topic %s: %v", topic, err)
	}
	for p := range parts {
		c.waitPartition(topic, p, "a leader", func(s partState) bool { return s.Leader >= 0 })
	}
}

// waitFor polls cond until it holds, failing the test with what and the
// last reason cond gave after waitTimeout.
func waitFor(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", waitTimeout, what, why)
		}
		time.Sleep(50 * time.Millisecond) // polling other processes' state; there is no event to wait on
	}
}

// The helpers below ask one node at a time what it knows, on a fresh
// connection with a short deadline, so that a dead node costs a second.

// rpcTimeout bounds one request to one node.
const rpcTimeout = 2 * time.Second

// rpc sends req to addr and returns the response.
func rpc(addr string, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	conn, err := wire.Dial(ctx, "tcp", addr, "javaclients-test")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.Request(ctx, req)
}

// partState is a partition as a broker's Metadata describes it.
type partState struct {
	Leader   int32
	Epoch    int32
	Replicas []int32
	ISR      []int32
}

func (s partState) String() string {
	return fmt.Sprintf("leader %d epoch %d replicas %v isr %v", s.Leader, s.Epoch, s.Replicas, s.ISR)
}

// nodeView is what one broker's Metadata says.
type nodeView struct {
	clusterID  string
	controller int32
	brokers    []string // the unfenced brokers, "id@host:port", sorted by id
	topicIDs   map[string][16]byte
	parts      map[string]map[int32]partState
}

// view asks node n for the metadata of topics (none: no topics).
func (n *procNode) view(topics ...string) (nodeView, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	raw, err := rpc(n.addr(), req)
	if err != nil {
		return nodeView{}, err
	}
	resp := raw.(*kmsg.MetadataResponse)
	v := nodeView{controller: resp.ControllerID, topicIDs: map[string][16]byte{}, parts: map[string]map[int32]partState{}}
	if resp.ClusterID != nil {
		v.clusterID = *resp.ClusterID
	}
	brokers := slices.Clone(resp.Brokers)
	slices.SortFunc(brokers, func(a, b kmsg.MetadataResponseBroker) int { return int(a.NodeID - b.NodeID) })
	for _, b := range brokers {
		v.brokers = append(v.brokers, fmt.Sprintf("%d@%s:%d", b.NodeID, b.Host, b.Port))
	}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return v, fmt.Errorf("node %d: topic %s: %w", n.id, *t.Topic, err)
		}
		v.topicIDs[*t.Topic] = t.TopicID
		ps := map[int32]partState{}
		for _, p := range t.Partitions {
			ps[p.Partition] = partState{Leader: p.Leader, Epoch: p.LeaderEpoch, Replicas: sorted(p.Replicas), ISR: sorted(p.ISR)}
		}
		v.parts[*t.Topic] = ps
	}
	return v, nil
}

func sorted(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// agreed asks every node that is up for its view of topics and returns the
// first if all agree according to same; otherwise it says why not.
func (c *procCluster) agreed(topics []string, same func(a, b nodeView) bool) (nodeView, string) {
	var first nodeView
	var firstID int32 = -1
	for _, n := range c.nodes {
		if !n.up() {
			continue
		}
		v, err := n.view(topics...)
		if err != nil {
			return v, fmt.Sprintf("node %d: %v", n.id, err)
		}
		if firstID < 0 {
			first, firstID = v, n.id
			continue
		}
		if !same(first, v) {
			return first, fmt.Sprintf("nodes %d and %d disagree", firstID, n.id)
		}
	}
	if firstID < 0 {
		return first, "no node is up"
	}
	return first, ""
}

// waitPartition polls until every node that is up agrees on
// topic-partition's state and cond holds for it; it returns the state.
func (c *procCluster) waitPartition(topic string, p int32, what string, cond func(partState) bool) partState {
	c.t.Helper()
	var st partState
	waitFor(c.t, fmt.Sprintf("%s-%d: %s", topic, p, what), func() (bool, string) {
		v, why := c.agreed([]string{topic}, func(a, b nodeView) bool {
			x, ok1 := a.parts[topic][p]
			y, ok2 := b.parts[topic][p]
			return ok1 && ok2 && x.Leader == y.Leader && x.Epoch == y.Epoch && slices.Equal(x.ISR, y.ISR)
		})
		if why != "" {
			return false, why
		}
		var ok bool
		if st, ok = v.parts[topic][p]; !ok {
			return false, "no such partition"
		}
		return cond(st), st.String()
	})
	return st
}

// waitFullISR waits until every partition of topic has a leader and all
// its replicas in its ISR.
func (c *procCluster) waitFullISR(topic string, partitions int32) {
	c.t.Helper()
	for p := range partitions {
		c.waitPartition(topic, p, "every replica in the ISR", func(s partState) bool {
			return s.Leader >= 0 && len(s.ISR) == len(s.Replicas)
		})
	}
}

// waitBrokersUnfenced waits until every node that is up lists every node
// that is up as an unfenced broker.
func (c *procCluster) waitBrokersUnfenced() {
	c.t.Helper()
	var want []string
	for _, n := range c.nodes {
		if n.up() {
			want = append(want, fmt.Sprintf("%d@127.0.0.1:%d", n.id, n.port))
		}
	}
	waitFor(c.t, fmt.Sprintf("brokers %v unfenced everywhere", want), func() (bool, string) {
		v, why := c.agreed(nil, func(a, b nodeView) bool { return slices.Equal(a.brokers, b.brokers) })
		if why != "" {
			return false, why
		}
		return slices.Equal(v.brokers, want), fmt.Sprintf("unfenced %v", v.brokers)
	})
}

// coordinator asks a node that is up which node coordinates key (a group
// id, or a transactional id with keyType 1).
func (c *procCluster) coordinator(key string, keyType int8) (int32, string) {
	for _, n := range c.nodes {
		if !n.up() {
			continue
		}
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(4)
		req.CoordinatorType = keyType
		req.CoordinatorKeys = []string{key}
		raw, err := rpc(n.addr(), req)
		if err != nil {
			return -1, fmt.Sprintf("node %d: %v", n.id, err)
		}
		resp := raw.(*kmsg.FindCoordinatorResponse)
		if len(resp.Coordinators) != 1 {
			return -1, fmt.Sprintf("node %d: %d coordinators", n.id, len(resp.Coordinators))
		}
		co := resp.Coordinators[0]
		if err := kerr.ErrorForCode(co.ErrorCode); err != nil {
			return -1, fmt.Sprintf("node %d: %v", n.id, err)
		}
		return co.NodeID, ""
	}
	return -1, "no node is up"
}

// waitCoordinator waits until a node that is up names a coordinator of key
// for which cond holds, and returns it.
func (c *procCluster) waitCoordinator(key string, keyType int8, cond func(int32) bool) int32 {
	c.t.Helper()
	var id int32
	waitFor(c.t, "the coordinator of "+key, func() (bool, string) {
		var why string
		id, why = c.coordinator(key, keyType)
		if why != "" {
			return false, why
		}
		return cond(id), fmt.Sprintf("node %d", id)
	})
	return id
}
