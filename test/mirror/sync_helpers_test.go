package mirror_test

// The sync_* files test the periodic sync (configs, partitions, group
// offsets, ACLs) and secured source connections across whole in-process
// clusters; their helpers carry a sync prefix.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// syncWaitTimeout bounds every wait of these tests.
const syncWaitTimeout = 60 * time.Second

// syncRefresh is the clusters' mirror.metadata.refresh.interval.ms: the
// sync's period.
const syncRefresh = 300 * time.Millisecond

// syncCtx is a context for one test's requests.
func syncCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*syncWaitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// syncLogs keeps every log line of the clusters a test starts with it, so
// that the test can search them (for planted secrets); warnings and errors
// also go to the test log.
type syncLogs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLogs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// syncTB hands testcluster a testing.TB whose Log goes to a syncLogs.
type syncTB struct {
	*testing.T
	logs *syncLogs
}

// Log implements testing.TB: testcluster writes one node log line per call.
func (s syncTB) Log(args ...any) {
	line := fmt.Sprint(args...)
	s.logs.mu.Lock()
	s.logs.buf.WriteString(line)
	s.logs.buf.WriteByte('\n')
	s.logs.mu.Unlock()
	if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
		s.T.Log(line)
	}
}

// syncCluster starts a one-node cluster with small internal topics and a
// short mirror.metadata.refresh.interval.ms. With logs, every node log line
// at debug level is kept there.
func syncCluster(t *testing.T, logs *syncLogs, opts ...testcluster.Option) *testcluster.Cluster {
	t.Helper()
	base := []testcluster.Option{
		testcluster.Config("offsets.topic.replication.factor", "1"),
		testcluster.Config("offsets.topic.num.partitions", "3"),
		testcluster.Config("transaction.state.log.replication.factor", "1"),
		testcluster.Config("transaction.state.log.min.isr", "1"),
		testcluster.Config("transaction.state.log.num.partitions", "3"),
		testcluster.Config("mirror.state.topic.num.partitions", "5"),
		testcluster.Config("mirror.state.topic.replication.factor", "1"),
		testcluster.Config("group.initial.rebalance.delay.ms", "0"),
		testcluster.Config("replica.fetch.wait.max.ms", "100"),
		testcluster.Config("replica.fetch.backoff.ms", "100"),
		testcluster.Config("mirror.metadata.refresh.interval.ms", fmt.Sprint(syncRefresh.Milliseconds())),
	}
	var tb testing.TB = t
	if logs != nil {
		tb = syncTB{T: t, logs: logs}
		base = append(base, testcluster.LogLevel(slog.LevelDebug))
	}
	return testcluster.Start(tb, append(base, opts...)...)
}

// syncClient returns a franz-go client of cluster c (opts after the seed
// brokers), closed when the test ends.
func syncClient(t testing.TB, c *testcluster.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.BootstrapAddrs()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// syncMirrorAdmin returns a mirror admin client of cluster c.
func syncMirrorAdmin(t testing.TB, c *testcluster.Cluster, opts ...kgo.Opt) *mirroradmin.Client {
	t.Helper()
	adm, err := mirroradmin.NewFromAddrs(c.BootstrapAddrs(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adm.Close)
	return adm
}

// syncPoll calls f until it reports done, failing the test with f's last
// description after syncWaitTimeout. The clusters change on their own
// (fetchers, sync rounds): there is no event to wait on from outside.
func syncPoll(t testing.TB, what string, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(syncWaitTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		done, state := f()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last: %s", what, syncWaitTimeout, state)
		}
		<-tick.C
	}
}

// syncDescribe describes one mirror.
func syncDescribe(t testing.TB, adm *mirroradmin.Client, name string) mirroradmin.Mirror {
	t.Helper()
	ms, err := adm.DescribeMirrors(syncCtx(t), name)
	if err != nil {
		t.Fatalf("describe mirror %s: %v", name, err)
	}
	m, ok := ms.On(name)
	if !ok || m.Err != nil {
		t.Fatalf("describe mirror %s: %v %v", name, ok, m.Err)
	}
	return m
}

// syncOf returns a mirror's sync of kind.
func syncOf(m mirroradmin.Mirror, kind string) mirroradmin.Sync {
	for _, s := range m.Syncs {
		if s.Kind == kind {
			return s
		}
	}
	return mirroradmin.Sync{Kind: kind}
}

// syncRounds waits until sync kind has succeeded twice more (two sync
// rounds ran after the call), so that a test can check what a round did
// not change.
func syncRounds(t testing.TB, adm *mirroradmin.Client, mirror, kind string) {
	t.Helper()
	first := syncOf(syncDescribe(t, adm, mirror), kind).LastSuccess
	var second time.Time
	syncPoll(t, kind+" sync rounds", func() (bool, string) {
		s := syncOf(syncDescribe(t, adm, mirror), kind)
		if second.IsZero() && s.LastSuccess.After(first) {
			second = s.LastSuccess
		}
		return !second.IsZero() && s.LastSuccess.After(second), fmt.Sprintf("%+v", s)
	})
}

// syncAllMirroring waits until every partition of the mirror's topics is
// MIRRORING with no lag.
func syncAllMirroring(t testing.TB, adm *mirroradmin.Client, mirror string) {
	t.Helper()
	syncPoll(t, "every partition mirroring without lag", func() (bool, string) {
		m := syncDescribe(t, adm, mirror)
		for _, tp := range m.Topics {
			for _, p := range tp.Partitions {
				if p.State != mirroradmin.StateMirroring || p.Lag != 0 {
					return false, fmt.Sprintf("%s-%d %s lag %d %s", tp.Name, p.Partition, p.State, p.Lag, p.LastError)
				}
			}
		}
		return len(m.Topics) > 0, fmt.Sprintf("%+v", m.Topics)
	})
}

// syncProduce produces n records numbered from first to a partition,
// one batch each, and waits for them.
func syncProduce(t testing.TB, cl *kgo.Client, topic string, partition int32, first, n int) {
	t.Helper()
	for i := first; i < first+n; i++ {
		r := &kgo.Record{Topic: topic, Partition: partition, Value: []byte(fmt.Sprintf("%s-%d-%06d", topic, partition, i))}
		if err := cl.ProduceSync(syncCtx(t), r).FirstErr(); err != nil {
			t.Fatalf("produce %s-%d #%d: %v", topic, partition, i, err)
		}
	}
}

// syncManualProducer is a producer that writes to the record's partition.
func syncManualProducer() []kgo.Opt {
	return []kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0)}
}

// syncCommitted returns a group's committed offset (and leader epoch) of
// a partition, -1 when the group has none there. An error fails the test:
// a check that the sync left a group alone must not pass on a failed read.
func syncCommitted(t testing.TB, adm *kadm.Client, group, topic string, partition int32) (int64, int32) {
	t.Helper()
	offs, err := adm.FetchOffsets(syncCtx(t), group)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		t.Fatalf("committed offsets of group %s: %v", group, err)
	}
	o, ok := offs.Lookup(topic, partition)
	if !ok {
		return -1, -1
	}
	return o.At, o.LeaderEpoch
}

// syncEnds returns the end offsets (high watermarks) of a topic.
func syncEnds(t testing.TB, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	ends, err := adm.ListEndOffsets(syncCtx(t), topic)
	if err != nil {
		return nil
	}
	out := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			out[o.Partition] = o.Offset
		}
	})
	return out
}
