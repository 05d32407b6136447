package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleDeleteRecords serves DeleteRecords v0–v2: on each partition this
// node leads, the log start offset moves up to the requested offset (-1:
// the high watermark; beyond it is OFFSET_OUT_OF_RANGE) and the response
// carries the new low watermark. Internal topics and topics without the
// delete cleanup policy refuse it. With followers, the low watermark is the
// leader's; waiting for followers to follow comes with replication.
func (b *Broker) handleDeleteRecords(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.DeleteRecordsRequest)
	if !ok {
		return nil, requestTypeError("DeleteRecords", kreq)
	}
	img := b.image()
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LowWatermark = -1
			tp := storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			var err error
			switch _, _, known := currentLeader(img, tp); {
			case !known:
				err = errf(kerr.UnknownTopicOrPartition, "partition %s does not exist", tp)
			case isInternalTopic(t.Topic):
				err = errf(kerr.InvalidTopicException, "cannot delete records of internal topic %s", t.Topic)
			default:
				part, local := b.rm.Partition(tp)
				if !local {
					err = errf(kerr.NotLeaderForPartition, "broker %d does not host %s", b.cfg.NodeID, tp)
					break
				}
				rp.LowWatermark, err = part.deleteRecords(p.Offset)
			}
			if err != nil {
				rp.ErrorCode, rp.LowWatermark = errorCode(err), -1
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
