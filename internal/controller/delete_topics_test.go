package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

func deleteByName(v int16, names ...string) *kmsg.DeleteTopicsRequest {
	r := kmsg.NewPtrDeleteTopicsRequest()
	r.Version = v
	r.TopicNames = names
	return r
}

func deleteEntry(name *string, id metadata.Uuid) kmsg.DeleteTopicsRequestTopic {
	t := kmsg.NewDeleteTopicsRequestTopic()
	t.Topic, t.TopicID = name, id
	return t
}

func TestDeleteTopics(t *testing.T) {
	idA, idB, idO := metadata.Uuid{0: 1, 15: 1}, metadata.Uuid{0: 1, 15: 2}, metadata.Uuid{0: 1, 15: 3}
	img := cluster(t, upBrokers(1)...)
	img = withTopic(t, img, "a", idA, partition(1, []int32{1}, []int32{1}))
	img = withTopic(t, img, "b", idB, partition(1, []int32{1}, []int32{1}))
	img = withTopic(t, img, OffsetsTopic, idO, partition(1, []int32{1}, []int32{1}))
	img = withConfig(t, img, topicRes("a"), "retention.ms", "5")

	t.Run("by name", func(t *testing.T) {
		recs, resp := decideDeleteTopics(testView(t, img, nil), deleteByName(5, "a", "missing", OffsetsTopic))
		wantCode(t, "a", resp.Topics[0].ErrorCode, nil, nil, "")
		wantCode(t, "missing", resp.Topics[1].ErrorCode, nil, kerr.UnknownTopicOrPartition, "")
		wantCode(t, "internal", resp.Topics[2].ErrorCode, resp.Topics[2].ErrorMessage, kerr.TopicDeletionDisabled, "internal topic")
		after := apply(t, img, recs...)
		if _, ok := after.Topic("a"); ok {
			t.Fatal("a still exists")
		}
		if len(after.Configs(topicRes("a"))) != 0 {
			t.Fatal("a's configs survived its deletion")
		}
		if _, ok := after.Topic("b"); !ok {
			t.Fatal("b deleted too")
		}
	})
	t.Run("internal before v3", func(t *testing.T) {
		_, resp := decideDeleteTopics(testView(t, img, nil), deleteByName(2, OffsetsTopic))
		wantCode(t, "internal v2", resp.Topics[0].ErrorCode, nil, kerr.InvalidRequest, "")
	})
	t.Run("by id", func(t *testing.T) {
		r := kmsg.NewPtrDeleteTopicsRequest()
		r.Version = 6
		r.Topics = []kmsg.DeleteTopicsRequestTopic{
			deleteEntry(nil, idB),
			deleteEntry(nil, metadata.Uuid{0: 9}),
			deleteEntry(ptr("a"), metadata.Uuid{}),
			deleteEntry(ptr("a"), idA),
			deleteEntry(nil, metadata.Uuid{}),
		}
		recs, resp := decideDeleteTopics(testView(t, img, nil), r)
		if strp(resp.Topics[0].Topic) != "b" || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("delete by id: %+v", resp.Topics[0])
		}
		wantCode(t, "unknown id", resp.Topics[1].ErrorCode, nil, kerr.UnknownTopicID, "")
		if resp.Topics[2].ErrorCode != 0 || metadata.Uuid(resp.Topics[2].TopicID) != idA {
			t.Fatalf("delete by name in v6: %+v", resp.Topics[2])
		}
		wantCode(t, "name and id", resp.Topics[3].ErrorCode, resp.Topics[3].ErrorMessage, kerr.InvalidRequest, "both")
		wantCode(t, "neither", resp.Topics[4].ErrorCode, resp.Topics[4].ErrorMessage, kerr.InvalidRequest, "Neither")
		after := apply(t, img, recs...)
		if after.NumTopics() != 1 {
			t.Fatalf("%d topics left, want the internal one", after.NumTopics())
		}
	})
	t.Run("duplicates", func(t *testing.T) {
		recs, resp := decideDeleteTopics(testView(t, img, nil), deleteByName(5, "a", "a"))
		if len(recs) != 0 || len(resp.Topics) != 1 {
			t.Fatalf("%d records, %d results", len(recs), len(resp.Topics))
		}
		wantCode(t, "dup", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.InvalidRequest, "Duplicate")
		r := kmsg.NewPtrDeleteTopicsRequest()
		r.Version = 6
		r.Topics = []kmsg.DeleteTopicsRequestTopic{deleteEntry(nil, idA), deleteEntry(ptr("a"), metadata.Uuid{})}
		recs, resp = decideDeleteTopics(testView(t, img, nil), r)
		if len(recs) != 1 {
			t.Fatalf("name and id of one topic: %d records", len(recs))
		}
		wantCode(t, "same topic twice", resp.Topics[1].ErrorCode, resp.Topics[1].ErrorMessage, kerr.InvalidRequest, "already supplied")
	})
	t.Run("disabled", func(t *testing.T) {
		cfg := testConfig(t, map[string]string{"delete.topic.enable": "false"})
		recs, resp := decideDeleteTopics(testView(t, img, cfg), deleteByName(4, "a", "missing"))
		if len(recs) != 0 {
			t.Fatal("records with deletion disabled")
		}
		for _, r := range resp.Topics {
			wantCode(t, strp(r.Topic), r.ErrorCode, r.ErrorMessage, kerr.TopicDeletionDisabled, "delete.topic.enable")
		}
		_, resp = decideDeleteTopics(testView(t, img, cfg), deleteByName(2, "a"))
		wantCode(t, "v2", resp.Topics[0].ErrorCode, nil, kerr.InvalidRequest, "")
	})
}
