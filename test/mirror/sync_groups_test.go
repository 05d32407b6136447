package mirror_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// syncGroupConsumer is a group consumer of "orders" without auto-commit.
func syncGroupConsumer(t *testing.T, c kgo.Opt, group string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(c, kgo.ConsumerGroup(group), kgo.ConsumeTopics("orders"), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// syncPollRecords polls cl until it has n records.
func syncPollRecords(t *testing.T, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), syncWaitTimeout)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollRecords(ctx, n-len(out))
		if ctx.Err() != nil {
			t.Fatalf("polled %d of %d records", len(out), n)
		}
		for _, e := range fs.Errors() {
			t.Logf("fetch error %s-%d: %v", e.Topic, e.Partition, e.Err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// TestSyncGroupOffsets: a group's commit on the source appears on the
// destination within a few refresh intervals with its leader epoch; while
// the destination lags (its mirror fetchers throttled) the offset is
// clamped to what it has; a group with an active member on the destination
// is left alone; after the failover the group resumes on the destination
// at its committed offset and skips nothing, and the sync no longer
// touches it.
func TestSyncGroupOffsets(t *testing.T) {
	a, b := syncCluster(t, nil), syncCluster(t, nil)
	aCl, bCl := syncClient(t, a, syncManualProducer()...), syncClient(t, b, syncManualProducer()...)
	aAdm, bAdm := kadm.NewClient(aCl), kadm.NewClient(bCl)
	ctx := syncCtx(t)
	if _, err := aAdm.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	syncProduce(t, aCl, "orders", 0, 0, 100)
	madm := syncMirrorAdmin(t, b)
	if err := madm.CreateMirror(ctx, "east", map[string]string{"bootstrap.servers": a.Bootstrap(), "groups.exclude": "ignored-.*"}); err != nil {
		t.Fatal(err)
	}
	if res, err := madm.AddTopics(ctx, "east", "orders"); err != nil || res.Error() != nil {
		t.Fatalf("add topics: %v %v", err, res.Error())
	}
	syncAllMirroring(t, madm, "east")

	// A consumer of the source commits after 60 records, then leaves.
	seedsA := kgo.SeedBrokers(a.BootstrapAddrs()...)
	cons := syncGroupConsumer(t, seedsA, "app")
	recs := syncPollRecords(t, cons, 60)
	if err := cons.CommitRecords(ctx, recs[59]); err != nil {
		t.Fatal(err)
	}
	committedAt := time.Now()
	cons.Close()
	at, epochA := syncCommitted(t, aAdm, "app", "orders", 0)
	if at != 60 || epochA < 0 {
		t.Fatalf("the source's commit: %d epoch %d", at, epochA)
	}
	// An excluded group is never synced; a group committed with it that
	// the filter lets through is.
	for _, g := range []string{"ignored-1", "kept-1"} {
		if err := aAdm.CommitAllOffsets(ctx, g, kadm.OffsetsFromRecords(*recs[9])); err != nil {
			t.Fatal(err)
		}
	}
	syncPoll(t, "the group's offset on the destination", func() (bool, string) {
		at, ep := syncCommitted(t, bAdm, "app", "orders", 0)
		return at == 60 && ep == epochA, fmt.Sprintf("offset %d epoch %d", at, ep)
	})
	t.Logf("the commit reached the destination %v after it was made on the source (refresh interval %v)", time.Since(committedAt).Round(time.Millisecond), syncRefresh)
	syncRounds(t, madm, "east", "group-offsets") // rounds that began after both commits
	if at, _ := syncCommitted(t, bAdm, "kept-1", "orders", 0); at != 10 {
		t.Fatalf("a group the filter lets through, committed with the excluded one, is at %d on the destination, want 10", at)
	}
	if at, _ := syncCommitted(t, bAdm, "ignored-1", "orders", 0); at != -1 {
		t.Errorf("an excluded group was synced: offset %d", at)
	}

	// The destination lags: its mirror fetchers copy about one batch a
	// second. A commit near the source's end is clamped to the
	// destination's end, without a leader epoch.
	throttle := func(v *string) {
		t.Helper()
		op := kadm.SetConfig
		if v == nil {
			op = kadm.DeleteConfig
		}
		if _, err := bAdm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: op, Name: "mirror.replication.throttled.rate", Value: v}}); err != nil {
			t.Fatal(err)
		}
	}
	throttle(kmsg.StringPtr("100"))
	syncProduce(t, aCl, "orders", 0, 100, 400)
	commitOnSource := func(group string, offset int64) {
		t.Helper()
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: "orders", Partition: 0, At: offset, LeaderEpoch: epochA})
		if err := aAdm.CommitAllOffsets(ctx, group, os); err != nil {
			t.Fatal(err)
		}
	}
	commitOnSource("app", 450)
	var clamped int64
	syncPoll(t, "a clamped offset on the lagging destination", func() (bool, string) {
		at, ep := syncCommitted(t, bAdm, "app", "orders", 0)
		end := syncEnds(t, bAdm, "orders")[0]
		clamped = at
		return at > 60 && at < 450 && ep == -1 && at <= end, fmt.Sprintf("offset %d epoch %d, destination end %d", at, ep, end)
	})
	t.Logf("clamped to %d while the destination lagged", clamped)
	throttle(nil)
	syncPoll(t, "the source's offset once the destination caught up", func() (bool, string) {
		at, ep := syncCommitted(t, bAdm, "app", "orders", 0)
		return at == 450 && ep == epochA, fmt.Sprintf("offset %d epoch %d", at, ep)
	})
	syncPoll(t, "a clean group-offsets sync round reported", func() (bool, string) {
		s := syncOf(syncDescribe(t, madm, "east"), "group-offsets")
		return !s.LastSuccess.IsZero() && s.LastError == "", fmt.Sprintf("%+v", s)
	})

	// A group with a member on the destination (reading the mirrored
	// topic there) is its consumers' business.
	seedsB := kgo.SeedBrokers(b.BootstrapAddrs()...)
	live := syncGroupConsumer(t, seedsB, "live")
	defer live.Close()
	syncPollRecords(t, live, 1)
	commitOnSource("live", 300)
	syncRounds(t, madm, "east", "group-offsets")
	if at, _ := syncCommitted(t, bAdm, "live", "orders", 0); at == 300 {
		t.Fatal("the sync committed for a group with an active member")
	}
	live.Close()
	syncPoll(t, "the group synced once its member left", func() (bool, string) {
		at, _ := syncCommitted(t, bAdm, "live", "orders", 0)
		return at == 300, fmt.Sprintf("offset %d", at)
	})

	// Failover, then the source's group moves on: the destination keeps
	// its own offsets.
	if res, err := madm.RemoveTopics(ctx, "east", "orders"); err != nil || res.Error() != nil {
		t.Fatalf("failover: %v %v", err, res.Error())
	}
	syncPoll(t, "the partition failed over", func() (bool, string) {
		m := syncDescribe(t, madm, "east")
		st := m.Topics[0].Partitions[0].State
		return st == mirroradmin.StateStopped, st.String()
	})
	commitOnSource("app", 470)
	syncRounds(t, madm, "east", "group-offsets")
	if at, _ := syncCommitted(t, bAdm, "app", "orders", 0); at != 450 {
		t.Fatalf("after the failover the sync moved the group to %d", at)
	}
	// The group resumes on the destination where it was: 450, then every
	// mirrored record up to the source's end, then one written here after
	// the failover's barrier (a control batch, which takes an offset).
	syncProduce(t, bCl, "orders", 0, 500, 1)
	resumed := syncGroupConsumer(t, seedsB, "app")
	defer resumed.Close()
	got := syncPollRecords(t, resumed, 51)
	for i, r := range got[:50] {
		want := int64(450 + i)
		if r.Offset != want || string(r.Value) != fmt.Sprintf("orders-0-%06d", want) {
			t.Fatalf("record %d after the failover: offset %d value %q, want offset %d", i, r.Offset, r.Value, want)
		}
	}
	if last := got[50]; last.Offset < 500 || string(last.Value) != "orders-0-000500" {
		t.Fatalf("the record written after the failover: offset %d value %q", last.Offset, last.Value)
	}
}
