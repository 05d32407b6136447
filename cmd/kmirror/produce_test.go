package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/twmb/franz-go/pkg/kgo"
)

// readAll reads every record of topic with franz-go (not the CLI), so that the
// produce tests do not depend on the consume command being right.
func readAll(t *testing.T, bs, topic string, want int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bs, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %s: got %d of %d records before the deadline", topic, len(recs), want)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch error: %v", err) })
		recs = append(recs, fs.Records()...)
	}
	if len(recs) != want {
		t.Fatalf("read %d records from %s, want exactly %d", len(recs), topic, want)
	}
	return recs
}

func TestProduceLinesWithKeys(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "kv", "--partitions", "3", "--bootstrap-server", bs)

	var in strings.Builder
	for i := range 30 {
		fmt.Fprintf(&in, "key-%d:value %d: with a colon\r\n", i, i)
	}
	in.WriteString(":empty key, no trailing newline")
	r := mustRun(t, in.String(), "produce", "kv", "--key-separator", ":", "--bootstrap-server", bs)
	if !strings.Contains(r.stderr, "produced 31 records to 3 partitions of topic kv") {
		t.Fatalf("summary on stderr = %q", r.stderr)
	}
	if r.stdout != "" {
		t.Fatalf("produce wrote to stdout: %q", r.stdout)
	}

	got := map[string]string{}
	partitionOf := map[string]int32{}
	for _, rec := range readAll(t, bs, "kv", 31) {
		got[string(rec.Key)] = string(rec.Value)
		partitionOf[string(rec.Key)] = rec.Partition
	}
	for i := range 30 {
		k := fmt.Sprintf("key-%d", i)
		if want := fmt.Sprintf("value %d: with a colon", i); got[k] != want {
			t.Fatalf("record %s = %q, want %q (split at the first separator, CRLF trimmed)", k, got[k], want)
		}
		// Keyed records go where Kafka's default partitioner puts them, so
		// that other clients agree on a key's partition.
		if want := int32(kgo.StickyKeyPartitioner(nil).ForTopic("kv").Partition(&kgo.Record{Key: []byte(k)}, 3)); partitionOf[k] != want {
			t.Fatalf("key %s went to partition %d, want %d", k, partitionOf[k], want)
		}
	}
	if got[""] != "empty key, no trailing newline" {
		t.Fatalf("last line = %q", got[""])
	}
}

func TestProduceEveryCompressionAndAcks(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "codecs", "--partitions", "1", "--bootstrap-server", bs)
	var want []string
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		for _, acks := range []string{"all", "1", "0"} {
			lines := []string{codec + "/" + acks + "/a", codec + "/" + acks + "/" + strings.Repeat("b", 2000)}
			r := mustRun(t, strings.Join(lines, "\n")+"\n", "produce", "codecs", "--compression", codec,
				"--acks", acks, "-o", "json", "--bootstrap-server", bs)
			sum := decodeJSON[produceSummary](t, r.stderr)
			if sum.Records != 2 || sum.Failed != 0 || sum.Partitions["0"] != 2 {
				t.Fatalf("%s acks=%s: summary %+v", codec, acks, sum)
			}
			want = append(want, lines...)
		}
	}
	var got []string
	for _, rec := range readAll(t, bs, "codecs", len(want)) {
		got = append(got, string(rec.Value))
	}
	// Each command's records are in order, but a command with acks=0 ends
	// before the broker appended its request, which a later command's
	// (on another connection) may overtake: compare as sets.
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read back %q\nwant %q", got, want)
	}
}

func TestProduceToOnePartition(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "p", "--partitions", "4", "--bootstrap-server", bs)
	mustRun(t, "a\nb\nc\n", "produce", "p", "--partition", "2", "--bootstrap-server", bs)
	for i, rec := range readAll(t, bs, "p", 3) {
		if rec.Partition != 2 || rec.Offset != int64(i) || string(rec.Value) != string(rune('a'+i)) {
			t.Fatalf("record %d = partition %d offset %d %q", i, rec.Partition, rec.Offset, rec.Value)
		}
	}

	f := mustFail(t, "x\n", "produce", "p", "--partition", "9", "--bootstrap-server", bs)
	if !strings.Contains(f.err.Error(), "1 records failed") {
		t.Fatalf("produce to a missing partition: %v", f.err)
	}
}

func TestProduceRejectsBadInput(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "bad", "--partitions", "1", "--bootstrap-server", bs)

	// A line without the separator stops the command; the lines before it
	// were produced and are counted.
	r := mustFail(t, "k:v\nnoseparator\nk:w\n", "produce", "bad", "--key-separator", ":", "--bootstrap-server", bs)
	if !strings.Contains(r.err.Error(), `line 2: no key separator ":"`) {
		t.Fatalf("error = %v", r.err)
	}
	if !strings.Contains(r.stderr, "produced 1 records") {
		t.Fatalf("summary = %q", r.stderr)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--acks", "2"}, `invalid --acks "2"`},
		{[]string{"--compression", "brotli"}, `invalid --compression "brotli"`},
		{[]string{"--partition", "-2"}, "invalid --partition -2"},
	} {
		args := append([]string{"produce", "bad", "--bootstrap-server", bs}, tc.args...)
		if f := mustFail(t, "x\n", args...); !strings.Contains(f.err.Error(), tc.want) {
			t.Errorf("%v: error = %v, want %q", tc.args, f.err, tc.want)
		}
	}
}

func TestTrimEOL(t *testing.T) {
	for in, want := range map[string]string{"a\n": "a", "a\r\n": "a", "a": "a", "\n": "", "a\r": "a\r", "": ""} {
		if got := string(trimEOL([]byte(in))); got != want {
			t.Errorf("trimEOL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestProduceToMissingTopicFails(t *testing.T) {
	bs := startNode(t, testcluster.Config("auto.create.topics.enable", "false"))
	f := mustFail(t, "x\n", "produce", "missing", "--bootstrap-server", bs)
	if !strings.Contains(f.err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") || !strings.Contains(f.err.Error(), "missing") {
		t.Fatalf("error = %v", f.err)
	}
	if !strings.Contains(f.stderr, "produced 0 records") {
		t.Fatalf("summary = %q", f.stderr)
	}
}

// With Kafka's default auto.create.topics.enable=true, producing to a new
// topic creates it, as with Kafka's console producer.
func TestProduceAutoCreatesTopic(t *testing.T) {
	bs := startNode(t)
	r := mustRun(t, "a\nb\n", "produce", "fresh", "--bootstrap-server", bs)
	if !strings.Contains(r.stderr, "produced 2 records") {
		t.Fatalf("summary = %q", r.stderr)
	}
	var got []string
	for _, rec := range readAll(t, bs, "fresh", 2) {
		got = append(got, string(rec.Value))
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("read back %q", got)
	}
}
