package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

func partitionsReq(topics ...kmsg.CreatePartitionsRequestTopic) *kmsg.CreatePartitionsRequest {
	r := kmsg.NewPtrCreatePartitionsRequest()
	r.Version = 3
	r.Topics = topics
	return r
}

func morePartitions(name string, count int32, assignments ...[]int32) kmsg.CreatePartitionsRequestTopic {
	t := kmsg.NewCreatePartitionsRequestTopic()
	t.Topic, t.Count = name, count
	for _, a := range assignments {
		x := kmsg.NewCreatePartitionsRequestTopicAssignment()
		x.Replicas = a
		t.Assignment = append(t.Assignment, x)
	}
	return t
}

func TestCreatePartitions(t *testing.T) {
	id := metadata.Uuid{0: 2, 15: 1}
	img := cluster(t, upBrokers(3)...)
	img = withTopic(t, img, "t", id, partition(1, []int32{1, 2}, []int32{1, 2}), partition(2, []int32{2, 3}, []int32{2, 3}))

	for _, tc := range []struct {
		name  string
		topic kmsg.CreatePartitionsRequestTopic
		want  *kerr.Error
		msg   string
	}{
		{"unknown", morePartitions("nope", 3), kerr.UnknownTopicOrPartition, ""},
		{"same count", morePartitions("t", 2), kerr.InvalidPartitions, "already has 2"},
		{"fewer", morePartitions("t", 1), kerr.InvalidPartitions, "would not be an increase"},
		{"too many", morePartitions("t", maxPartitionsPerRequest+3), kerr.InvalidPartitions, "at most"},
		{"assignment count", morePartitions("t", 4, []int32{1, 2}), kerr.InvalidReplicaAssignment, "only 1 assignment"},
		{"assignment rf", morePartitions("t", 3, []int32{1}), kerr.InvalidReplicaAssignment, "not consistent"},
		{"assignment unknown broker", morePartitions("t", 3, []int32{1, 7}), kerr.InvalidReplicaAssignment, "no such broker"},
		{"assignment broker twice", morePartitions("t", 3, []int32{1, 1}), kerr.InvalidReplicaAssignment, "more than once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, resp := decideCreatePartitions(testView(t, img, nil), partitionsReq(tc.topic))
			if len(recs) != 0 {
				t.Fatalf("records: %v", recs)
			}
			wantCode(t, tc.name, resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, tc.want, tc.msg)
		})
	}

	t.Run("placed", func(t *testing.T) {
		recs, resp := decideCreatePartitions(testView(t, img, nil), partitionsReq(morePartitions("t", 5)))
		wantCode(t, "placed", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, nil, "")
		after := apply(t, img, recs...)
		tp, _ := after.Topic("t")
		if len(tp.Partitions) != 5 {
			t.Fatalf("%d partitions", len(tp.Partitions))
		}
		for p := int32(2); p < 5; p++ {
			st := tp.Partitions[p]
			if len(st.Replicas) != 2 || st.Leader != st.Replicas[0] || !slices.Equal(st.ISR, st.Replicas) {
				t.Fatalf("new partition %d: %+v", p, st)
			}
		}
		if !slices.Equal(tp.Partitions[0].Replicas, []int32{1, 2}) {
			t.Fatal("existing partition changed")
		}
	})
	t.Run("assigned", func(t *testing.T) {
		recs, resp := decideCreatePartitions(testView(t, img, nil), partitionsReq(morePartitions("t", 4, []int32{3, 1}, []int32{2, 1})))
		wantCode(t, "assigned", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, nil, "")
		after := apply(t, img, recs...)
		tp, _ := after.Topic("t")
		if !slices.Equal(tp.Partitions[2].Replicas, []int32{3, 1}) || tp.Partitions[3].Leader != 2 {
			t.Fatalf("assigned partitions %+v %+v", tp.Partitions[2], tp.Partitions[3])
		}
	})
	t.Run("duplicate topic", func(t *testing.T) {
		recs, resp := decideCreatePartitions(testView(t, img, nil), partitionsReq(morePartitions("t", 3), morePartitions("t", 4)))
		if len(recs) != 0 || len(resp.Topics) != 1 {
			t.Fatalf("%d records, %d results", len(recs), len(resp.Topics))
		}
		wantCode(t, "dup", resp.Topics[0].ErrorCode, nil, kerr.InvalidRequest, "")
	})
	t.Run("not enough unfenced brokers", func(t *testing.T) {
		fenced := apply(t, img, &metadata.BrokerRegistrationChangeRecord{BrokerID: 2, BrokerEpoch: 12, Fenced: metadata.FencingFence},
			&metadata.BrokerRegistrationChangeRecord{BrokerID: 3, BrokerEpoch: 13, Fenced: metadata.FencingFence})
		_, resp := decideCreatePartitions(testView(t, fenced, nil), partitionsReq(morePartitions("t", 3)))
		wantCode(t, "fenced", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.InvalidReplicationFactor, "larger than available brokers 1")
	})
}
