package mirror_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/wire"
)

// TestSourceLogStartInsideBatch mirrors a partition whose source log start
// lies inside a batch (DeleteRecords cut there): the first fetch from the
// source's log start returns the whole batch, which starts below it. The
// destination takes the batch as it is and ends with the source's log
// start, byte-identical, and goes on mirroring. (It used to refuse the
// batch as below its log end and stay MIRRORING with an empty log.)
func TestSourceLogStartInsideBatch(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "cut", 1, nil)
	cl := a.Client(t, kgo.DefaultProduceTopic("cut"), kgo.ProducerLinger(200*time.Millisecond))
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Value: []byte("batched-" + itoa(i))})
	}
	if err := cl.ProduceSync(ctxFor(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	an, bn := a.Nodes()[0], b.Nodes()[0]
	_, data := logBytes(t, an, "cut", 0)
	if hs := batches(t, data); len(hs) != 1 || hs[0].LastOffset() != 9 {
		t.Fatalf("the source's records are not one batch: %+v", hs)
	}
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "cut", Partition: 0, At: 5})
	if resp, err := a.Admin(t).DeleteRecords(ctxFor(t), os); err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resp.Error())
	}
	if start, _ := logBytes(t, an, "cut", 0); start != 5 {
		t.Fatalf("source log start %d, want 5", start)
	}

	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "cut")
	waitStates(t, b, "m", "cut", 1, wire.MirrorStateMirroring)
	waitIdentical(t, an, bn, "cut", 1)
	produceN(t, a, "cut", "after", 5)
	waitIdentical(t, an, bn, "cut", 1)
	if got := consume(t, b, "cut", true, 10)[0]; len(got) != 10 || got[0] != "=batched-5" {
		t.Fatalf("the destination's consumers read %v", got)
	}
}

// TestSourceDeleteRecordsFollowed deletes records on the source while the
// partition mirrors, up to an offset inside a batch: the destination's log
// start moves there too (DeleteRecords is refused on the mirrored topic
// itself), the batch stays, and the logs stay byte-identical, start
// included. (The destination used to keep its log start: records deleted on
// the source stayed readable on the copy.)
func TestSourceDeleteRecordsFollowed(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "purged", 1, nil)
	cl := a.Client(t, kgo.DefaultProduceTopic("purged"), kgo.ProducerLinger(200*time.Millisecond))
	for range 3 {
		var recs []*kgo.Record
		for i := range 10 {
			recs = append(recs, &kgo.Record{Value: []byte("batched-" + itoa(i))})
		}
		if err := cl.ProduceSync(ctxFor(t), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	an, bn := a.Nodes()[0], b.Nodes()[0]
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "purged")
	waitStates(t, b, "m", "purged", 1, wire.MirrorStateMirroring)
	waitIdentical(t, an, bn, "purged", 1)

	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "purged", Partition: 0, At: 15})
	if resp, err := a.Admin(t).DeleteRecords(ctxFor(t), os); err != nil || resp.Error() != nil {
		t.Fatalf("delete records: %v %v", err, resp.Error())
	}
	produceN(t, a, "purged", "after", 5)
	waitIdentical(t, an, bn, "purged", 1)
	if start, _ := logBytes(t, bn, "purged", 0); start != 15 {
		t.Fatalf("destination log start %d, want 15", start)
	}
}
