package mirror_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestKfakeSource mirrors from franz-go's kfake, an independent
// implementation of Kafka that does not know ReadLastMirroredEpochs (the
// mirror takes its LME as -1): B's partitions hold exactly the batches
// kfake serves, transactions and all.
func TestKfakeSource(t *testing.T) {
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("kfake-source"), kfake.SeedTopics(3, "kt"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx := ctxFor(t)
	seeds := kgo.SeedBrokers(src.ListenAddrs()...)
	idem, err := kgo.NewClient(seeds, kgo.DefaultProduceTopic("kt"))
	if err != nil {
		t.Fatal(err)
	}
	defer idem.Close()
	for i := range 60 {
		if err := idem.ProduceSync(ctx, &kgo.Record{Key: []byte("k" + itoa(i)), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := kgo.NewClient(seeds, kgo.DefaultProduceTopic("kt"), kgo.TransactionalID("kfake-tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	for _, commit := range []bool{true, false} {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 9 {
			if err := tx.ProduceSync(ctx, &kgo.Record{Key: []byte("t" + itoa(i)), Value: []byte("tx")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}

	b := startCluster(t)
	createMirrorFrom(t, b, "kf", src.ListenAddrs()[0])
	mirrorTopics(t, b, opAdd, "kf", "kt")
	waitStates(t, b, "kf", "kt", 3, wire.MirrorStateMirroring)
	bcl := b.Client(t)
	for p := range int32(3) {
		var sb, db []byte
		ok := pollUntil(func() bool {
			sb, db = fetchAll(t, idem, "kt", p), fetchAll(t, bcl, "kt", p)
			return len(sb) > 0 && bytes.Equal(sb, db)
		})
		if !ok {
			t.Fatalf("kt-%d: kfake serves %d bytes, B %d", p, len(sb), len(db))
		}
		markers := 0
		for _, h := range batches(t, db) {
			if h.IsControl() {
				markers++
			}
		}
		t.Logf("kt-%d: %d bytes identical, %d control batches", p, len(db), markers)
	}
}

// fetchAll reads a partition's batches from offset 0 to its high watermark
// with consumer Fetch requests, as the broker serves them.
func fetchAll(t testing.TB, cl *kgo.Client, topic string, partition int32) []byte {
	t.Helper()
	var out []byte
	off := int64(0)
	// kgo sends the highest Fetch version both sides know: name the topic
	// by id as well.
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxFor(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	var id [16]byte
	for _, mt := range md.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			id = mt.TopicID
		}
	}
	for range 1000 {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.ReplicaID = -1
		req.MaxWaitMillis = 10
		req.MaxBytes = 1 << 20
		req.SessionEpoch = -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, off, 1<<20
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx := ctxFor(t)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.Topics[0].Partitions[0]
		if r.ErrorCode != 0 {
			t.Logf("fetch %s-%d: %v", topic, partition, kerr.ErrorForCode(r.ErrorCode))
			time.Sleep(10 * time.Millisecond)
			continue
		}
		got := false
		for rest := r.RecordBatches; len(rest) > 0; {
			b, next, err := record.NextBatch(rest)
			if err != nil {
				break // a partial batch at the end
			}
			h, _ := record.ParseHeader(b)
			if h.NextOffset() > off {
				out = append(out, b...)
				off = h.NextOffset()
				got = true
			}
			rest = next
		}
		if off >= r.HighWatermark || !got {
			return out
		}
	}
	t.Fatalf("fetching %s-%d did not end", topic, partition)
	return nil
}
