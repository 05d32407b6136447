package clients

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kcatMetadata is the part of `kcat -L -J` output the test checks.
type kcatMetadata struct {
	Brokers []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string `json:"topic"`
		Partitions []struct {
			Partition int32                `json:"partition"`
			Leader    int32                `json:"leader"`
			Replicas  []struct{ ID int32 } `json:"replicas"`
		} `json:"partitions"`
	} `json:"topics"`
}

func TestKcatMetadata(t *testing.T) {
	kcat := requireTool(t, "kcat")
	bs := startBroker(t)
	createTopic(t, bs, "meta", 3)

	var md kcatMetadata
	out := runTool(t, "", kcat, "-b", bs, "-L", "-J")
	if err := json.Unmarshal([]byte(out), &md); err != nil {
		t.Fatalf("kcat -L -J output is not JSON: %v\n%s", err, out)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].Name != bs {
		t.Fatalf("kcat lists brokers %+v, want the one at %s", md.Brokers, bs)
	}
	var found bool
	for _, tp := range md.Topics {
		if tp.Topic != "meta" {
			continue
		}
		found = true
		if len(tp.Partitions) != 3 {
			t.Fatalf("topic meta has %d partitions in kcat's view, want 3", len(tp.Partitions))
		}
		for _, p := range tp.Partitions {
			if p.Leader != md.Brokers[0].ID || len(p.Replicas) != 1 {
				t.Fatalf("partition %+v: want leader %d with one replica", p, md.Brokers[0].ID)
			}
		}
	}
	if !found {
		t.Fatalf("kcat does not list topic meta:\n%s", out)
	}
}

// TestKcatProduceConsume produces lines with kcat, once per codec, reads them
// back with kcat and with franz-go.
func TestKcatProduceConsume(t *testing.T) {
	kcat := requireTool(t, "kcat")
	bs := startBroker(t)
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			topic := "kcat-" + codec
			createTopic(t, bs, topic, 1)
			var lines []string
			for i := range 200 {
				// Compressible and not: a long repeated tail, then none.
				lines = append(lines, fmt.Sprintf("k-%d:%s-%d-%s", i, codec, i, strings.Repeat("x", i%7*100)))
			}
			runTool(t, strings.Join(lines, "\n")+"\n", kcat, "-b", bs, "-P", "-t", topic, "-z", codec, "-K", ":")

			out := runTool(t, "", kcat, "-b", bs, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k:%s\n")
			got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if !slices.Equal(got, lines) {
				t.Fatalf("kcat read back %d lines, want the %d produced in order; first got %q", len(got), len(lines), got[:min(3, len(got))])
			}
			for i, rec := range readAll(t, bs, topic, len(lines)) {
				if want := lines[i]; string(rec.Key)+":"+string(rec.Value) != want || rec.Offset != int64(i) {
					t.Fatalf("franz-go read offset %d %q:%q, want offset %d %q", rec.Offset, rec.Key, rec.Value, i, want)
				}
			}
		})
	}
}

// TestKcatConsumesAllPartitions has franz-go write keyed records over several
// partitions and kcat read every one back with its partition and offset.
func TestKcatConsumesAllPartitions(t *testing.T) {
	kcat := requireTool(t, "kcat")
	bs := startBroker(t)
	createTopic(t, bs, "multi", 4)
	var recs []*kgo.Record
	var want []string
	for i := range 400 {
		r := &kgo.Record{Topic: "multi", Key: []byte(fmt.Sprintf("k-%d", i)), Value: []byte(fmt.Sprintf("v-%d", i))}
		recs = append(recs, r)
	}
	produceAll(t, bs, recs...)
	for _, r := range recs {
		want = append(want, fmt.Sprintf("%d/%d/%s/%s", r.Partition, r.Offset, r.Key, r.Value))
	}

	out := runTool(t, "", kcat, "-b", bs, "-C", "-t", "multi", "-o", "beginning", "-e", "-q", "-f", "%p/%o/%k/%s\n")
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("kcat read %d records, want %d with the partitions and offsets franz-go was given", len(got), len(want))
	}
}
