package server_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestCleanRestartKeepsEveryRecord: records acknowledged before a clean
// restart are all there after it, and producing continues after them.
func TestCleanRestartKeepsEveryRecord(t *testing.T) {
	c := testcluster.Start(t)
	const topic, partitions, before, after = "restart", 4, 500, 100
	createTopic(t, c.Admin(t), topic, partitions, nil)
	produceSeqs(t, c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, partitions, 0, before)

	c.Node(1).Restart()

	produceSeqs(t, c.Client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner())), topic, partitions, before, before+after)
	got := consumeExactly(t, c.Client(t), topic, partitions, before+after)
	for p := int32(0); p < partitions; p++ {
		for i, r := range got[p] {
			if r.Offset != int64(i) || string(r.Value) != value(topic, p, i) {
				t.Fatalf("partition %d record %d: offset %d %q", p, i, r.Offset, r.Value)
			}
		}
	}
}

// produceSeqs produces records from to until-1 to every partition and waits
// for all of them to be acknowledged.
func produceSeqs(t testing.TB, cl *kgo.Client, topic string, partitions int32, from, until int) {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	var rs []*kgo.Record
	for seq := from; seq < until; seq++ {
		for p := int32(0); p < partitions; p++ {
			rs = append(rs, &kgo.Record{Partition: p, Value: []byte(value(topic, p, seq))})
		}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// TestKill9LosesNoAcknowledgedRecord runs the real binary with
// log.flush.interval.messages=1, kills it with SIGKILL while a producer
// writes with acks=-1, restarts it, and checks that every acknowledged
// record survived the crash exactly once. KMIRROR_LONG=1 runs more rounds.
func TestKill9LosesNoAcknowledgedRecord(t *testing.T) {
	bin := testcluster.BuildBinary(t)
	dir := t.TempDir()
	port, cport := testcluster.FreePort(t), testcluster.FreePort(t)
	props := testcluster.SingleNodeProperties(dir, port, cport)
	props["log.flush.interval.messages"] = "1"
	// A restarted node registers with a new incarnation; the controller
	// accepts it once the old session has expired.
	props["broker.session.timeout.ms"] = "1000"
	props["broker.heartbeat.interval.ms"] = "100"
	file := testcluster.WriteProperties(t, dir, props)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	start := func() *testcluster.Process {
		return testcluster.StartProcess(t, bin, addr, "server", "--config", file, "--log-level", "warn")
	}

	const topic, partitions = "crash", 3
	proc := start()
	seed := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	createTopic(t, newAdmin(seed()), topic, partitions, nil)

	rounds := 1
	if os.Getenv("KMIRROR_LONG") != "" {
		rounds = 5
	}
	var mu sync.Mutex // guards acked and next against the producer callbacks
	acked := map[string]bool{}
	next := 0
	for round := range rounds {
		// Produce until enough records are acknowledged, then kill the
		// broker with requests still in flight.
		producer := seed(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(0), kgo.ProduceRequestTimeout(5*time.Second))
		ackedThisRound := 0
		enough := make(chan struct{})  // closed at the 300th acknowledgement
		killNow := make(chan struct{}) // closed a random number of records later
		var closeOnce sync.Once
		extra := 1 + rand.IntN(40) // records still in flight at the kill
		stop := make(chan struct{})
		done := make(chan struct{})
		mu.Lock()
		first := next
		mu.Unlock()
		// Killing the broker also ends this context, so that nothing waits
		// for the dead broker.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		go func() {
			defer close(done)
			for seq := first; ; seq++ {
				select {
				case <-stop:
					return
				case <-enough:
					if extra--; extra == 0 {
						close(killNow)
					}
				default:
				}
				p := int32(seq % partitions)
				v := value(topic, p, seq)
				producer.Produce(ctx, &kgo.Record{Partition: p, Value: []byte(v)}, func(_ *kgo.Record, err error) {
					if err != nil {
						return
					}
					mu.Lock()
					acked[v] = true
					ackedThisRound++
					if ackedThisRound >= 300 {
						closeOnce.Do(func() { close(enough) })
					}
					mu.Unlock()
				})
				if seq%50 == 0 && extra > 0 {
					// Let acknowledgements arrive while records are in
					// flight, rather than queueing everything at once.
					_ = producer.Flush(ctx)
				}
				mu.Lock()
				next = seq + 1
				mu.Unlock()
			}
		}()
		select {
		case <-killNow:
		case <-time.After(time.Minute):
			t.Fatalf("round %d: fewer than 300 records acknowledged in a minute", round)
		}
		proc.Kill()
		cancel()
		close(stop)
		<-done
		producer.Close() // fails what was in flight; those records were never acknowledged
		mu.Lock()
		t.Logf("round %d: killed with %d records acknowledged in total", round, len(acked))
		mu.Unlock()
		proc = start()
	}

	// Every acknowledged record is present exactly once.
	cl := seed()
	ends, err := newAdmin(cl).ListEndOffsets(testCtx(t, 30*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	offsets := map[int32]kgo.Offset{}
	want := 0
	for p := int32(0); p < partitions; p++ {
		o, _ := ends.Lookup(topic, p)
		offsets[p] = kgo.NewOffset().AtStart()
		want += int(o.Offset)
	}
	consumer := seed(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}))
	ctx := testCtx(t, time.Minute)
	for n := 0; n < want; {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", n, want)
		}
		fs.EachRecord(func(r *kgo.Record) {
			seen[string(r.Value)]++
			n++
		})
	}
	mu.Lock()
	defer mu.Unlock()
	for v := range acked {
		switch seen[v] {
		case 1:
		case 0:
			t.Errorf("acknowledged record %s lost", v)
		default:
			t.Errorf("acknowledged record %s present %d times", v, seen[v])
		}
	}
	t.Logf("%d acknowledged records, %d records in the log", len(acked), want)
}
