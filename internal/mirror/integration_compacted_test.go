package mirror_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestCompactedGaps mirrors a compacted topic whose source log the cleaner
// has compacted (offsets missing between and inside batches): B holds the
// same batches at the same offsets, gaps included. B's own cleaner is off,
// so the comparison does not race with it.
func TestCompactedGaps(t *testing.T) {
	a := startCluster(t, testcluster.Config("log.cleaner.backoff.ms", "50"))
	b := startCluster(t, testcluster.Config("log.cleaner.enable", "false"))
	compact, seg, ratio := "compact", "2048", "0.01"
	createTopic(t, a, "kv", 1, map[string]*string{"cleanup.policy": &compact, "segment.bytes": &seg, "min.cleanable.dirty.ratio": &ratio})
	p := a.Client(t, kgo.DefaultProduceTopic("kv"))
	for i := range 300 {
		r := &kgo.Record{Key: []byte("key-" + strconv.Itoa(i%10)), Value: []byte("value-" + strconv.Itoa(i))}
		if err := p.ProduceSync(ctxFor(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	an := a.Nodes()[0]
	records := func() int64 {
		_, data := logBytes(t, an, "kv", 0)
		n := int64(0)
		for rest := data; len(rest) > 0; {
			bt, next, err := record.NextBatch(rest)
			if err != nil {
				t.Fatal(err)
			}
			recs, err := record.Records(bt, record.DefaultMaxDecompressed)
			if err != nil {
				t.Fatal(err)
			}
			n += int64(len(recs))
			rest = next
		}
		return n
	}
	waitFor(t, "the source's cleaner to leave gaps", func() bool { return records() < leo(t, an, "kv", 0)/2 })
	// The log must stay as B copies it: wait until A's cleaner has cleaned
	// everything it may (its checkpoint, the first offset it has not
	// cleaned, at the active segment, which it never cleans). Nothing is
	// produced any more, so it has nothing left to do.
	waitFor(t, "the source's cleaner to finish", func() bool {
		cp, ok := an.Server().Logs().CleanerCheckpoint(tpOf("kv", 0))
		return ok && cp == activeSegmentBase(t, an, "kv", 0)
	})
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "kv")
	waitStates(t, b, "m", "kv", 1, wire.MirrorStateMirroring)
	waitIdentical(t, an, b.Nodes()[0], "kv", 1)
}

// activeSegmentBase returns the base offset of the last segment of a
// node's replica (the greatest NNNN.log in its directory).
func activeSegmentBase(t testing.TB, n *testcluster.Node, topic string, partition int32) int64 {
	t.Helper()
	p, ok := n.Server().Broker().Replicas().Partition(tpOf(topic, partition))
	if !ok || p.Log() == nil {
		t.Fatalf("node %d has no replica of %s-%d", n.ID, topic, partition)
	}
	ents, err := os.ReadDir(p.Log().Dir())
	if err != nil {
		t.Fatal(err)
	}
	base := int64(-1)
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".log"); ok {
			if off, err := strconv.ParseInt(name, 10, 64); err == nil {
				base = max(base, off)
			}
		}
	}
	if base < 0 {
		t.Fatalf("no segment of %s-%d on node %d", topic, partition, n.ID)
	}
	return base
}
