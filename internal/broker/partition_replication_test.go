package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/record"
)

// replicatedBatch builds a batch as a leader wrote it: with its offset and
// leader epoch.
func replicatedBatch(t *testing.T, base int64, epoch int32, pid int64, values ...string) []byte {
	t.Helper()
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Value: []byte(v)}
	}
	record.NumberRecords(recs)
	b, err := record.Build(record.BatchSpec{BaseOffset: base, PartitionLeaderEpoch: epoch, ProducerID: pid, ProducerEpoch: 0, BaseSequence: 0,
		BaseTimestamp: 1_700_000_000_000}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFollowerAppendTruncateAndHighWatermark(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopicWith("f", 1, 2, []int32{2, 1}, []int32{2, 1}, nil)
	p := e.partition("f", 0)
	in := append(replicatedBatch(t, 0, 3, -1, "a", "b"), replicatedBatch(t, 2, 4, -1, "c")...)
	info, err := p.AppendAsFollower(in)
	if err != nil || info.FirstOffset != 0 || info.LastOffset != 2 {
		t.Fatalf("follower append: %+v %v", info, err)
	}
	if ep := p.Log().EpochEntries(); len(ep) != 2 || ep[0].Epoch != 3 || ep[1].Epoch != 4 || ep[1].StartOffset != 2 {
		t.Fatalf("follower epoch cache %+v", ep)
	}
	if _, err := p.AppendAsFollower(replicatedBatch(t, 1, 4, -1, "dup")); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("append below the log end: %v", err)
	}
	p.SetFollowerHighWatermark(10)
	if hw := p.Log().HighWatermark(); hw != 3 {
		t.Fatalf("follower high watermark %d, want the log end 3", hw)
	}
	// Clients cannot read a follower.
	if r := onlyPartition(t, decodeFetch(t, e.call(fetchReq(12, fp("f", 0, 0))))); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("consumer fetch from a follower: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if err := p.TruncateTo(2); err != nil || p.Log().LogEndOffset() != 2 {
		t.Fatalf("truncate: end %d %v", p.Log().LogEndOffset(), err)
	}
	if ep := p.Log().EpochEntries(); len(ep) != 1 {
		t.Fatalf("epoch cache after truncation %+v", ep)
	}
	if err := p.TruncateFullyAndStartAt(100); err != nil || p.Log().LogStartOffset() != 100 || p.Log().LogEndOffset() != 100 {
		t.Fatalf("truncate fully: %v", err)
	}
}

func TestMirroredAppendOnTheLeader(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("m", 1, nil)
	p := e.partition("m", 0)
	p.SetReadOnly(errf(kerr.InvalidRequest, "m is mirrored"))
	// Source batches keep their offsets (with a compaction gap), producer
	// ids and epochs.
	in := append(replicatedBatch(t, 0, 7, 555, "s0", "s1"), replicatedBatch(t, 5, 9, 555, "s5")...)
	info, err := p.AppendMirrored(in, 0)
	if err != nil || info.LastOffset != 5 {
		t.Fatalf("mirrored append: %+v %v", info, err)
	}
	if hw := p.Log().HighWatermark(); hw != 6 {
		t.Fatalf("high watermark after a mirrored append: %d", hw)
	}
	if _, err := p.AppendMirrored(replicatedBatch(t, 6, 9, 555, "x"), 3); !errors.Is(err, kerr.UnknownLeaderEpoch) {
		t.Fatalf("mirrored append at another epoch: %v", err)
	}
	r := onlyPartition(t, decodeFetch(t, e.call(fetchReq(12, fp("m", 0, 0)))))
	vals, offs := fetchedValues(t, r.RecordBatches)
	if len(vals) != 3 || offs[2] != 5 {
		t.Fatalf("mirrored data %q at %v", vals, offs)
	}
	h, _ := record.ParseHeader(r.RecordBatches)
	if h.PartitionLeaderEpoch != 7 || h.ProducerID != 555 {
		t.Fatalf("mirrored batch header %+v", h)
	}
	if _, err := p.AppendAsFollower(in); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("follower append on a leader: %v", err)
	}
	// Clients still cannot produce.
	if rp := e.produce(9, 1, "m", 0, makeBatch(t, plainBatch(), "client")); rp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("client produce to a mirrored partition: %v", kerr.ErrorForCode(rp.ErrorCode))
	}
}
