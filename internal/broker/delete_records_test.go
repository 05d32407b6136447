package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func deleteRecords(t *testing.T, e *env, topic string, p int32, offset int64) kmsg.DeleteRecordsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.Version, req.TimeoutMillis = 2, 1000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = p, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return e.call(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
}

func TestDeleteRecords(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("dr", 1, nil)
	e.createTopic("compacted", 1, map[string]string{"cleanup.policy": "compact"})
	e.createTopicWith(offsetsTopic, 1, 1, []int32{1}, []int32{1}, nil)
	for i := 0; i < 5; i++ {
		e.mustProduce("dr", 0, makeBatch(t, plainBatch(), "v"))
	}
	if p := deleteRecords(t, e, "dr", 0, 2); p.ErrorCode != 0 || p.LowWatermark != 2 {
		t.Fatalf("delete before 2: %v low %d", kerr.ErrorForCode(p.ErrorCode), p.LowWatermark)
	}
	if p := listOffset(t, e, 8, "dr", 0, -2, 0, -1); p.Offset != 2 {
		t.Fatalf("earliest after delete: %d", p.Offset)
	}
	if p := onlyPartition(t, decodeFetch(t, e.call(fetchReq(12, fp("dr", 0, 1))))); p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch below the new log start: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	p := onlyPartition(t, decodeFetch(t, e.call(fetchReq(12, fp("dr", 0, 2)))))
	if p.LogStartOffset != 2 {
		t.Fatalf("fetch log start %d", p.LogStartOffset)
	}
	if p := deleteRecords(t, e, "dr", 0, 6); p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LowWatermark != -1 {
		t.Fatalf("beyond the high watermark: %v low %d", kerr.ErrorForCode(p.ErrorCode), p.LowWatermark)
	}
	if p := deleteRecords(t, e, "dr", 0, -1); p.ErrorCode != 0 || p.LowWatermark != 5 {
		t.Fatalf("delete to the high watermark: %v low %d", kerr.ErrorForCode(p.ErrorCode), p.LowWatermark)
	}
	if p := deleteRecords(t, e, "dr", 0, 3); p.ErrorCode != 0 || p.LowWatermark != 5 {
		t.Fatalf("delete below the log start: %v low %d", kerr.ErrorForCode(p.ErrorCode), p.LowWatermark)
	}
	if p := deleteRecords(t, e, "compacted", 0, -1); p.ErrorCode != kerr.PolicyViolation.Code {
		t.Fatalf("compacted topic: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	if p := deleteRecords(t, e, offsetsTopic, 0, -1); p.ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("internal topic: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	if p := deleteRecords(t, e, "missing", 0, -1); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic: %v", kerr.ErrorForCode(p.ErrorCode))
	}
}
