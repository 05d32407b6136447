package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
)

// TestMirroredPartitionHooks checks what the broker does on its own for a
// mirrored partition: client produces are refused from the moment the
// leadership begins or mirror.name changes (with a non-retriable error
// while mirrored, a retriable one while failing over), and no destination
// leader epoch enters the epoch cache, until the topic leaves its mirror.
func TestMirroredPartitionHooks(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createTopicWith("mt", 1, 1, []int32{1}, []int32{1}, map[string]string{"mirror.name": "west"})
	p := e.partition("mt", 0)
	res := metadata.ConfigResource{Type: metadata.ResourceTopic, Name: "mt"}
	code := func() int16 {
		t.Helper()
		return e.produce(9, 1, "mt", 0, makeBatch(t, plainBatch(), "client")).ErrorCode
	}
	if c := code(); c != kerr.InvalidTopicException.Code {
		t.Fatalf("produce to a mirrored partition: %v", kerr.ErrorForCode(c))
	}
	if err := p.ReadOnly(); err == nil || !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("read-only reason %v", err)
	}
	if ep := p.Log().EpochEntries(); len(ep) != 0 {
		t.Fatalf("a mirrored partition's leadership entered its epoch in the cache: %+v", ep)
	}
	// Mirrored data keeps the source's epochs.
	if _, err := p.AppendMirrored(replicatedBatch(t, 0, 7, 42, "s0"), p.LeaderEpoch()); err != nil {
		t.Fatal(err)
	}
	e.meta.mustApply(t, metadata.SetConfig(res, "mirror.name", "west.paused"))
	if c := code(); c != kerr.InvalidTopicException.Code {
		t.Fatalf("produce to a paused partition: %v", kerr.ErrorForCode(c))
	}
	e.meta.mustApply(t, metadata.SetConfig(res, "mirror.name", "west.removed"))
	if c := code(); c != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to a failing-over partition: %v", kerr.ErrorForCode(c))
	}
	// A new leader epoch (the failover's bump) is not assigned at the log
	// end by the leadership; the barrier appended in it is.
	one := int32(1)
	e.meta.mustApply(t, &metadata.PartitionChangeRecord{TopicID: id, Partition: 0, Leader: &one, LeaderEpoch: ptr(int32(8))})
	if p.LeaderEpoch() != 8 {
		t.Fatalf("leader epoch %d after the bump", p.LeaderEpoch())
	}
	if ep := p.Log().EpochEntries(); len(ep) != 1 || ep[0].Epoch != 7 {
		t.Fatalf("epoch cache after the bump %+v", ep)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.AppendInEpoch(ctx, record.BuildMirrorPIDReset(1, 0, "src"), storage.OriginCoordinator, 7); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("barrier in a stale epoch: %v", err)
	}
	info, err := p.AppendInEpoch(ctx, record.BuildMirrorPIDReset(1, 0, "src"), storage.OriginCoordinator, 8)
	if err != nil || info.FirstOffset != 1 {
		t.Fatalf("barrier: %+v %v", info, err)
	}
	if ep := p.Log().EpochEntries(); len(ep) != 2 || ep[1].Epoch != 8 || ep[1].StartOffset != 1 {
		t.Fatalf("epoch cache after the barrier %+v", ep)
	}
	if p.Log().HighWatermark() != 2 {
		t.Fatalf("AppendInEpoch returned before the barrier was committed: hw %d", p.Log().HighWatermark())
	}
	// The mirror manager makes it writable once STOPPED.
	p.SetReadOnly(nil)
	if c := code(); c != 0 {
		t.Fatalf("produce after the failover: %v", kerr.ErrorForCode(c))
	}
	// The mirror is deleted: mirror.name goes, and leader changes assign
	// epochs again.
	e.meta.mustApply(t, metadata.RemoveConfig(res, "mirror.name"))
	e.meta.mustApply(t, &metadata.PartitionChangeRecord{TopicID: id, Partition: 0, Leader: &one})
	if ep := p.Log().EpochEntries(); ep[len(ep)-1].Epoch != p.LeaderEpoch() {
		t.Fatalf("an unmirrored partition's new epoch %d is not in its cache %+v", p.LeaderEpoch(), ep)
	}
	if c := code(); c != 0 {
		t.Fatalf("produce to an unmirrored partition: %v", kerr.ErrorForCode(c))
	}
	if p.MirrorName() != "" || p.ReadOnly() != nil {
		t.Fatalf("mirror name %q, read-only %v", p.MirrorName(), p.ReadOnly())
	}
}

func TestFollowerFetchesAreReported(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopicWith("ff", 1, 1, []int32{1, 2}, []int32{1, 2}, nil)
	p := e.partition("ff", 0)
	before := time.Now()
	e.followerFetch(2, 12, "ff", 0, 0)
	f, ok := p.FollowerFetches()[2]
	if !ok || f.LogEndOffset != 0 || f.LastFetch.Before(before) {
		t.Fatalf("follower 2: %+v %v", f, ok)
	}
}

func ptr[T any](v T) *T { return &v }

// TestLeaderTruncationMovesEpochStart checks that a leader truncating its
// own log (a mirrored partition failing over) keeps answering ListOffsets:
// the leader epoch's start moves back with the log end.
func TestLeaderTruncationMovesEpochStart(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopicWith("lt", 1, 1, []int32{1}, []int32{1}, map[string]string{"mirror.name": "west"})
	p := e.partition("lt", 0)
	if _, err := p.AppendMirrored(append(replicatedBatch(t, 0, 2, -1, "a", "b"), replicatedBatch(t, 2, 2, -1, "c")...), p.LeaderEpoch()); err != nil {
		t.Fatal(err)
	}
	id := e.topicID("lt")
	one := int32(1)
	e.meta.mustApply(t, &metadata.PartitionChangeRecord{TopicID: id, Partition: 0, Leader: &one, LeaderEpoch: ptr(int32(3))})
	if err := p.TruncateTo(2); err != nil {
		t.Fatal(err)
	}
	if r := listOffset(t, e, 7, "lt", 0, -1, 0, -1); r.ErrorCode != 0 || r.Offset != 2 {
		t.Fatalf("latest offset after the leader truncated: %d %v", r.Offset, kerr.ErrorForCode(r.ErrorCode))
	}
	if err := p.TruncateFullyAndStartAt(1); err != nil {
		t.Fatal(err)
	}
	if r := listOffset(t, e, 7, "lt", 0, -2, 0, -1); r.ErrorCode != 0 || r.Offset != 1 {
		t.Fatalf("earliest offset after a full truncation: %d %v", r.Offset, kerr.ErrorForCode(r.ErrorCode))
	}
}

func TestTruncateInEpochIsFenced(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopicWith("te", 1, 1, []int32{1}, []int32{1}, map[string]string{"mirror.name": "west"})
	p := e.partition("te", 0)
	if _, err := p.AppendMirrored(append(replicatedBatch(t, 0, 2, -1, "a"), replicatedBatch(t, 1, 2, -1, "b", "c")...), p.LeaderEpoch()); err != nil {
		t.Fatal(err)
	}
	cur := p.LeaderEpoch()
	if err := p.TruncateInEpoch(1, cur+1); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("truncation in another epoch: %v", err)
	}
	if err := p.TruncateFullyInEpoch(5, cur-1); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("full truncation in another epoch: %v", err)
	}
	if p.Log().LogEndOffset() != 3 {
		t.Fatalf("a fenced truncation changed the log: end %d", p.Log().LogEndOffset())
	}
	if err := p.TruncateInEpoch(1, cur); err != nil || p.Log().LogEndOffset() != 1 {
		t.Fatalf("truncation in the current epoch: end %d %v", p.Log().LogEndOffset(), err)
	}
	if err := p.TruncateFullyInEpoch(5, cur); err != nil || p.Log().LogStartOffset() != 5 {
		t.Fatalf("full truncation in the current epoch: start %d %v", p.Log().LogStartOffset(), err)
	}
}
