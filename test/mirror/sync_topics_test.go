package mirror_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicConfig returns a topic's config as this cluster reports it, and
// whether it is set on the topic (not a default). An error fails the test:
// a check that the sync left a config alone must not pass on a failed read.
func topicConfig(t *testing.T, adm *kadm.Client, topic, name string) (string, bool) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(syncCtx(t), topic)
	if err != nil {
		t.Fatalf("describe the configs of %s: %v", topic, err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		t.Fatalf("describe the configs of %s: %v", topic, err)
	}
	for _, c := range rc.Configs {
		if c.Key == name {
			return c.MaybeValue(), c.Source == kmsg.ConfigSourceDynamicTopicConfig
		}
	}
	return "", false
}

// TestSyncTopicConfigsAndPartitions: a config change on the source appears
// on the destination within a few refresh intervals (a managed config the
// destination alone sets is removed, a never-synced one stays); partitions
// added on the source (6 → 9) are added here and mirrored; a paused topic
// is not synced until it is resumed.
func TestSyncTopicConfigsAndPartitions(t *testing.T) {
	a, b := syncCluster(t, nil), syncCluster(t, nil)
	aAdm, bAdm := kadm.NewClient(syncClient(t, a)), kadm.NewClient(syncClient(t, b))
	ctx := syncCtx(t)
	if _, err := aAdm.CreateTopic(ctx, 6, 1, map[string]*string{"retention.ms": kmsg.StringPtr("86400000")}, "events"); err != nil {
		t.Fatal(err)
	}
	aProd := syncClient(t, a, syncManualProducer()...)
	for p := int32(0); p < 6; p++ {
		syncProduce(t, aProd, "events", p, 0, 3)
	}
	madm := syncMirrorAdmin(t, b)
	if err := madm.CreateMirror(ctx, "east", map[string]string{"bootstrap.servers": a.Bootstrap()}); err != nil {
		t.Fatal(err)
	}
	if res, err := madm.AddTopics(ctx, "east", "events"); err != nil || res.Error() != nil {
		t.Fatalf("add topics: %v %v", err, res.Error())
	}
	syncAllMirroring(t, madm, "east")
	if v, _ := topicConfig(t, bAdm, "events", "retention.ms"); v != "86400000" {
		t.Fatalf("retention.ms at creation = %q", v)
	}

	// An operator's overrides on the destination: segment.ms is the sync's
	// (refused: the topic is read-only), min.insync.replicas is never
	// synced (taken, and kept).
	res, err := bAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "segment.ms", Value: kmsg.StringPtr("600000")}}, "events")
	if err != nil || !errors.Is(res[0].Err, kerr.PolicyViolation) {
		t.Fatalf("set segment.ms of a mirrored topic: %v %v, want POLICY_VIOLATION", err, res[0].Err)
	}
	res, err = bAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "min.insync.replicas", Value: kmsg.StringPtr("1")}}, "events")
	if err != nil || res[0].Err != nil {
		t.Fatalf("set min.insync.replicas of a mirrored topic: %v %v", err, res[0].Err)
	}
	if _, err := aAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Name: "retention.ms", Value: kmsg.StringPtr("3600000")}, {Name: "max.message.bytes", Value: kmsg.StringPtr("2000000")},
	}, "events"); err != nil {
		t.Fatal(err)
	}
	syncPoll(t, "the source's config change on the destination", func() (bool, string) {
		ret, _ := topicConfig(t, bAdm, "events", "retention.ms")
		mmb, _ := topicConfig(t, bAdm, "events", "max.message.bytes")
		_, segSet := topicConfig(t, bAdm, "events", "segment.ms")
		return ret == "3600000" && mmb == "2000000" && !segSet, fmt.Sprintf("retention.ms=%s max.message.bytes=%s segment.ms set=%v", ret, mmb, segSet)
	})
	if v, set := topicConfig(t, bAdm, "events", "min.insync.replicas"); !set || v != "1" {
		t.Errorf("min.insync.replicas (never synced) = %q set=%v", v, set)
	}

	// Partitions 6 → 9 on the source.
	if _, err := aAdm.UpdatePartitions(ctx, 9, "events"); err != nil {
		t.Fatal(err)
	}
	syncPoll(t, "9 partitions on the source", func() (bool, string) {
		td, err := aAdm.ListTopics(ctx, "events")
		return err == nil && len(td["events"].Partitions) == 9, fmt.Sprint(err)
	})
	aProd9 := syncClient(t, a, syncManualProducer()...) // knows the 9 partitions
	for p := int32(6); p < 9; p++ {
		syncProduce(t, aProd9, "events", p, 0, 5)
	}
	syncPoll(t, "9 partitions on the destination", func() (bool, string) {
		td, err := bAdm.ListTopics(ctx, "events")
		if err != nil {
			return false, err.Error()
		}
		n := len(td["events"].Partitions)
		return n == 9, fmt.Sprintf("%d partitions", n)
	})
	syncPoll(t, "the new partitions mirrored", func() (bool, string) {
		ends := syncEnds(t, bAdm, "events")
		return ends[6] == 5 && ends[7] == 5 && ends[8] == 5, fmt.Sprint(ends)
	})
	syncAllMirroring(t, madm, "east")
	// The copies hold the source's records at the same offsets.
	cons := syncClient(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"events": {
		6: kgo.NewOffset().AtStart(), 7: kgo.NewOffset().AtStart(), 8: kgo.NewOffset().AtStart(),
	}}))
	got := map[int32][]string{}
	for n := 0; n < 15; {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consume the new partitions: %v (got %v)", err, got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if want := fmt.Sprintf("events-%d-%06d", r.Partition, r.Offset); string(r.Value) != want {
				t.Errorf("%s-%d@%d = %q, want %q", r.Topic, r.Partition, r.Offset, r.Value, want)
			}
			got[r.Partition] = append(got[r.Partition], string(r.Value))
			n++
		})
	}
	for _, k := range []string{"configs", "partitions"} {
		syncPoll(t, "a clean "+k+" sync round reported", func() (bool, string) {
			s := syncOf(syncDescribe(t, madm, "east"), k)
			return !s.LastSuccess.IsZero() && s.LastError == "", fmt.Sprintf("%+v", s)
		})
	}

	// Paused: the sync leaves the topic alone; resumed: it catches up.
	if res, err := madm.PauseTopics(ctx, "east", "events"); err != nil || res.Error() != nil {
		t.Fatalf("pause: %v %v", err, res.Error())
	}
	if _, err := aAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("7200000")}}, "events"); err != nil {
		t.Fatal(err)
	}
	syncRounds(t, madm, "east", "configs")
	if v, _ := topicConfig(t, bAdm, "events", "retention.ms"); v != "3600000" {
		t.Fatalf("a paused topic's config was synced: retention.ms = %s", v)
	}
	if res, err := madm.ResumeTopics(ctx, "east", "events"); err != nil || res.Error() != nil {
		t.Fatalf("resume: %v %v", err, res.Error())
	}
	syncPoll(t, "the config synced after resuming", func() (bool, string) {
		v, _ := topicConfig(t, bAdm, "events", "retention.ms")
		return v == "7200000", "retention.ms=" + v
	})
	if strings.Contains(syncOf(syncDescribe(t, madm, "east"), "configs").LastError, "retention") {
		t.Errorf("configs sync error: %+v", syncOf(syncDescribe(t, madm, "east"), "configs"))
	}
}
