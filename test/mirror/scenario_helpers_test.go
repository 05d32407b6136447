package mirror_test

// The scenario tests (fan-out, fan-in, crashes of the kmirror binary during
// mirroring and failover, three-node destinations losing a leader, source
// outages) run whole clusters: in process (internal/testcluster) where
// nothing is killed, and as child processes of the real binary where a node
// is killed with SIGKILL. Their helpers talk to clusters only through
// client addresses, so that both kinds are handled alike. The sync_* files
// have their own helpers (with a sync prefix).

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m)) }

// scenarioWait bounds each wait of the scenario tests.
const scenarioWait = 90 * time.Second

// long reports whether the long variants run (KMIRROR_LONG=1).
func long() bool { return os.Getenv("KMIRROR_LONG") != "" }

// scenarioProps are the settings of every cluster of the scenario tests:
// small internal topics, quick fetch and mirror reactions, broker sessions
// short enough that a killed node is fenced within seconds, and no
// automatic leader rebalance (the tests decide leadership).
var scenarioProps = map[string]string{
	"offsets.topic.num.partitions":         "3",
	"transaction.state.log.num.partitions": "3",
	"mirror.state.topic.num.partitions":    "5",
	"group.initial.rebalance.delay.ms":     "0",
	"replica.fetch.wait.max.ms":            "100",
	"replica.fetch.backoff.ms":             "100",
	"mirror.metadata.refresh.interval.ms":  "1000",
	"broker.session.timeout.ms":            "3000",
	"broker.heartbeat.interval.ms":         "250",
	"replica.lag.time.max.ms":              "5000",
	"auto.leader.rebalance.enable":         "false",
}

// replicated are the settings of a three-node cluster: every topic, the
// internal ones included, on every node, two of them in sync for a write.
var replicated = map[string]string{
	"default.replication.factor":               "3",
	"min.insync.replicas":                      "2",
	"offsets.topic.replication.factor":         "3",
	"transaction.state.log.replication.factor": "3",
	"transaction.state.log.min.isr":            "2",
	"mirror.state.topic.replication.factor":    "3",
}

// single are the settings of a one-node cluster.
var single = map[string]string{
	"default.replication.factor":               "1",
	"offsets.topic.replication.factor":         "1",
	"transaction.state.log.replication.factor": "1",
	"transaction.state.log.min.isr":            "1",
	"mirror.state.topic.replication.factor":    "1",
}

// inProcess starts an in-process cluster of n nodes.
func inProcess(t *testing.T, n int) *testcluster.Cluster {
	t.Helper()
	props := maps.Clone(scenarioProps)
	if n == 1 {
		maps.Copy(props, single)
	} else {
		maps.Copy(props, replicated)
	}
	opts := []testcluster.Option{testcluster.Nodes(n)}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		opts = append(opts, testcluster.Config(k, props[k]))
	}
	return testcluster.Start(t, opts...)
}

// seedsOf returns an in-process cluster's client addresses (every node,
// running or not: clients outlive restarts).
func seedsOf(c *testcluster.Cluster) []string {
	var out []string
	for _, n := range c.Nodes() {
		out = append(out, n.Addr())
	}
	return out
}

// procCluster is a cluster of kmirror binaries, children of the test, each
// node combining the broker and controller roles, on ports that stay the
// same across restarts.
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
	port, cport int
	dir, file   string

	mu   sync.Mutex
	proc *testcluster.Process // nil while down
}

// startProcs starts n nodes of the binary with the scenario settings and
// extra, and returns once every node serves clients and sees every broker
// unfenced. The nodes inherit the test's environment when they start
// (t.Setenv reaches them).
func startProcs(t *testing.T, n int, extra map[string]string) *procCluster {
	t.Helper()
	c := &procCluster{t: t, bin: testcluster.BuildBinary(t), clusterID: storage.NewDirectoryID()}
	base := t.TempDir()
	for i := range n {
		c.nodes = append(c.nodes, &procNode{c: c, id: int32(i + 1), port: testcluster.FreePort(t), cport: testcluster.FreePort(t),
			dir: filepath.Join(base, "node-"+strconv.Itoa(i+1))})
	}
	var voters []string
	for _, nd := range c.nodes {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", nd.id, nd.cport))
	}
	for _, nd := range c.nodes {
		if err := os.MkdirAll(nd.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		props := maps.Clone(scenarioProps)
		if n == 1 {
			maps.Copy(props, single)
		} else {
			maps.Copy(props, replicated)
		}
		maps.Copy(props, extra)
		maps.Copy(props, map[string]string{
			"node.id":                        strconv.Itoa(int(nd.id)),
			"process.roles":                  "broker,controller",
			"listeners":                      fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", nd.port, nd.cport),
			"inter.broker.listener.name":     "PLAINTEXT",
			"controller.listener.names":      "CONTROLLER",
			"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
			"controller.quorum.voters":       strings.Join(voters, ","),
			"log.dirs":                       nd.logDir(),
		})
		nd.file = testcluster.WriteProperties(t, nd.dir, props)
	}
	// The voters of a new quorum can only finish starting together.
	for _, nd := range c.nodes {
		nd.mu.Lock()
		nd.proc = testcluster.LaunchProcess(t, c.bin, nd.addr(), nd.args()...)
		nd.mu.Unlock()
	}
	for _, nd := range c.nodes {
		if err := nd.process().WaitReady(testcluster.StartTimeout); err != nil {
			t.Fatalf("node %d did not start: %v\n%s", nd.id, err, nd.process().Output())
		}
	}
	c.waitUnfenced()
	return c
}

func (n *procNode) logDir() string { return filepath.Join(n.dir, "data") }
func (n *procNode) addr() string   { return "127.0.0.1:" + strconv.Itoa(n.port) }

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

// seeds returns every node's client address.
func (c *procCluster) seeds() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.addr())
	}
	return out
}

// node returns the node with id.
func (c *procCluster) node(id int32) *procNode {
	c.t.Helper()
	if id < 1 || int(id) > len(c.nodes) {
		c.t.Fatalf("no node %d", id)
	}
	return c.nodes[id-1]
}

// kill kills the node with SIGKILL: no controlled shutdown, nothing
// flushed.
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
// it serves clients and every running node sees it unfenced.
func (n *procNode) start() {
	n.c.t.Helper()
	if n.process() != nil {
		n.c.t.Fatalf("node %d is running", n.id)
	}
	p := testcluster.StartProcess(n.c.t, n.c.bin, n.addr(), n.args()...)
	n.mu.Lock()
	n.proc = p
	n.mu.Unlock()
	n.c.waitUnfenced()
	n.c.t.Logf("node %d started", n.id)
}

// stopAll stops every running node cleanly (SIGTERM), all at once: the
// last controlled shutdowns find no quorum and give up after the broker
// session timeout.
func (c *procCluster) stopAll() {
	c.t.Helper()
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		p := n.process()
		if p == nil {
			continue
		}
		n.mu.Lock()
		n.proc = nil
		n.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Signal(syscall.SIGTERM)
			if code := p.Wait(60 * time.Second); code != 0 {
				c.t.Errorf("node %d exited %d after SIGTERM\n%s", n.id, code, p.Output())
			}
		}()
	}
	wg.Wait()
}

// waitUnfenced waits until every running node's metadata shows every
// running node as an unfenced broker.
func (c *procCluster) waitUnfenced() {
	c.t.Helper()
	var running []int32
	for _, n := range c.nodes {
		if n.process() != nil {
			running = append(running, n.id)
		}
	}
	waitUntil(c.t, "every running broker unfenced", func() (bool, string) {
		for _, n := range c.nodes {
			if n.process() == nil {
				continue
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr()))
			if err != nil {
				return false, err.Error()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
			cancel()
			cl.Close()
			if err != nil {
				return false, fmt.Sprintf("node %d: %v", n.id, err)
			}
			var ids []int32
			for _, b := range resp.Brokers {
				ids = append(ids, b.NodeID)
			}
			for _, id := range running {
				if !slices.Contains(ids, id) {
					return false, fmt.Sprintf("node %d sees brokers %v", n.id, ids)
				}
			}
		}
		return true, ""
	})
}

// waitUntil polls cond (every 20 ms: these conditions have no event to
// wait on from outside the cluster) until it holds, failing the test with
// its last reason after scenarioWait.
func waitUntil(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(scenarioWait)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*scenarioWait)
	t.Cleanup(cancel)
	return ctx
}

// newClient returns a franz-go client on seeds, closed when the test ends.
func newClient(t testing.TB, seeds []string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// newMirrorAdmin returns a mirror admin client on seeds.
func newMirrorAdmin(t testing.TB, seeds []string) *mirroradmin.Client {
	t.Helper()
	return mirroradmin.NewClient(newClient(t, seeds, mirroradmin.ClientOpts()...))
}

// createTopicOn creates topic with partitions (replication factor from
// the cluster's default).
func createTopicOn(t testing.TB, seeds []string, topic string, partitions int32) {
	t.Helper()
	resp, err := kadm.NewClient(newClient(t, seeds)).CreateTopic(testCtx(t), partitions, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// mirrorFrom creates mirror on the destination with the source's seeds and
// adds topics to it.
func mirrorFrom(t testing.TB, adm *mirroradmin.Client, mirror string, source []string, topics ...string) {
	t.Helper()
	ctx := testCtx(t)
	if err := adm.CreateMirror(ctx, mirror, map[string]string{"bootstrap.servers": strings.Join(source, ",")}); err != nil {
		t.Fatalf("create mirror %s: %v", mirror, err)
	}
	res, err := adm.AddTopics(ctx, mirror, topics...)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("add %v to %s: %v", topics, mirror, err)
	}
}

// failover removes topics from mirror (the failover).
func failover(t testing.TB, adm *mirroradmin.Client, mirror string, topics ...string) {
	t.Helper()
	res, err := adm.Failover(testCtx(t), mirror, topics...)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("fail over %v of %s: %v", topics, mirror, err)
	}
}

// partitionStatuses returns the DescribeMirrors figures of topic's
// partitions (nil while the request fails, e.g. during a restart).
func partitionStatuses(t testing.TB, adm *mirroradmin.Client, mirror, topic string) ([]mirroradmin.PartitionStatus, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ms, err := adm.DescribeMirrors(ctx, mirror)
	if err != nil {
		return nil, err
	}
	m, ok := ms.On(mirror)
	if !ok {
		return nil, fmt.Errorf("mirror %s not described", mirror)
	}
	if m.Err != nil {
		return nil, m.Err
	}
	for _, tp := range m.Topics {
		if tp.Name == topic {
			return tp.Partitions, nil
		}
	}
	return nil, fmt.Errorf("topic %s not in mirror %s", topic, mirror)
}

// waitStates waits until DescribeMirrors shows every partition of topic in
// state.
func waitStates(t testing.TB, adm *mirroradmin.Client, mirror, topic string, partitions int, state mirroradmin.State) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%s: %s in %v", mirror, topic, state), func() (bool, string) {
		ps, err := partitionStatuses(t, adm, mirror, topic)
		if err != nil {
			return false, err.Error()
		}
		if len(ps) != partitions {
			return false, fmt.Sprintf("%d partitions described", len(ps))
		}
		for _, p := range ps {
			if p.State != state {
				return false, fmt.Sprintf("partition %d is %v (%s)", p.Partition, p.State, p.LastError)
			}
		}
		return true, ""
	})
}

// rawLog returns the batches of topic-partition from its log start to its
// high watermark, as the partition's leader serves them to a consumer
// (Fetch v12, READ_UNCOMMITTED: control batches and aborted data
// included), with the log start. Mirrored batches keep every byte
// (offsets and leader epochs included), so equal bytes mean equal logs.
func rawLog(t testing.TB, seeds []string, topic string, partition int32) (int64, []byte, error) {
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(int16(kmsg.Fetch), 12) // v12 names topics
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.MaxVersions(versions))
	if err != nil {
		return 0, nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, nil, err
	}
	so, ok1 := starts.Lookup(topic, partition)
	eo, ok2 := ends.Lookup(topic, partition)
	if !ok1 || !ok2 || so.Err != nil || eo.Err != nil {
		return 0, nil, fmt.Errorf("offsets of %s-%d: %v %v", topic, partition, so.Err, eo.Err)
	}
	leader := leaderOf(ctx, adm, topic, partition)
	if leader < 0 {
		return 0, nil, fmt.Errorf("%s-%d has no leader", topic, partition)
	}
	var buf bytes.Buffer
	for off := so.Offset; off < eo.Offset; {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = 12, -1, 8<<20, 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, off, 8<<20
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := cl.Broker(int(leader)).Request(ctx, req)
		if err != nil {
			return 0, nil, err
		}
		fr := resp.(*kmsg.FetchResponse)
		if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			return 0, nil, fmt.Errorf("fetch of %s-%d: malformed answer", topic, partition)
		}
		p := fr.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return 0, nil, fmt.Errorf("fetch of %s-%d at %d: %w", topic, partition, off, kerr.ErrorForCode(p.ErrorCode))
		}
		next := off
		for b := p.RecordBatches; len(b) >= 61; {
			size := int(binary.BigEndian.Uint32(b[8:])) + 12
			if size > len(b) {
				break
			}
			base := int64(binary.BigEndian.Uint64(b))
			last := base + int64(binary.BigEndian.Uint32(b[23:]))
			if last >= off && base < eo.Offset {
				buf.Write(b[:size])
				next = last + 1
			}
			b = b[size:]
		}
		if next == off {
			return 0, nil, fmt.Errorf("fetch of %s-%d at %d returned no batch below %d", topic, partition, off, eo.Offset)
		}
		off = next
	}
	return so.Offset, buf.Bytes(), nil
}

// leaderOf returns the leader of topic-partition in the metadata (-1 when
// unknown).
func leaderOf(ctx context.Context, adm *kadm.Client, topic string, partition int32) int32 {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return -1
	}
	p, ok := md.Topics[topic].Partitions[partition]
	if !ok {
		return -1
	}
	return p.Leader
}

// waitSameLogs waits until every partition of topic holds the same batches
// from the same log start on both clusters (a prefix match is not enough:
// the whole log, up to each high watermark).
func waitSameLogs(t testing.TB, src, dst []string, topic string, partitions int32) {
	t.Helper()
	for p := range partitions {
		waitUntil(t, fmt.Sprintf("%s-%d identical on both clusters", topic, p), func() (bool, string) {
			s0, sb, err := rawLog(t, src, topic, p)
			if err != nil {
				return false, "source: " + err.Error()
			}
			d0, db, err := rawLog(t, dst, topic, p)
			if err != nil {
				return false, "destination: " + err.Error()
			}
			if s0 != d0 || !bytes.Equal(sb, db) {
				return false, fmt.Sprintf("log start %d vs %d, %d vs %d bytes", s0, d0, len(sb), len(db))
			}
			return true, ""
		})
	}
}

// batchHeader is what the tests read of a batch.
type batchHeader struct {
	base, last int64
	epoch      int32
	producerID int64
	control    bool
	// controlType is the key type of a control batch's record (7:
	// MIRROR_PID_RESET), -1 for other batches.
	controlType int16
}

// headers splits a log's bytes into batch headers.
func headers(t testing.TB, b []byte) []batchHeader {
	t.Helper()
	var out []batchHeader
	for len(b) > 0 {
		if len(b) < 61 {
			t.Fatalf("a batch of %d bytes", len(b))
		}
		size := int(binary.BigEndian.Uint32(b[8:])) + 12
		base := int64(binary.BigEndian.Uint64(b))
		h := batchHeader{
			base: base, last: base + int64(binary.BigEndian.Uint32(b[23:])),
			epoch:       int32(binary.BigEndian.Uint32(b[12:])),
			producerID:  int64(binary.BigEndian.Uint64(b[43:])),
			control:     binary.BigEndian.Uint16(b[21:])&0x20 != 0,
			controlType: -1,
		}
		if h.control {
			h.controlType = controlKeyType(b[61:size])
		}
		out = append(out, h)
		b = b[size:]
	}
	return out
}

// controlKeyType reads the key type of a control batch's (uncompressed,
// single) record: length varint, attributes, timestamp and offset deltas
// (varints), key length varint, then the key's version and type (int16s).
func controlKeyType(rec []byte) int16 {
	for range 4 { // length, attributes (a byte, read as a varint: < 0x80), timestamp delta, offset delta
		_, n := binary.Varint(rec)
		if n <= 0 {
			return -1
		}
		rec = rec[n:]
	}
	klen, n := binary.Varint(rec)
	if n <= 0 || klen < 4 || len(rec[n:]) < 4 {
		return -1
	}
	return int16(binary.BigEndian.Uint16(rec[n+2:]))
}

// barriers counts the MIRROR_PID_RESET batches of a log.
func barriers(hs []batchHeader) int {
	n := 0
	for _, h := range hs {
		if h.control && h.controlType == 7 {
			n++
		}
	}
	return n
}

// checkFailedOver fails unless log, a failed-over partition's, is exactly
// kept (the source's batches below its last stable offset, byte for byte:
// mirrored batches keep every byte, offsets and leader epochs included)
// followed by one MIRROR_PID_RESET batch (control type 7) in an epoch
// above every one of kept's.
func checkFailedOver(t testing.TB, name string, kept, log []byte) {
	t.Helper()
	if !bytes.HasPrefix(log, kept) {
		kh, lh := headers(t, kept), headers(t, log)
		i := 0
		for i < len(kh) && i < len(lh) && kh[i] == lh[i] {
			i++
		}
		var k, l any = "nothing", "nothing"
		if i < len(kh) {
			k = kh[i]
		}
		if i < len(lh) {
			l = lh[i]
		}
		t.Fatalf("%s: the failed-over log is not the source's %d bytes below the cut: batch %d is %+v, the source's %+v", name, len(kept), i, l, k)
	}
	rest := headers(t, log[len(kept):])
	if len(rest) != 1 || rest[0].controlType != 7 {
		t.Fatalf("%s: after the source's %d bytes the log holds %+v, want exactly one MIRROR_PID_RESET batch", name, len(kept), rest)
	}
	for _, h := range headers(t, kept) {
		if h.epoch >= rest[0].epoch {
			t.Fatalf("%s: the barrier's epoch %d is not above the kept batch at %d in epoch %d", name, rest[0].epoch, h.base, h.epoch)
		}
	}
}

// batchesBelow returns the bytes of log's batches that end below cut,
// failing if a batch straddles it (a failover cuts at a batch boundary).
func batchesBelow(t testing.TB, name string, log []byte, cut int64) []byte {
	t.Helper()
	n := 0
	for _, h := range headers(t, log) {
		if h.base >= cut {
			break
		}
		if h.last >= cut {
			t.Fatalf("%s: the batch at %d..%d straddles the cut at %d", name, h.base, h.last, cut)
		}
		n += int(binary.BigEndian.Uint32(log[n+8:])) + 12
	}
	return log[:n]
}

// lastStableOffsets returns the last stable offset of each partition of
// topic: the first offset of its oldest open transaction, or its high
// watermark.
func lastStableOffsets(t testing.TB, seeds []string, topic string, parts int32) []int64 {
	t.Helper()
	lsos, err := kadm.NewClient(newClient(t, seeds)).ListCommittedOffsets(testCtx(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, parts)
	for p := range parts {
		o, ok := lsos.Lookup(topic, p)
		if !ok || o.Err != nil {
			t.Fatalf("last stable offset of %s-%d: %v %v", topic, p, ok, o.Err)
		}
		out[p] = o.Offset
	}
	return out
}

// producer writes keyed records to topic with an idempotent franz-go
// producer on its own goroutine until stopped.
type producer struct {
	cl     *kgo.Client
	stopCh chan struct{}
	done   chan struct{}
	acked  atomic.Int64
	err    atomic.Value
}

// startProducer starts a producer; the test's cleanup stops it if the
// test does not.
func startProducer(t testing.TB, seeds []string, topic, prefix string) *producer {
	t.Helper()
	p := &producer{
		cl:     newClient(t, seeds, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(2*time.Millisecond)),
		stopCh: make(chan struct{}), done: make(chan struct{}),
	}
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.stopCh:
				if err := p.cl.Flush(context.Background()); err != nil {
					p.err.Store(err)
				}
				return
			default:
			}
			p.cl.Produce(context.Background(), &kgo.Record{Key: []byte(prefix + "-" + strconv.Itoa(i)), Value: []byte(prefix)},
				func(_ *kgo.Record, err error) {
					if err != nil {
						p.err.CompareAndSwap(nil, err)
						return
					}
					p.acked.Add(1)
				})
			if i%50 == 49 {
				// Let the acknowledgements catch up: the producer keeps
				// a steady trickle rather than filling its buffer.
				if err := p.cl.Flush(context.Background()); err != nil {
					p.err.CompareAndSwap(nil, err)
				}
			}
		}
	}()
	t.Cleanup(func() { p.stop() })
	return p
}

// stop stops the producer after its records are acknowledged and returns
// how many were.
func (p *producer) stop() int64 {
	select {
	case <-p.stopCh:
	default:
		close(p.stopCh)
	}
	<-p.done
	return p.acked.Load()
}

// failed returns the producer's first error.
func (p *producer) failed() error {
	if e, ok := p.err.Load().(error); ok {
		return e
	}
	return nil
}

// waitAcked waits until the producer has n records acknowledged.
func (p *producer) waitAcked(t testing.TB, n int64) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%d records acknowledged", n), func() (bool, string) {
		if err := p.failed(); err != nil {
			t.Fatalf("producer: %v", err)
		}
		got := p.acked.Load()
		return got >= n, fmt.Sprintf("%d acknowledged", got)
	})
}

// produceSome writes n idempotent records to topic and waits for them.
func produceSome(t testing.TB, seeds []string, topic, prefix string, n int) {
	t.Helper()
	cl := newClient(t, seeds, kgo.DefaultProduceTopic(topic))
	ctx := testCtx(t)
	for i := range n {
		cl.Produce(ctx, &kgo.Record{Key: []byte(prefix + "-" + strconv.Itoa(i)), Value: []byte(prefix)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce %s-%d: %v", prefix, i, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cl.Close()
}

// waitOutputLine waits until a line of the process's output contains
// every one of parts and returns it.
func waitOutputLine(t testing.TB, p *testcluster.Process, parts ...string) string {
	t.Helper()
	var line string
	waitUntil(t, fmt.Sprintf("a line with %q in the output", parts), func() (bool, string) {
		for l := range strings.SplitSeq(p.Output(), "\n") {
			all := true
			for _, s := range parts {
				if !strings.Contains(l, s) {
					all = false
					break
				}
			}
			if all {
				line = l
				return true, ""
			}
		}
		if p.Exited() {
			t.Fatalf("the process exited\n%s", p.Output())
		}
		return false, "not yet"
	})
	return line
}
