package group_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// integrationTimeout bounds each wait of the integration tests.
const integrationTimeout = 90 * time.Second

// startGroupCluster starts a one-node kmirror cluster for the integration
// tests. The node serves the group APIs on its own client listener, so
// clients bootstrap from it and FindCoordinator points them back at it.
func startGroupCluster(t *testing.T, opts ...testcluster.Option) *testcluster.Cluster {
	t.Helper()
	opts = append([]testcluster.Option{
		testcluster.Config("offsets.topic.replication.factor", "1"),
		testcluster.Config("offsets.topic.num.partitions", "5"),
		testcluster.Config("group.initial.rebalance.delay.ms", "0"),
	}, opts...)
	return testcluster.Start(t, opts...)
}

// ledger records which record ids consumers processed, and how often.
type ledger struct {
	mu    sync.Mutex
	seen  map[int]int
	total int
}

func newLedger() *ledger { return &ledger{seen: map[int]int{}} }

func (l *ledger) add(id int) {
	l.mu.Lock()
	l.seen[id]++
	l.total++
	l.mu.Unlock()
}

func (l *ledger) distinct() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen)
}

// waitDistinct waits until n distinct ids were processed.
func (l *ledger) waitDistinct(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(integrationTimeout)
	for l.distinct() < n {
		if time.Now().After(deadline) {
			t.Fatalf("processed %d distinct records, waiting for %d", l.distinct(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// member is one running group consumer; stop makes it leave the group.
type member struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

// startMember runs a consumer in the group that processes records into l,
// committing after each poll and when partitions are revoked, so that no
// record is processed twice across rebalances.
func startMember(t *testing.T, bs, groupID, topic string, balancer kgo.GroupBalancer, l *ledger) *member {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bs),
		kgo.ConsumerGroup(groupID),
		kgo.ConsumeTopics(topic),
		kgo.Balancers(balancer),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(10*time.Second),
		kgo.HeartbeatInterval(500*time.Millisecond),
		kgo.RebalanceTimeout(30*time.Second),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Logf("commit on revoke: %v", err)
			}
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &member{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				id, err := strconv.Atoi(string(r.Value))
				if err != nil {
					t.Errorf("record value %q", r.Value)
					return
				}
				l.add(id)
			})
			cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := cl.CommitUncommittedOffsets(cctx); err != nil {
				t.Logf("commit: %v", err)
			}
			ccancel()
			cl.AllowRebalance()
			if ctx.Err() != nil || fs.IsClientClosed() {
				return
			}
		}
	}()
	t.Cleanup(m.stop)
	return m
}

// stop ends the poll loop and closes the client, which leaves the group
// (committing what it processed in its revoke callback).
func (m *member) stop() {
	m.cancel()
	<-m.done
	m.cl.Close()
}

// producer writes records whose values are consecutive ids.
type producer struct {
	t     *testing.T
	cl    *kgo.Client
	topic string
	next  int
}

func (p *producer) produce(n int) {
	p.t.Helper()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: p.topic, Value: []byte(strconv.Itoa(p.next))}
		p.next++
	}
	ctx, cancel := context.WithTimeout(context.Background(), integrationTimeout)
	defer cancel()
	if err := p.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		p.t.Fatalf("produce: %v", err)
	}
}

// groupMembers waits until the group is Stable with n members.
func groupMembers(t *testing.T, adm *kadm.Client, groupID string, n int) {
	t.Helper()
	deadline := time.Now().Add(integrationTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ds, err := adm.DescribeGroups(ctx, groupID)
		cancel()
		if err == nil {
			if d := ds[groupID]; d.Err == nil && d.State == "Stable" && len(d.Members) == n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s never became Stable with %d members: %+v %v", groupID, n, ds[groupID], err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// committedTotal is the sum of a group's committed offsets on topic.
func committedTotal(t *testing.T, adm *kadm.Client, groupID, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	os, err := adm.FetchOffsets(ctx, groupID)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", groupID, err)
	}
	var sum int64
	os.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.At > 0 {
			sum += o.At
		}
	})
	return sum
}

func createTopic(t *testing.T, adm *kadm.Client, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// churn runs three and more consumers in one group while records are
// produced and members join and leave; every record must be processed
// exactly once (commits on revoke leave no at-least-once window here).
func churn(t *testing.T, balancer func() kgo.GroupBalancer) {
	gc := startGroupCluster(t)
	bs := gc.Bootstrap()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	const topic, groupID = "events", "churn"
	createTopic(t, adm, topic, 6)
	p := &producer{t: t, cl: cl, topic: topic}
	l := newLedger()

	start := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	defer step("done")
	p.produce(500)
	a := startMember(t, bs, groupID, topic, balancer(), l)
	l.waitDistinct(t, 300)
	step("one member consumed")
	b := startMember(t, bs, groupID, topic, balancer(), l)
	p.produce(500)
	c := startMember(t, bs, groupID, topic, balancer(), l)
	groupMembers(t, adm, groupID, 3)
	l.waitDistinct(t, 800)
	step("three members")
	p.produce(500)
	l.waitDistinct(t, 1300)
	step("three members consumed")
	a.stop()
	p.produce(500)
	groupMembers(t, adm, groupID, 2)
	step("first member left")
	l.waitDistinct(t, 1800)
	step("two members consumed")
	d := startMember(t, bs, groupID, topic, balancer(), l)
	p.produce(500)
	groupMembers(t, adm, groupID, 3)
	l.waitDistinct(t, 2300)
	step("fourth member joined and consumed")
	b.stop()
	p.produce(500)
	l.waitDistinct(t, 3000)
	step("second member left; all consumed")
	c.stop()
	d.stop()

	l.mu.Lock()
	defer l.mu.Unlock()
	for id := 0; id < 3000; id++ {
		switch n := l.seen[id]; {
		case n == 0:
			t.Errorf("record %d never processed", id)
		case n > 1:
			t.Errorf("record %d processed %d times", id, n)
		}
	}
	if got := committedTotal(t, adm, groupID, topic); got != 3000 {
		t.Errorf("committed offsets add up to %d, want 3000", got)
	}
}

func TestIntegrationGroupEager(t *testing.T) {
	churn(t, func() kgo.GroupBalancer { return kgo.RangeBalancer() })
}

func TestIntegrationGroupCooperativeSticky(t *testing.T) {
	churn(t, func() kgo.GroupBalancer { return kgo.CooperativeStickyBalancer() })
}

// externalSetup produces count records "v-<i>" to a fresh topic.
func externalSetup(t *testing.T, topic string, count int) (*testcluster.Cluster, *kadm.Client) {
	t.Helper()
	gc := startGroupCluster(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(gc.Bootstrap()), kgo.ProducerBatchCompression(kgo.GzipCompression()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	createTopic(t, adm, topic, 3)
	recs := make([]*kgo.Record, count)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("v-%d", i))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), integrationTimeout)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return gc, adm
}

// runExternal runs a client program, failing (not skipping) when it is
// missing: `make test` installs them.
func runExternal(t *testing.T, name string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found: run make test, which installs it", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// checkConsumed checks that out holds each of the count values once.
func checkConsumed(t *testing.T, who, out string, count int) {
	t.Helper()
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		if seen[line] {
			t.Fatalf("%s printed %q twice", who, line)
		}
		seen[line] = true
	}
	for i := 0; i < count; i++ {
		if !seen[fmt.Sprintf("v-%d", i)] {
			t.Fatalf("%s did not print v-%d (printed %d values)", who, i, len(seen))
		}
	}
}

func TestIntegrationKcatBalancedConsumer(t *testing.T) {
	const count = 300
	gc, adm := externalSetup(t, "kcat-events", count)
	out := runExternal(t, "kcat", "-b", gc.Bootstrap(), "-G", "kcat-group", "-X", "auto.offset.reset=earliest",
		"-c", strconv.Itoa(count), "-f", "%s\n", "-q", "kcat-events")
	checkConsumed(t, "kcat -G", out, count)
	if got := committedTotal(t, adm, "kcat-group", "kcat-events"); got != count {
		t.Fatalf("kcat's group committed offsets adding up to %d, want %d", got, count)
	}
}

func TestIntegrationKafkaPythonGroup(t *testing.T) {
	const count = 300
	gc, adm := externalSetup(t, "py-events", count)
	script := `
import sys
from kafka import KafkaConsumer
bootstrap, topic, group, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset='earliest',
                  enable_auto_commit=False, consumer_timeout_ms=60000)
n = 0
for m in c:
    print(m.value.decode())
    n += 1
    if n == count:
        break
c.commit()
c.close()
if n != count:
    sys.exit('consumed %d of %d' % (n, count))
`
	out := runExternal(t, "/usr/bin/python3", "-c", script, gc.Bootstrap(), "py-events", "py-group", strconv.Itoa(count))
	checkConsumed(t, "kafka-python", out, count)
	if got := committedTotal(t, adm, "py-group", "py-events"); got != count {
		t.Fatalf("kafka-python's group committed offsets adding up to %d, want %d", got, count)
	}
}

func TestIntegrationKafkaJSGroup(t *testing.T) {
	const count = 300
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "test", "js", "consume.js")
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "kafkajs")); err != nil {
		t.Fatalf("kafkajs is not installed in test/js: run make test, which installs it")
	}
	gc, adm := externalSetup(t, "js-events", count)
	out := runExternal(t, "node", script, gc.Bootstrap(), "js-events", strconv.Itoa(count), "js-group", "60000")
	var values []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		i := strings.Index(line, `"value":"`)
		if i < 0 {
			t.Fatalf("kafkajs line %q", line)
		}
		v := line[i+len(`"value":"`):]
		values = append(values, v[:strings.IndexByte(v, '"')])
	}
	checkConsumed(t, "kafkajs", strings.Join(values, "\n"), count)
	// kafkajs commits what it consumed when it disconnects.
	if got := committedTotal(t, adm, "js-group", "js-events"); got != count {
		t.Fatalf("kafkajs's group committed offsets adding up to %d, want %d", got, count)
	}
}
