package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

func TestListOffsets(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createTopic("lo", 1, nil)
	at := func(ts int64) batchOpts { o := plainBatch(); o.timestamp = ts; return o }
	e.mustProduce("lo", 0, makeBatch(t, at(1000), "a", "b")) // offsets 0-1, ts 1000-1001
	e.mustProduce("lo", 0, makeBatch(t, at(5000), "c"))      // offset 2, ts 5000
	leader := int32(testNode)
	e.meta.mustApply(t, &metadata.PartitionChangeRecord{TopicID: id, Partition: 0, Leader: &leader}) // epoch 1 from offset 3
	e.mustProduce("lo", 0, makeBatch(t, at(3000), "d"))                                              // offset 3, ts 3000

	cases := []struct {
		name              string
		ts                int64
		curEpoch          int32
		code              *kerr.Error
		timestamp, offset int64
		epoch             int32
	}{
		{"latest", -1, -1, nil, -1, 4, 1},
		{"earliest", -2, -1, nil, -1, 0, 0},
		{"max timestamp", -3, -1, nil, 5000, 2, 0},
		{"earliest local", -4, -1, nil, -1, 0, 0},
		{"before everything", 0, -1, nil, 1000, 0, 0},
		{"between records", 1001, -1, nil, 1001, 1, 0},
		{"first at or after", 2000, -1, nil, 5000, 2, 0},
		{"after everything", 9000, -1, nil, -1, -1, -1},
		{"current epoch", -1, 1, nil, -1, 4, 1},
		{"fenced", -1, 0, kerr.FencedLeaderEpoch, -1, -1, -1},
		{"unknown epoch", -1, 2, kerr.UnknownLeaderEpoch, -1, -1, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := listOffset(t, e, 8, "lo", 0, c.ts, 0, c.curEpoch)
			if p.ErrorCode != codeOf(c.code) || p.Timestamp != c.timestamp || p.Offset != c.offset || p.LeaderEpoch != c.epoch {
				t.Fatalf("got %v ts %d offset %d epoch %d, want %v %d %d %d", kerr.ErrorForCode(p.ErrorCode), p.Timestamp, p.Offset, p.LeaderEpoch,
					c.code, c.timestamp, c.offset, c.epoch)
			}
		})
	}

	t.Run("partition errors and duplicates", func(t *testing.T) {
		e.createTopicWith("elsewhere", 1, 2, []int32{2}, []int32{2}, nil)
		if p := listOffset(t, e, 8, "missing", 0, -1, 0, -1); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("unknown topic: %v", kerr.ErrorForCode(p.ErrorCode))
		}
		if p := listOffset(t, e, 8, "elsewhere", 0, -1, 0, -1); p.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("not hosted: %v", kerr.ErrorForCode(p.ErrorCode))
		}
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = 5, -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "lo"
		for range 2 {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		for _, p := range e.call(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions {
			if p.ErrorCode != kerr.InvalidRequest.Code {
				t.Fatalf("duplicate partition: %v", kerr.ErrorForCode(p.ErrorCode))
			}
		}
	})
}

func TestListOffsetsWhileTheHighWatermarkLags(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createTopicWith("lag", 1, 1, []int32{1, 2}, []int32{1, 2}, nil)
	e.produce(9, 1, "lag", 0, makeBatch(t, plainBatch(), "x")) // appended; the follower never fetched
	leader := int32(testNode)
	e.meta.mustApply(t, &metadata.PartitionChangeRecord{TopicID: id, Partition: 0, Leader: &leader})
	// The new epoch starts at 1 but the high watermark is 0: "latest"
	// could go backwards, so it is not available yet.
	if p := listOffset(t, e, 8, "lag", 0, -1, 0, -1); p.ErrorCode != kerr.OffsetNotAvailable.Code {
		t.Fatalf("latest while lagging: %v offset %d", kerr.ErrorForCode(p.ErrorCode), p.Offset)
	}
	if p := listOffset(t, e, 8, "lag", 0, -2, 0, -1); p.ErrorCode != 0 || p.Offset != 0 {
		t.Fatalf("earliest while lagging: %v %d", kerr.ErrorForCode(p.ErrorCode), p.Offset)
	}
}

func codeOf(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}
