package javaclients

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStreamsExactlyOnce runs WordCount, Kafka Streams 4.4 with
// exactly_once_v2 (words regrouped through a repartition topic, counted
// into a changelog-backed store, every new count sent to the output),
// against three kmirror nodes while Go writes lines of words. It kills the
// leader of an input partition with SIGKILL while Streams counts and
// restarts it; then it kills Streams itself and starts a second instance,
// which restores the counts from the changelog while the first one's open
// transactions wait to be aborted. The counts in the output's committed
// transactions (computed here from the markers) go 1, 2, 3, ... for every
// word up to the number of times the input holds it: no word counted
// twice, none lost. Streams' internal topics have the configs it created
// them with, and it purged (DeleteRecords) the repartition records it had
// processed.
func TestStreamsExactlyOnce(t *testing.T) {
	c := startCluster(t)
	const in, out, parts, app = "lines", "word-counts", 3, "wordcount"
	c.createTopic(in, parts)
	c.createTopic(out, parts)

	stateDir := t.TempDir()
	prog := startJava(t, "io.kmirror.test.WordCount", c.bootstrap(), app, in, out, stateDir)
	prog.waitUntil("Streams running", func() (bool, string) {
		return contains(prog.snapshot(), "STATE RUNNING"), prog.tail(1)
	})

	feed := newInput(t, c, in)
	counted := c.watchCounts(out)
	feed.produce(1500)
	progress := func(what string, n int64) {
		t.Helper()
		from := counted.total()
		prog.waitUntil(what, func() (bool, string) {
			got := counted.total() - from
			return got >= n, fmt.Sprintf("%d counts so far", got)
		})
	}
	progress("the first counts", 500)

	// The kill comes right after more lines, while Streams counts them.
	victim := c.node(c.waitPartition(in, 0, "a leader", func(s partState) bool { return s.Leader > 0 }).Leader)
	feed.produce(300)
	victim.kill()
	c.waitPartition(in, 0, "a new leader", func(s partState) bool { return s.Leader > 0 && s.Leader != victim.id })
	feed.produce(1500)
	progress("counts with two nodes", 500)
	victim.start()
	for _, topic := range []string{in, out, app + "-words-repartition", app + "-counts-changelog"} {
		c.waitFullISR(topic, parts)
	}

	// A second instance takes over from a killed one: it restores the
	// counts from the changelog, and the killed one's open transactions
	// are aborted when they time out. The kill comes while Streams counts
	// what Go keeps writing, once a transaction of it is open.
	adm := c.admin()
	ctx := context.Background()
	var open []string
	prog.waitUntil("a transaction of Streams open", func() (bool, string) {
		feed.produce(100)
		open = open[:0]
		lt, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
		if err != nil {
			return false, err.Error()
		}
		for id := range lt {
			if strings.HasPrefix(id, app+"-") {
				open = append(open, id)
			}
		}
		return len(open) > 0, "none"
	})
	prog.kill()
	// What the kill left open (a commit may have slipped in between).
	left := c.transactionStates(open...)
	maps.DeleteFunc(left, func(_, state string) bool { return state != "Ongoing" })
	t.Logf("WordCount killed with transactions %v open", slices.Sorted(maps.Keys(left)))
	prog = startJava(t, "io.kmirror.test.WordCount", c.bootstrap(), app, in, out, stateDir)
	feed.produce(1500)

	want := feed.counts
	prog.waitUntil("the output's counts to reach the input's", func() (bool, string) {
		got := counted.latest()
		for w, n := range got {
			if n > want[w] {
				t.Fatalf("%s counted %d times, %d in the input", w, n, want[w])
			}
		}
		for w, n := range want {
			if got[w] != n {
				return false, fmt.Sprintf("%s counted %d times of %d (%d words)", w, got[w], n, len(want))
			}
		}
		return true, ""
	})
	prog.closeInput()
	prog.waitCount("DONE", 1)
	prog.waitExit()

	// After the close no transaction is open: every count is in the
	// output, in the order Streams counted.
	log := c.readTxnLog(out, parts)
	if log.open != 0 {
		t.Errorf("%d output records in open transactions after Streams closed", log.open)
	}
	e := &reporter{t: t, what: "output"}
	defer e.done()
	seq := map[string]int64{}
	for p, rs := range log.committed {
		for _, r := range rs {
			w := string(r.Key)
			if len(r.Value) != 8 {
				e.errorf("%s at %d/%d: value %x is not a long", w, p, r.Offset, r.Value)
				continue
			}
			if n := int64(binary.BigEndian.Uint64(r.Value)); n != seq[w]+1 {
				e.errorf("%s at %d/%d: count %d after %d", w, p, r.Offset, n, seq[w])
			}
			seq[w]++
		}
	}
	for w, n := range want {
		if seq[w] != n {
			e.errorf("%s: %d counts, the input holds it %d times", w, seq[w], n)
		}
	}
	if len(seq) != len(want) {
		e.errorf("%d words counted, the input has %d", len(seq), len(want))
	}
	checkInternalTopics(t, c, app)
	// The transactions the kill left open were aborted at their timeout.
	waitFor(t, "the killed instance's transactions aborted", func() (bool, string) {
		states := c.transactionStates(slices.Collect(maps.Keys(left))...)
		for _, state := range states {
			if state != "CompleteAbort" {
				return false, fmt.Sprint(states)
			}
		}
		return true, ""
	})
	t.Logf("%d lines, %d words counted in %d updates; %d output records of aborted transactions skipped; %d stream thread errors",
		feed.lines, len(want), counted.total(), log.aborted, prog.count("ERROR"))
}

func contains(lines []string, line string) bool {
	for _, l := range lines {
		if l == line {
			return true
		}
	}
	return false
}

// input writes lines of words to a topic with an idempotent acks=all
// producer and counts the words it wrote.
type input struct {
	t      *testing.T
	topic  string
	cl     *kgo.Client
	rng    *rand.Rand
	lines  int
	counts map[string]int64
}

func newInput(t *testing.T, c *procCluster, topic string) *input {
	return &input{t: t, topic: topic, cl: c.client(), rng: rand.New(rand.NewPCG(14, 3)), counts: map[string]int64{}}
}

// vocabulary is the words of the lines: some are common, most rare.
var vocabulary = strings.Fields(`the of and a to in is you that it he was for on are as with his they
at be this have from or one had by word but not what all were we when your can said there use an each
which she do how their if will up other about out many then them these so some her would make like him
into time has look two more write go see number no way could people my than first water been call who`)

// produce writes n lines and returns once every one is acknowledged.
func (in *input) produce(n int) {
	in.t.Helper()
	recs := make([]*kgo.Record, 0, n)
	for range n {
		words := make([]string, 1+in.rng.IntN(6))
		for i := range words {
			// The square skews the choice towards the first words.
			f := in.rng.Float64()
			words[i] = vocabulary[int(f*f*float64(len(vocabulary)))]
			in.counts[words[i]]++
		}
		recs = append(recs, &kgo.Record{Topic: in.topic, Key: fmt.Appendf(nil, "line-%d", in.lines), Value: []byte(strings.Join(words, " "))})
		in.lines++
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := in.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		in.t.Fatalf("produce to %s: %v", in.topic, err)
	}
}

// countWatch follows the output topic with a READ_COMMITTED consumer and
// keeps each word's latest count.
type countWatch struct {
	mu      sync.Mutex
	counts  map[string]int64
	updates int64
}

// watchCounts starts a countWatch on topic, stopped when the test ends.
func (c *procCluster) watchCounts(topic string) *countWatch {
	c.t.Helper()
	w := &countWatch{counts: map[string]int64{}}
	cl := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			w.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				if len(r.Value) == 8 {
					w.counts[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value))
					w.updates++
				}
			})
			w.mu.Unlock()
		}
	}()
	c.t.Cleanup(func() {
		cancel()
		<-done
	})
	return w
}

// total returns how many counts the watch has seen.
func (w *countWatch) total() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.updates
}

// latest returns each word's latest count.
func (w *countWatch) latest() map[string]int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int64, len(w.counts))
	for k, v := range w.counts {
		out[k] = v
	}
	return out
}

// checkInternalTopics checks the topics Streams created with CreateTopics
// (their configs) and that it deleted the repartition records it had
// processed (DeleteRecords).
func checkInternalTopics(t *testing.T, c *procCluster, app string) {
	t.Helper()
	ctx := context.Background()
	adm := c.admin()
	repartition, changelog := app+"-words-repartition", app+"-counts-changelog"
	want := map[string]map[string]string{
		repartition: {"cleanup.policy": "delete", "retention.ms": "-1", "message.timestamp.type": "CreateTime"},
		changelog:   {"cleanup.policy": "compact", "message.timestamp.type": "CreateTime"},
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, repartition, changelog)
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Errorf("%s: %v", rc.Name, rc.Err)
			continue
		}
		for key, value := range want[rc.Name] {
			var got string
			for _, cf := range rc.Configs {
				if cf.Key == key && cf.Source == kmsg.ConfigSourceDynamicTopicConfig {
					got = cf.MaybeValue()
				}
			}
			if got != value {
				t.Errorf("%s: %s=%q set on the topic, Streams asks for %q", rc.Name, key, got, value)
			}
		}
	}
	starts, err := adm.ListStartOffsets(ctx, repartition)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		t.Fatalf("list start offsets of %s: %v", repartition, err)
	}
	starts.Each(func(o kadm.ListedOffset) {
		if o.Offset <= 0 {
			t.Errorf("%s-%d starts at %d: Streams purges what it processed", o.Topic, o.Partition, o.Offset)
		}
	})
}

// transactionStates returns the state of each transaction of ids.
func (c *procCluster) transactionStates(ids ...string) map[string]string {
	c.t.Helper()
	out := map[string]string{}
	if len(ids) == 0 {
		return out
	}
	adm := c.admin()
	waitFor(c.t, fmt.Sprintf("the states of transactions %v", ids), func() (bool, string) {
		dt, err := adm.DescribeTransactions(context.Background(), ids...)
		if err != nil {
			return false, err.Error()
		}
		for id, d := range dt {
			if d.Err != nil {
				return false, fmt.Sprintf("%s: %v", id, d.Err)
			}
			out[id] = d.State
		}
		return true, ""
	})
	return out
}
