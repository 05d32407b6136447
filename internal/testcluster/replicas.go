package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/storage"
)

// The helpers of this file look at partition replicas across a cluster's
// nodes: leadership as the metadata says, the bytes each replica holds,
// and node failures that skip the controlled shutdown.

// WaitTimeout bounds the helpers' waits for replication and elections.
const WaitTimeout = 60 * time.Second

// Kill stops the node without a controlled shutdown: its partitions keep
// it as leader until the controller fences it (broker.session.timeout.ms),
// as after a crash. Its files are closed cleanly (an in-process node cannot
// lose its page cache; crash tests run the binary).
func (n *Node) Kill() {
	n.c.t.Helper()
	n.c.mu.Lock()
	s := n.server
	n.server = nil
	n.c.mu.Unlock()
	if s == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // an ended context skips the controlled shutdown
	if err := s.Shutdown(ctx); err != nil {
		n.c.t.Fatalf("testcluster: kill node %d: %v", n.ID, err)
	}
}

// StartAsync starts a stopped node and returns at once; the returned
// channel yields the outcome. A node whose controllers lack a majority
// cannot finish starting until enough voters run, so the voters of a
// stopped quorum must start together.
func (n *Node) StartAsync() <-chan error {
	n.c.t.Helper()
	if n.Running() {
		n.c.t.Fatalf("testcluster: node %d is running", n.ID)
	}
	kafka, ctrl := listen(n.c.t, n.Port), listen(n.c.t, n.ControllerPort)
	done := make(chan error, 1)
	go func() { done <- n.start(kafka, ctrl) }()
	return done
}

// StartAll starts the stopped nodes together (so that a quorum that lost
// its majority gets it back) and returns once all serve clients.
func (c *Cluster) StartAll(nodes ...*Node) {
	c.t.Helper()
	var waits []<-chan error
	for _, n := range nodes {
		waits = append(waits, n.StartAsync())
	}
	for _, w := range waits {
		if err := <-w; err != nil {
			c.t.Fatalf("testcluster: %v", err)
		}
	}
	c.waitConverged()
}

// PartitionState returns topic-partition's state as the metadata of a
// running node says (false if no running node knows it).
func (c *Cluster) PartitionState(topic string, partition int32) (metadata.PartitionState, bool) {
	for _, n := range c.Nodes() {
		c.mu.Lock()
		s := n.server
		c.mu.Unlock()
		if s == nil || s.Broker() == nil {
			continue
		}
		if t, ok := s.Broker().Replicas().Image().Topic(topic); ok {
			return t.Partition(partition)
		}
	}
	return metadata.PartitionState{}, false
}

// WaitPartition polls until cond holds for topic-partition's state in the
// metadata of every running node, and returns that state.
func (c *Cluster) WaitPartition(t testing.TB, topic string, partition int32, what string, cond func(metadata.PartitionState) bool) metadata.PartitionState {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for {
		st, ok := c.agreedState(topic, partition)
		if ok && cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("testcluster: %s-%d: timed out waiting for %s (last state %+v)", topic, partition, what, st)
		}
		time.Sleep(5 * time.Millisecond) // polling nodes' views; there is no event to wait on
	}
}

// agreedState returns the partition's state if every running node's
// metadata has the same partition epoch.
func (c *Cluster) agreedState(topic string, partition int32) (metadata.PartitionState, bool) {
	var st metadata.PartitionState
	seen := false
	for _, n := range c.Nodes() {
		c.mu.Lock()
		s := n.server
		c.mu.Unlock()
		if s == nil || s.Broker() == nil {
			continue
		}
		t, ok := s.Broker().Replicas().Image().Topic(topic)
		if !ok {
			return st, false
		}
		p, ok := t.Partition(partition)
		if !ok || (seen && p.PartitionEpoch != st.PartitionEpoch) {
			return p, false
		}
		st, seen = p, true
	}
	return st, seen
}

// ReplicaLog returns the batches the node's replica of topic-partition
// holds, from its log start to its log end, as they are on disk (offsets
// and leader epochs included), with its log start offset.
func (n *Node) ReplicaLog(t testing.TB, topic string, partition int32) (logStart int64, data []byte) {
	t.Helper()
	p, ok := n.Server().Broker().Replicas().Partition(storage.TopicPartition{Topic: topic, Partition: partition})
	if !ok || p.Log() == nil {
		t.Fatalf("testcluster: node %d has no replica of %s-%d", n.ID, topic, partition)
	}
	start, data, err := wholeLog(p.Log())
	if err != nil {
		t.Fatalf("testcluster: node %d's %s-%d: %v", n.ID, topic, partition, err)
	}
	return start, data
}

// wholeLog reads l's batches from its log start to its log end.
func wholeLog(l *storage.Log) (int64, []byte, error) {
	start, end := l.LogStartOffset(), l.LogEndOffset()
	var buf bytes.Buffer
	for off := start; off < end; {
		r, err := l.Read(off, 1<<20, storage.FetchLogEnd, true)
		if err != nil {
			return 0, nil, fmt.Errorf("read at %d: %w", off, err)
		}
		b, err := r.Bytes()
		r.Release()
		if err != nil {
			return 0, nil, fmt.Errorf("read at %d: %w", off, err)
		}
		if len(b) == 0 {
			break
		}
		next, err := endOfBatches(b)
		if err != nil {
			return 0, nil, fmt.Errorf("at %d: %w", off, err)
		}
		buf.Write(b)
		off = next
	}
	return start, buf.Bytes(), nil
}

// ReadStoppedReplica returns the batches that the replica of
// topic-partition in logDir (an entry of a stopped node's log.dirs) holds,
// from its log start to its log end as they are on disk, with its log start
// offset, for comparing the replicas of processes the test ran. It opens
// the log with full recovery, so every batch is validated (size, CRC,
// offsets) on the way, and fails the test if recovery had to cut anything
// off: the node stopped cleanly and its files must be whole.
func ReadStoppedReplica(t testing.TB, logDir, topic string, partition int32) (logStart int64, data []byte) {
	t.Helper()
	tp := storage.TopicPartition{Topic: topic, Partition: partition}
	dir := filepath.Join(logDir, topic+"-"+strconv.Itoa(int(partition)))
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("testcluster: no segments in %s (%v)", dir, err)
	}
	var onDisk int64
	for _, s := range segs {
		fi, err := os.Stat(s)
		if err != nil {
			t.Fatal(err)
		}
		onDisk += fi.Size()
	}
	starts, err := storage.ReadOffsetCheckpoint(filepath.Join(logDir, "log-start-offset-checkpoint"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("testcluster: %s: %v", logDir, err)
	}
	l, err := storage.Open(dir, tp, storage.DefaultLogConfig(), storage.Options{LogStartOffset: starts[tp], Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("testcluster: open %s: %v", dir, err)
	}
	defer l.Close()
	start, data, err := wholeLog(l)
	if err != nil {
		t.Fatalf("testcluster: %s: %v", dir, err)
	}
	if l.Size() != onDisk {
		t.Fatalf("testcluster: recovery of %s cut its segments from %d to %d bytes", dir, onDisk, l.Size())
	}
	return start, data
}

// endOfBatches returns the offset after the last of whole v2 batches.
func endOfBatches(b []byte) (int64, error) {
	var next int64 = -1
	for len(b) > 0 {
		if len(b) < 61 {
			return -1, fmt.Errorf("short batch of %d bytes", len(b))
		}
		base := int64(beUint64(b[0:8]))
		size := int(beUint32(b[8:12]))
		if size < 49 || 12+size > len(b) {
			return -1, fmt.Errorf("batch length %d", size)
		}
		lastDelta := int64(int32(beUint32(b[23:27])))
		next = base + lastDelta + 1
		b = b[12+size:]
	}
	return next, nil
}

func beUint32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func beUint64(b []byte) uint64 { return uint64(beUint32(b[:4]))<<32 | uint64(beUint32(b[4:8])) }

// WaitReplicasIdentical polls until every running replica of
// topic-partition holds the same bytes from the same log start as the
// leader, every replica is in the ISR, and the high watermark is the log
// end; it returns the leader's bytes.
func (c *Cluster) WaitReplicasIdentical(t testing.TB, topic string, partition int32) []byte {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	var why string
	for {
		data, ok, reason := c.replicasIdentical(t, topic, partition)
		if ok {
			return data
		}
		why = reason
		if time.Now().After(deadline) {
			t.Fatalf("testcluster: %s-%d: replicas not identical within %v: %s", topic, partition, WaitTimeout, why)
		}
		time.Sleep(10 * time.Millisecond) // polling replicas; there is no event to wait on
	}
}

func (c *Cluster) replicasIdentical(t testing.TB, topic string, partition int32) ([]byte, bool, string) {
	st, ok := c.agreedState(topic, partition)
	if !ok || st.Leader < 0 {
		return nil, false, fmt.Sprintf("no agreed leader (%+v)", st)
	}
	if len(st.ISR) != len(st.Replicas) {
		return nil, false, fmt.Sprintf("ISR %v of replicas %v", st.ISR, st.Replicas)
	}
	leader := c.Node(st.Leader)
	if !leader.Running() {
		return nil, false, "the leader is stopped"
	}
	lp, ok := leader.Server().Broker().Replicas().Partition(storage.TopicPartition{Topic: topic, Partition: partition})
	if !ok || lp.Log() == nil {
		return nil, false, "the leader has no log"
	}
	if hw, leo := lp.Log().HighWatermark(), lp.Log().LogEndOffset(); hw != leo {
		return nil, false, fmt.Sprintf("high watermark %d below the log end %d", hw, leo)
	}
	start, want := leader.ReplicaLog(t, topic, partition)
	for _, id := range st.Replicas {
		n := c.Node(id)
		if id == st.Leader || !n.Running() {
			continue
		}
		s, got := n.ReplicaLog(t, topic, partition)
		if s != start || !bytes.Equal(got, want) {
			return nil, false, fmt.Sprintf("node %d holds [%d, +%d bytes), the leader %d [%d, +%d bytes)", id, s, len(got), st.Leader, start, len(want))
		}
	}
	return want, true, ""
}

// WipePartition removes a stopped node's replica of topic-partition from
// its log directory, as if its disk had been replaced.
func (n *Node) WipePartition(t testing.TB, topic string, partition int32) {
	t.Helper()
	if n.Running() {
		t.Fatalf("testcluster: node %d is running", n.ID)
	}
	dir := filepath.Join(n.Dir, "data", topic+"-"+strconv.Itoa(int(partition)))
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("testcluster: node %d has no %s: %v", n.ID, dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
}
