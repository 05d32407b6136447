package mirror_test

import (
	"bytes"
	"strconv"
	"testing"
	"time"

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
	// The cleaner runs every 50 ms while there is something to clean: wait
	// for a second without change, so that the source's log stays as B
	// copies it.
	var last []byte
	var since time.Time
	waitFor(t, "the source's cleaner to finish", func() bool {
		_, data := logBytes(t, an, "kv", 0)
		if !bytes.Equal(data, last) {
			last, since = data, time.Now()
			return false
		}
		return time.Since(since) > time.Second
	})
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "kv")
	waitStates(t, b, "m", "kv", 1, wire.MirrorStateMirroring)
	waitIdentical(t, an, b.Nodes()[0], "kv", 1)
}
