package mirror_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// sourceData is what fillSource wrote.
type sourceData struct {
	committed int // records visible to READ_COMMITTED
	all       int // records visible to READ_UNCOMMITTED
}

// fillSource writes to topic with a plain (non-idempotent) producer, an
// idempotent one and a transactional one that commits some transactions
// and aborts others.
func fillSource(t *testing.T, c *testcluster.Cluster, topic string, round int) sourceData {
	t.Helper()
	ctx := ctxFor(t)
	var d sourceData
	rec := func(kind string, i int) *kgo.Record {
		return &kgo.Record{Key: []byte(fmt.Sprintf("%s-%d-%d", kind, round, i)), Value: []byte(fmt.Sprintf("v%d", i))}
	}
	plain := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite())
	idem := c.Client(t, kgo.DefaultProduceTopic(topic))
	for i := range 40 {
		if err := plain.ProduceSync(ctx, rec("plain", i)).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := idem.ProduceSync(ctx, rec("idem", i)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	d.committed += 80
	d.all += 80
	tx := c.Client(t, kgo.DefaultProduceTopic(topic), kgo.TransactionalID(fmt.Sprintf("tx-%s-%d", topic, round)))
	for n, commit := range []bool{true, false, true, false} {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 12 {
			if err := tx.ProduceSync(ctx, rec("tx"+strconv.Itoa(n), i)).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		if commit {
			d.committed += 12
		}
		d.all += 12
	}
	return d
}

// TestActivePassive mirrors a 6-partition topic written by plain,
// idempotent and transactional producers, and a compacted topic, from A to
// B: B's partitions end byte-identical with A's (same batches at the same
// offsets, producer ids, sequences and leader epochs, markers included), the
// topics keep their ids and configs, READ_COMMITTED consumers see the same
// records on both, and clients cannot produce to B's copies.
func TestActivePassive(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "orders", 6, nil)
	compact := "compact"
	createTopic(t, a, "accounts", 2, map[string]*string{"cleanup.policy": &compact})
	data := fillSource(t, a, "orders", 0)
	ctx := ctxFor(t)
	kv := a.Client(t, kgo.DefaultProduceTopic("accounts"))
	for i := range 60 {
		r := &kgo.Record{Key: []byte("acct-" + strconv.Itoa(i%7)), Value: []byte(strconv.Itoa(i))}
		if i%11 == 10 {
			r.Value = nil // tombstones
		}
		if err := kv.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	createMirror(t, b, a, "west")
	mirrorTopics(t, b, opAdd, "west", "orders", "accounts")
	waitStates(t, b, "west", "orders", 6, wire.MirrorStateMirroring)
	// More data while mirroring.
	more := fillSource(t, a, "orders", 1)
	data.committed += more.committed
	data.all += more.all

	an, bn := a.Nodes()[0], b.Nodes()[0]
	waitIdentical(t, an, bn, "orders", 6)
	waitIdentical(t, an, bn, "accounts", 2)

	// Same batches: producer ids, epochs, sequences, control markers.
	for p := range int32(6) {
		if leo(t, bn, "orders", p) == 0 {
			t.Fatalf("orders-%d is empty", p)
		}
	}
	_, ab := logBytes(t, an, "orders", 0)
	t.Logf("orders-0: %d bytes, log end %d on both", len(ab), leo(t, bn, "orders", 0))
	hs := batches(t, ab)
	var pids, markers int
	for _, h := range hs {
		if h.ProducerID >= 0 {
			pids++
		}
		if h.IsControl() {
			markers++
		}
	}
	if pids == 0 || markers == 0 {
		t.Fatalf("the source log of orders-0 has %d batches with producer ids and %d markers; the test wrote none?", pids, markers)
	}

	// Same topic ids and configs.
	at, bt := topicIDs(t, a, "orders", "accounts"), topicIDs(t, b, "orders", "accounts")
	if at["orders"] != bt["orders"] || at["accounts"] != bt["accounts"] {
		t.Fatalf("topic ids differ: %v vs %v", at, bt)
	}
	cfgs, err := b.Admin(t).DescribeTopicConfigs(ctx, "accounts")
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := cfgs.On("accounts", nil)
	found := false
	for _, c := range rc.Configs {
		if c.Key == "cleanup.policy" && c.Value != nil && *c.Value == "compact" {
			found = true
		}
	}
	if !found {
		t.Fatalf("B's accounts is not compacted: %+v", rc.Configs)
	}

	// READ_COMMITTED consumers see the same records.
	ga := consume(t, a, "orders", true, data.committed)
	gb := consume(t, b, "orders", true, data.committed)
	for p := range int32(6) {
		if !slices.Equal(ga[p], gb[p]) {
			t.Fatalf("READ_COMMITTED orders-%d differs:\nA %v\nB %v", p, ga[p], gb[p])
		}
		for _, v := range gb[p] {
			if bytes.Contains([]byte(v), []byte("tx1-")) || bytes.Contains([]byte(v), []byte("tx3-")) {
				t.Fatalf("READ_COMMITTED consumer of B saw aborted record %s", v)
			}
		}
	}

	// Produces to the mirrored topic are refused for good, naming nothing
	// a client could retry.
	p := b.Client(t, kgo.DefaultProduceTopic("orders"), kgo.RecordRetries(3))
	err = p.ProduceSync(ctx, &kgo.Record{Value: []byte("nope")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("produce to a mirrored topic: %v, want INVALID_TOPIC_EXCEPTION", err)
	}

	// DescribeMirrors: configs, topics, figures.
	d := describe(t, b, "west")
	if len(d.Mirrors) != 1 || d.Mirrors[0].ErrorCode != 0 || len(d.Mirrors[0].Topics) != 2 || len(d.Mirrors[0].Syncs) == 0 {
		t.Fatalf("describe: %+v", d)
	}
	for _, tp := range d.Mirrors[0].Topics {
		if tp.MirrorNameConfig != "west" {
			t.Fatalf("topic %s mirror.name %q", tp.Name, tp.MirrorNameConfig)
		}
		for _, pp := range tp.Partitions {
			if pp.State != wire.MirrorStateMirroring || pp.LeaderID != 1 || pp.DestinationLogEndOffset < 0 || pp.Lag != 0 || pp.LastFetchMillis <= 0 || pp.SourceHighWatermark != pp.DestinationLogEndOffset {
				t.Fatalf("partition %s-%d: %+v", tp.Name, pp.Partition, pp)
			}
		}
	}
}

func topicIDs(t testing.TB, c *testcluster.Cluster, topics ...string) map[string]string {
	t.Helper()
	md, err := c.Admin(t).Metadata(ctxFor(t), topics...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, td := range md.Topics {
		out[td.Topic] = td.ID.String()
	}
	return out
}
