package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceRecords writes records with franz-go (not the CLI) and waits for
// every acknowledgement.
func produceRecords(t *testing.T, bs string, opts []kgo.Opt, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(bs, ",")...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func TestConsumeFromBeginning(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "c", "--partitions", "1", "--bootstrap-server", bs)
	produceRecords(t, bs, nil,
		&kgo.Record{Topic: "c", Key: []byte("k1"), Value: []byte("one")},
		&kgo.Record{Topic: "c", Value: []byte("two")},
		&kgo.Record{Topic: "c", Key: []byte("k3"), Value: []byte("three")})

	r := mustRun(t, "", "consume", "c", "--from-beginning", "--max-messages", "3", "--bootstrap-server", bs)
	if r.stdout != "one\ntwo\nthree\n" {
		t.Fatalf("values = %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "processed a total of 3 messages") {
		t.Fatalf("stderr = %q", r.stderr)
	}

	r = mustRun(t, "", "consume", "c", "--from-beginning", "--max-messages", "3", "--print-key",
		"--print-offset", "--print-partition", "--bootstrap-server", bs)
	want := "Partition:0\tOffset:0\tk1\tone\n" +
		"Partition:0\tOffset:1\tnull\ttwo\n" +
		"Partition:0\tOffset:2\tk3\tthree\n"
	if r.stdout != want {
		t.Fatalf("with key and offset:\n%q\nwant\n%q", r.stdout, want)
	}

	// --max-messages stops early even though more records exist.
	r = mustRun(t, "", "consume", "c", "--from-beginning", "--max-messages", "2", "--bootstrap-server", bs)
	if r.stdout != "one\ntwo\n" {
		t.Fatalf("--max-messages 2 printed %q", r.stdout)
	}
}

func TestConsumeJSON(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "j", "--partitions", "1", "--bootstrap-server", bs)
	ts := time.UnixMilli(1_700_000_000_123)
	produceRecords(t, bs, nil,
		&kgo.Record{Topic: "j", Key: []byte("k"), Value: []byte("line\twith\nbreaks"), Timestamp: ts,
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("hv")}}},
		&kgo.Record{Topic: "j", Key: []byte("tomb"), Value: nil, Timestamp: ts})

	r := mustRun(t, "", "consume", "j", "--from-beginning", "--max-messages", "2", "-o", "json", "--bootstrap-server", bs)
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one JSON object per line, got:\n%s", r.stdout)
	}
	first := decodeJSON[consumedRecord](t, lines[0])
	if first.Topic != "j" || first.Partition != 0 || first.Offset != 0 || *first.Key != "k" ||
		*first.Value != "line\twith\nbreaks" || !first.Timestamp.Equal(ts) ||
		len(first.Headers) != 1 || first.Headers[0] != (consumedHeader{"h", "hv"}) {
		t.Fatalf("first record = %+v", first)
	}
	second := decodeJSON[consumedRecord](t, lines[1])
	if second.Offset != 1 || second.Value != nil || *second.Key != "tomb" {
		t.Fatalf("tombstone = %+v, want a null value", second)
	}
}

func TestConsumePartitionAndOffset(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "po", "--partitions", "3", "--bootstrap-server", bs)
	var recs []*kgo.Record
	for p := range int32(3) {
		for i := range 5 {
			recs = append(recs, &kgo.Record{Topic: "po", Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, i))})
		}
	}
	produceRecords(t, bs, []kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner())}, recs...)

	r := mustRun(t, "", "consume", "po", "--partition", "1", "--offset", "2", "--max-messages", "3",
		"--print-offset", "--bootstrap-server", bs)
	if want := "Offset:2\tp1-2\nOffset:3\tp1-3\nOffset:4\tp1-4\n"; r.stdout != want {
		t.Fatalf("partition 1 from offset 2:\n%q\nwant\n%q", r.stdout, want)
	}
	r = mustRun(t, "", "consume", "po", "--partition", "2", "--offset", "earliest", "--max-messages", "5", "--bootstrap-server", bs)
	if want := "p2-0\np2-1\np2-2\np2-3\np2-4\n"; r.stdout != want {
		t.Fatalf("partition 2 from earliest = %q", r.stdout)
	}

	// All partitions: every record once, each partition in order.
	r = mustRun(t, "", "consume", "po", "--from-beginning", "--max-messages", "15", "--bootstrap-server", bs)
	byPartition := map[byte][]string{}
	for _, v := range strings.Fields(r.stdout) {
		byPartition[v[1]] = append(byPartition[v[1]], v)
	}
	for p := range 3 {
		var want []string
		for i := range 5 {
			want = append(want, fmt.Sprintf("p%d-%d", p, i))
		}
		if got := byPartition[byte('0'+p)]; !slices.Equal(got, want) {
			t.Fatalf("partition %d: %v, want %v", p, got, want)
		}
	}
}

// TestConsumeIdleTimeoutStops: --timeout ends a consumer that has had
// nothing new for that long. 3 s, not less: the clock also runs while the
// client connects and fetches its first record, which takes over 300 ms on a
// loaded machine under the race detector.
func TestConsumeIdleTimeoutStops(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "idle", "--partitions", "2", "--bootstrap-server", bs)
	produceRecords(t, bs, nil, &kgo.Record{Topic: "idle", Value: []byte("only")})
	start := time.Now()
	r := mustRun(t, "", "consume", "idle", "--from-beginning", "--timeout", "3s", "--bootstrap-server", bs)
	if r.stdout != "only\n" || !strings.Contains(r.stderr, "processed a total of 1 messages") {
		t.Fatalf("stdout %q stderr %q", r.stdout, r.stderr)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("idle consume took %s", d)
	}
}

func TestConsumeDefaultsToNewRecords(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "latest", "--partitions", "1", "--bootstrap-server", bs)
	produceRecords(t, bs, nil, &kgo.Record{Topic: "latest", Value: []byte("old")})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan cliResult, 1)
	go func() {
		done <- runCLIContext(t, ctx, strings.NewReader(""), "consume", "latest", "--max-messages", "1",
			"--bootstrap-server", bs)
	}()
	// The consumer positions itself at the log end at some point after it
	// starts; keep producing until it has seen one record. That record
	// must be a new one, never the old.
	deadline := time.After(30 * time.Second)
	for i := 0; ; i++ {
		produceRecords(t, bs, nil, &kgo.Record{Topic: "latest", Value: []byte(fmt.Sprintf("new-%d", i))})
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatal(r.err)
			}
			if !strings.HasPrefix(r.stdout, "new-") || strings.Count(r.stdout, "\n") != 1 {
				t.Fatalf("consumer without --from-beginning printed %q, want one new record", r.stdout)
			}
			return
		case <-deadline:
			t.Fatal("consumer saw no new record within 30s")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestConsumeReadCommitted(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "txn", "--partitions", "1", "--bootstrap-server", bs)
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.TransactionalID("cli-test"), kgo.DefaultProduceTopic("txn"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, commit := range []bool{false, true} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		v := "aborted"
		if commit {
			v = "committed"
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}

	r := mustRun(t, "", "consume", "txn", "--from-beginning", "--isolation", "read_committed",
		"--max-messages", "1", "--print-offset", "--bootstrap-server", bs)
	// Offsets: 0 aborted, 1 abort marker, 2 committed, 3 commit marker.
	if r.stdout != "Offset:2\tcommitted\n" {
		t.Fatalf("read_committed printed %q", r.stdout)
	}
	r = mustRun(t, "", "consume", "txn", "--from-beginning", "--isolation", "read_uncommitted",
		"--max-messages", "2", "--bootstrap-server", bs)
	if r.stdout != "aborted\ncommitted\n" {
		t.Fatalf("read_uncommitted printed %q", r.stdout)
	}
}

func TestConsumeRejectsBadInput(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "three", "--partitions", "3", "--bootstrap-server", bs)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"missing"}, "UNKNOWN_TOPIC_OR_PARTITION"},
		{[]string{"three", "--partition", "7"}, "partition 7 does not exist (the topic has 3)"},
		{[]string{"three", "--offset", "4"}, "--offset needs --partition"},
		{[]string{"three", "--offset", "4", "--partition", "0", "--from-beginning"}, "cannot be used together"},
		{[]string{"three", "--offset", "-4", "--partition", "0"}, `invalid --offset "-4"`},
		{[]string{"three", "--isolation", "dirty"}, `invalid --isolation "dirty"`},
		{[]string{"three", "--max-messages", "-1"}, "invalid --max-messages -1"},
	} {
		args := append([]string{"consume", "--bootstrap-server", bs, "--timeout", "1s"}, tc.args...)
		if f := mustFail(t, "", args...); !strings.Contains(f.err.Error(), tc.want) {
			t.Errorf("%v: error = %v, want %q", tc.args, f.err, tc.want)
		}
	}
}

// The JSON lines must stay parseable one at a time by a streaming reader.
func TestConsumeJSONLinesStream(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "s", "--partitions", "1", "--bootstrap-server", bs)
	var recs []*kgo.Record
	for i := range 50 {
		recs = append(recs, &kgo.Record{Topic: "s", Value: []byte(fmt.Sprintf(`{"n":%d}`, i))})
	}
	produceRecords(t, bs, nil, recs...)
	r := mustRun(t, "", "consume", "s", "--from-beginning", "--max-messages", "50", "-o", "json", "--bootstrap-server", bs)
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	n := 0
	for sc.Scan() {
		rec := decodeJSON[consumedRecord](t, sc.Text())
		if *rec.Value != fmt.Sprintf(`{"n":%d}`, n) || rec.Offset != int64(n) {
			t.Fatalf("line %d = %+v", n, rec)
		}
		n++
	}
	if n != 50 {
		t.Fatalf("%d JSON lines, want 50", n)
	}
}

// TestConsumeStopsWhenCancelled checks the Ctrl-C path: cancelling the
// command's context (what SIGINT does) ends an unbounded consume cleanly,
// with what it printed so far and the summary.
func TestConsumeStopsWhenCancelled(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "ctrlc", "--partitions", "1", "--bootstrap-server", bs)
	produceRecords(t, bs, nil, &kgo.Record{Topic: "ctrlc", Value: []byte("first")})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	var errOut strings.Builder
	done := make(chan error, 1)
	go func() {
		root := &cobra.Command{Use: "kmirror", SilenceUsage: true, SilenceErrors: true}
		root.AddCommand(newConsumeCommand())
		root.SetArgs([]string{"consume", "ctrlc", "--from-beginning", "--bootstrap-server", bs})
		root.SetIn(strings.NewReader(""))
		root.SetOut(pw)
		root.SetErr(&errOut)
		err := root.ExecuteContext(ctx)
		pw.Close()
		done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("consume ended with %v, want a clean stop", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("consume did not stop after cancellation")
	}
	if !strings.Contains(errOut.String(), "processed a total of 1 messages") {
		t.Fatalf("stderr = %q", errOut.String())
	}
}
