package main

import (
	"bufio"
	"context"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// quickMirrorNode starts a destination node whose mirror fetchers and
// internal topics suit a small test.
func quickMirrorNode(t *testing.T) string {
	t.Helper()
	return startNode(t,
		testcluster.Config("offsets.topic.replication.factor", "1"),
		testcluster.Config("offsets.topic.num.partitions", "3"),
		testcluster.Config("mirror.state.topic.num.partitions", "3"),
		testcluster.Config("mirror.state.topic.replication.factor", "1"),
		testcluster.Config("replica.fetch.wait.max.ms", "100"),
		testcluster.Config("replica.fetch.backoff.ms", "100"),
		testcluster.Config("mirror.metadata.refresh.interval.ms", "1000"),
	)
}

// produceN writes n records to topic on the cluster at addr and waits for
// their acknowledgements.
func produceN(t *testing.T, addr, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(addr, ",")...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: []byte("v" + strconv.Itoa(i))}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// parsedFrame is a live table frame as the test reads it back.
type parsedFrame struct {
	text    string
	states  []string
	logEnd  int64 // sum over the partitions
	rates   []string
	summary string
}

// frameCollector reads the frames `describe --watch` writes (not on a
// terminal: one after the other) as they arrive.
type frameCollector struct {
	mu     sync.Mutex
	frames []parsedFrame
	more   chan struct{} // signalled after each frame
}

func collectFrames(r io.Reader) *frameCollector {
	c := &frameCollector{more: make(chan struct{}, 1)}
	go func() {
		sc := bufio.NewScanner(r)
		var cur []string
		flush := func() {
			if len(cur) == 0 {
				return
			}
			c.add(parseFrame(cur))
			cur = nil
		}
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "Mirror ") && len(cur) > 0 {
				flush()
			}
			cur = append(cur, line)
			if strings.Contains(line, "partitions mirroring") || strings.HasPrefix(line, "no partition") {
				flush()
			}
		}
		flush()
	}()
	return c
}

func parseFrame(lines []string) parsedFrame {
	f := parsedFrame{text: strings.Join(lines, "\n")}
	inTable := false
	for _, l := range lines {
		fields := strings.Fields(l)
		switch {
		case len(fields) > 0 && fields[0] == "TOPIC":
			inTable = true
		case len(fields) == 0:
			inTable = false
		case inTable && len(fields) >= 9:
			f.states = append(f.states, fields[2])
			if v, err := strconv.ParseInt(fields[5], 10, 64); err == nil {
				f.logEnd += v
			}
			f.rates = append(f.rates, fields[7])
		case strings.Contains(l, "partitions mirroring"):
			f.summary = l
		}
	}
	return f
}

func (c *frameCollector) add(f parsedFrame) {
	c.mu.Lock()
	c.frames = append(c.frames, f)
	c.mu.Unlock()
	select {
	case c.more <- struct{}{}:
	default:
	}
}

// waitFrame returns the first frame from index from on that satisfies ok,
// and its index.
func (c *frameCollector) waitFrame(t *testing.T, from int, what string, ok func(parsedFrame) bool) (parsedFrame, int) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		c.mu.Lock()
		frames := c.frames
		c.mu.Unlock()
		for i := from; i < len(frames); i++ {
			if ok(frames[i]) {
				return frames[i], i
			}
		}
		select {
		case <-c.more:
		case <-deadline:
			last := "(none)"
			if len(frames) > 0 {
				last = frames[len(frames)-1].text
			}
			t.Fatalf("no frame %s within a minute; last frame:\n%s", what, last)
		}
	}
}

func allStates(f parsedFrame, state string, n int) bool {
	if len(f.states) != n {
		return false
	}
	for _, s := range f.states {
		if s != state {
			return false
		}
	}
	return true
}

// TestMirrorWatchWaitAndProgress runs the live commands against a node
// mirroring a kfake source: add-topics --wait, wait --max-lag 0, a
// describe --watch whose captured frames follow a pause, records produced
// meanwhile and the resume (state, log end and rate change from frame to
// frame), and remove-topics --wait until STOPPED.
func TestMirrorWatchWaitAndProgress(t *testing.T) {
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	srcAddr := strings.Join(src.ListenAddrs(), ",")
	dst := quickMirrorNode(t)
	produceN(t, srcAddr, "orders", 100)
	run := func(args ...string) cliResult {
		t.Helper()
		r := runMirrorCLI(t, append([]string{"--bootstrap-server", dst, "--timeout", "60s"}, args...)...)
		if r.err != nil {
			t.Fatalf("kmirror mirror %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
		}
		return r
	}

	run("create", "east", "--source-bootstrap", srcAddr)
	r := run("add-topics", "east", "orders", "--wait", "--interval", "100ms")
	if !rowHas(r.stdout, "orders", "added") || !strings.Contains(r.stderr, "waiting for east: 2/2 partitions MIRRORING") {
		t.Fatalf("add-topics --wait:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	r = run("wait", "east", "--max-lag", "0", "--interval", "100ms")
	if !strings.HasPrefix(r.stdout, "mirror east caught up: 2/2 partitions mirroring, max lag 0 records, 0.0 s behind") ||
		!strings.Contains(r.stderr, "waiting for east: ") {
		t.Fatalf("wait:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}

	// The live table, captured.
	root := &cobra.Command{Use: "kmirror", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newMirrorCommand())
	root.SetArgs([]string{"mirror", "--bootstrap-server", dst, "describe", "east", "--watch", "--interval", "100ms"})
	pr, pw := io.Pipe()
	root.SetOut(pw)
	root.SetErr(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- root.ExecuteContext(ctx)
		pw.Close()
	}()
	frames := collectFrames(pr)
	var stopOnce sync.Once
	stopWatch := func() {
		stopOnce.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("describe --watch ended with %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("describe --watch did not stop")
			}
		})
	}
	defer stopWatch()

	f1, i1 := frames.waitFrame(t, 0, "with 100 records mirrored", func(f parsedFrame) bool {
		return allStates(f, "MIRRORING", 2) && f.logEnd == 100
	})
	if !strings.HasPrefix(f1.summary, "2/2 partitions mirroring, max lag 0 records") {
		t.Fatalf("summary of a caught-up mirror: %q", f1.summary)
	}
	run("pause-topics", "east", "orders", "--wait", "--interval", "100ms")
	_, i2 := frames.waitFrame(t, i1, "with the partitions PAUSED", func(f parsedFrame) bool { return allStates(f, "PAUSED", 2) })
	produceN(t, srcAddr, "orders", 50)
	// Paused, the mirror's own lag is that of its last fetch (0); measured
	// against the source's end offsets it counts the 50 new records.
	r = runMirrorCLI(t, "--bootstrap-server", dst, "--timeout", "1s", "wait", "east", "--source-bootstrap", srcAddr, "--interval", "100ms")
	if r.err == nil || !strings.Contains(r.err.Error(), "(2 PAUSED)") || strings.Contains(r.err.Error(), "max lag 0 records") ||
		!strings.Contains(r.err.Error(), "max lag ") {
		t.Fatalf("wait --source-bootstrap on a paused mirror: %v", r.err)
	}
	run("resume-topics", "east", "orders")
	f3, i3 := frames.waitFrame(t, i2, "with 150 records mirrored after the resume", func(f parsedFrame) bool {
		return allStates(f, "MIRRORING", 2) && f.logEnd == 150
	})
	// The frames between the pause and the catch-up show the change: the
	// frame before the catch-up held fewer records, and the catch-up frame
	// measured a rate.
	frames.mu.Lock()
	before := frames.frames[i3-1]
	frames.mu.Unlock()
	if before.logEnd >= 150 || before.text == f3.text {
		t.Fatalf("the frame before the catch-up did not differ:\n%s\n---\n%s", before.text, f3.text)
	}
	moving := false
	for _, r := range f3.rates {
		if r != "-" && r != "0" {
			moving = true
		}
	}
	if !moving {
		t.Fatalf("no partition shows a rate in the catch-up frame:\n%s", f3.text)
	}
	stopWatch()

	r = run("remove-topics", "east", "orders", "--wait", "--interval", "100ms")
	if !rowHas(r.stdout, "orders", "removed") || !strings.Contains(r.stderr, "waiting for east: 2/2 partitions STOPPED") {
		t.Fatalf("remove-topics --wait:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
}

// TestMirrorWaitGivesUp checks that wait stops at --timeout and says what
// was missing, and that describe --watch of an unknown mirror fails at
// once instead of refreshing an error forever.
func TestMirrorWaitGivesUp(t *testing.T) {
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := quickMirrorNode(t)
	if r := runMirrorCLI(t, "--bootstrap-server", dst, "create", "east", "--source-bootstrap", strings.Join(src.ListenAddrs(), ",")); r.err != nil {
		t.Fatal(r.err)
	}
	r := runMirrorCLI(t, "--bootstrap-server", dst, "--timeout", "1s", "wait", "east", "orders", "--interval", "100ms")
	if r.err == nil || !strings.Contains(r.err.Error(), "mirror east did not reach a lag of at most 0: gave up after") ||
		!strings.Contains(r.err.Error(), "no partition status yet (1 topic)") {
		t.Fatalf("wait for a topic not in the mirror: %v\nstderr:\n%s", r.err, r.stderr)
	}
	r = runMirrorCLI(t, "--bootstrap-server", dst, "describe", "nope", "--watch", "--interval", "100ms")
	if r.err == nil || !strings.Contains(r.err.Error(), `"nope"`) {
		t.Fatalf("watch of an unknown mirror: %v\nstdout:\n%s", r.err, r.stdout)
	}
	if strings.Contains(r.stdout, "Mirror nope at") {
		t.Fatalf("a frame was drawn for an unknown mirror:\n%s", r.stdout)
	}
}
