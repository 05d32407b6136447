package mirror_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// setMirrorBootstrap points a mirror at other source brokers
// (IncrementalAlterConfigs on the MIRROR resource).
func setMirrorBootstrap(t testing.TB, c *testcluster.Cluster, mirror, bootstrap string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = 64, mirror
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Op, cfg.Value = "bootstrap.servers", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(bootstrap)
	r.Configs = append(r.Configs, cfg)
	req.Resources = append(req.Resources, r)
	resp := admin(t, c, req).(*kmsg.IncrementalAlterConfigsResponse)
	if code := resp.Resources[0].ErrorCode; code != 0 {
		t.Fatalf("set %s's bootstrap.servers: %v %v", mirror, kerrText(code), deref(resp.Resources[0].ErrorMessage))
	}
}

// partitionErrors returns the last error DescribeMirrors reports for each
// partition of a mirrored topic.
func partitionErrors(t testing.TB, c *testcluster.Cluster, mirror, topic string) map[int32]string {
	t.Helper()
	out := map[int32]string{}
	for _, m := range describe(t, c, mirror).Mirrors {
		for _, tp := range m.Topics {
			if tp.Name == topic {
				for _, p := range tp.Partitions {
					out[p.Partition] = deref(p.LastError)
				}
			}
		}
	}
	return out
}

// retryProbe is a partition whose failure is retried: a topic of src
// mirrored into dst under a mirror of its own ("probe"). Deleted on src,
// the topic is missing there, which is not a final failure: the partition
// goes FAILED and is retried (PREPARING) after the driver's first backoff,
// a positive event showing that dst's retry timers ran.
type retryProbe struct {
	src, dst *testcluster.Cluster
}

func startRetryProbe(t testing.TB, src, dst *testcluster.Cluster) *retryProbe {
	t.Helper()
	createTopic(t, src, "probe", 1, nil)
	produceN(t, src, "probe", "p", 1)
	createMirror(t, dst, src, "probe")
	mirrorTopics(t, dst, opAdd, "probe", "probe")
	waitStates(t, dst, "probe", "probe", 1, wire.MirrorStateMirroring)
	return &retryProbe{src: src, dst: dst}
}

// failAndWaitRetry deletes the probe's topic on the source and waits until
// its partition failed and was retried: a retry backoff (the first, the
// shortest) that began after the call has run out.
func (r *retryProbe) failAndWaitRetry(t testing.TB) {
	t.Helper()
	st := storedState(t, r.dst, "probe", "probe", 0)
	if st.State != wire.MirrorStateMirroring {
		t.Fatalf("the probe partition is %v, not MIRRORING", st.State)
	}
	if resp, err := r.src.Admin(t).DeleteTopics(ctxFor(t), "probe"); err != nil || resp["probe"].Err != nil {
		t.Fatalf("delete the probe topic on the source: %v %v", err, resp["probe"].Err)
	}
	// MIRRORING (st) → FAILED → PREPARING (the retry).
	waitFor(t, "the probe partition to fail and be retried", func() bool {
		return storedState(t, r.dst, "probe", "probe", 0).StateEpoch >= st.StateEpoch+2
	})
}

// stableFailure checks that a FAILED partition is not retried: its
// persisted state epoch stays put while the probe's partition, failing
// after it, is retried (a retry would move it through PREPARING).
func stableFailure(t *testing.T, c *testcluster.Cluster, probe *retryProbe, mirror, topic string, partition int32) {
	t.Helper()
	before := storedState(t, c, mirror, topic, partition)
	if before.State != wire.MirrorStateFailed {
		t.Fatalf("%s-%d is %v, not FAILED", topic, partition, before.State)
	}
	probe.failAndWaitRetry(t)
	after := storedState(t, c, mirror, topic, partition)
	if after.State != wire.MirrorStateFailed || after.StateEpoch != before.StateEpoch {
		t.Fatalf("%s-%d was retried: %v (state epoch %d) → %v (%d)", topic, partition, before.State, before.StateEpoch, after.State, after.StateEpoch)
	}
}

// TestSourceClusterChanged points a mirror at another cluster that holds
// the same topic under the same id and at the same offsets (another mirror
// of the same source): the mirrored partitions go FAILED, with a message
// naming both clusters, and are not retried; the destination's log is left
// alone; pointed back, the mirror carries on where it was.
func TestSourceClusterChanged(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	c := startCluster(t)
	createTopic(t, a, "same", 2, nil)
	produceN(t, a, "same", "a", 30)
	createMirror(t, b, a, "m")
	createMirror(t, c, a, "m")
	mirrorTopics(t, b, opAdd, "m", "same")
	mirrorTopics(t, c, opAdd, "m", "same")
	an, bn, cn := a.Nodes()[0], b.Nodes()[0], c.Nodes()[0]
	waitStates(t, b, "m", "same", 2, wire.MirrorStateMirroring)
	waitStates(t, c, "m", "same", 2, wire.MirrorStateMirroring)
	waitIdentical(t, an, bn, "same", 2)
	waitIdentical(t, an, cn, "same", 2)
	_, before := logBytes(t, bn, "same", 0)
	probe := startRetryProbe(t, a, b)

	setMirrorBootstrap(t, b, "m", c.Bootstrap())
	waitStates(t, b, "m", "same", 2, wire.MirrorStateFailed)
	for p, msg := range partitionErrors(t, b, "m", "same") {
		if !strings.Contains(msg, a.ClusterID()) || !strings.Contains(msg, c.ClusterID()) {
			t.Errorf("same-%d's error does not name both clusters (%s, %s): %q", p, a.ClusterID(), c.ClusterID(), msg)
		}
	}
	stableFailure(t, b, probe, "m", "same", 0)
	if _, after := logBytes(t, bn, "same", 0); !bytes.Equal(before, after) {
		t.Fatal("the destination's log changed while its mirror pointed at another cluster")
	}

	setMirrorBootstrap(t, b, "m", a.Bootstrap())
	waitStates(t, b, "m", "same", 2, wire.MirrorStateMirroring)
	produceN(t, a, "same", "back", 10)
	waitIdentical(t, an, bn, "same", 2)
}

// TestSourceTopicRecreated deletes a mirrored topic on the source and
// creates it again (a new topic id): the destination's partitions go
// FAILED, are not retried, and keep what they copied.
func TestSourceTopicRecreated(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "again", 2, nil)
	produceN(t, a, "again", "old", 20)
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "again")
	an, bn := a.Nodes()[0], b.Nodes()[0]
	waitStates(t, b, "m", "again", 2, wire.MirrorStateMirroring)
	waitIdentical(t, an, bn, "again", 2)
	copied := leos(t, bn, "again", 2)
	probe := startRetryProbe(t, a, b)

	if resp, err := a.Admin(t).DeleteTopics(ctxFor(t), "again"); err != nil || resp["again"].Err != nil {
		t.Fatalf("delete on the source: %v %v", err, resp["again"].Err)
	}
	waitFor(t, "the topic gone on the source", func() bool {
		td, err := a.Admin(t).ListTopics(ctxFor(t), "again")
		return err == nil && td["again"].Err != nil
	})
	createTopic(t, a, "again", 2, nil)
	produceN(t, a, "again", "new", 5)
	waitStates(t, b, "m", "again", 2, wire.MirrorStateFailed)
	for p, msg := range partitionErrors(t, b, "m", "again") {
		if !strings.Contains(msg, "created again") {
			t.Errorf("again-%d's error: %q", p, msg)
		}
	}
	stableFailure(t, b, probe, "m", "again", 0)
	if got := leos(t, bn, "again", 2); got[0] != copied[0] || got[1] != copied[1] {
		t.Fatalf("log ends %v, copied %v", got, copied)
	}
}

// TestFailbackRetryKeepsMirroredData fails A over to B, writes on B, and
// mirrors the topic back to A; then A's partitions fail (the mirror points
// at another cluster for a while) and are retried once it points at B
// again. The retry's PREPARING must not cut A's log at B's Last Mirrored
// Epoch a second time (the cut belongs to the first PREPARING after the
// failover): it would throw away what A mirrored since and move its high
// watermark back under consumers. Such a cut heals once A fetches again
// (B still has the records, or deleted them and A's log start follows
// B's), so the test reads A's decision in its log: a resumption without
// truncation, no cut. B deletes records meanwhile, which A follows as it
// resumes.
func TestFailbackRetryKeepsMirroredData(t *testing.T) {
	logs := &lineLog{T: t}
	a := startCluster(logs, testcluster.LogLevel(slog.LevelInfo))
	b := startCluster(t)
	other := startCluster(t)
	createTopic(t, a, "fb", 1, nil)
	produceN(t, a, "fb", "a", 20)
	createMirror(t, b, a, "ab")
	mirrorTopics(t, b, opAdd, "ab", "fb")
	an, bn := a.Nodes()[0], b.Nodes()[0]
	waitStates(t, b, "ab", "fb", 1, wire.MirrorStateMirroring)
	waitIdentical(t, an, bn, "fb", 1)
	mirrorTopics(t, b, opRemove, "ab", "fb")
	waitStates(t, b, "ab", "fb", 1, wire.MirrorStateStopped)
	produceN(t, b, "fb", "b", 20)

	createMirror(t, a, b, "ba")
	mirrorTopics(t, a, opAdd, "ba", "fb")
	waitStates(t, a, "ba", "fb", 1, wire.MirrorStateMirroring)
	waitIdentical(t, bn, an, "fb", 1)
	const cut, resumed = "mirror partition truncates to the source's last mirrored epoch", "mirror partition resumes without truncation"
	cuts := logs.count(cut) // none: A wrote nothing after B copied it

	setMirrorBootstrap(t, a, "ba", other.Bootstrap())
	waitStates(t, a, "ba", "fb", 1, wire.MirrorStateFailed)
	end := leo(t, bn, "fb", 0)
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "fb", Partition: 0, At: end - 5})
	if resp, err := b.Admin(t).DeleteRecords(ctxFor(t), os); err != nil || resp.Error() != nil {
		t.Fatalf("delete records on B: %v %v", err, resp.Error())
	}
	before := logs.count(resumed)
	setMirrorBootstrap(t, a, "ba", b.Bootstrap())
	waitStates(t, a, "ba", "fb", 1, wire.MirrorStateMirroring)
	produceN(t, b, "fb", "b2", 5)
	waitIdentical(t, bn, an, "fb", 1)
	if n := logs.count(cut); n != cuts {
		t.Fatalf("A's retry cut its log at the Last Mirrored Epoch (%d cuts, %d before)", n, cuts)
	}
	if logs.count(resumed) == before {
		t.Fatalf("A's retry did not log that it resumes without truncation")
	}
}

// lineLog is a testing.TB whose Log keeps every line (node logs: one line
// per call) for count, and passes warnings and errors on to the test.
type lineLog struct {
	*testing.T
	mu    sync.Mutex
	lines []string
}

// Log implements testing.TB.
func (l *lineLog) Log(args ...any) {
	line := fmt.Sprint(args...)
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
	if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
		l.T.Log(line)
	}
}

// count returns how many lines hold s.
func (l *lineLog) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}
