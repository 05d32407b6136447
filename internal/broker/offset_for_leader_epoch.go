package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleOffsetForLeaderEpoch serves OffsetForLeaderEpoch v0–v4: for each
// partition this node leads, the largest leader epoch at or below the
// requested one that its epoch cache knows and the offset where that epoch
// ends (the log end offset for the current epoch); -1/-1 for an epoch it
// cannot answer. CurrentLeaderEpoch (v2+) is fenced as for Fetch. As in
// Kafka, CLUSTER_ACTION (a follower) allows every topic and otherwise each
// topic needs DESCRIBE (a consumer checking for truncation, KIP-320).
func (b *Broker) handleOffsetForLeaderEpoch(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.OffsetForLeaderEpochRequest)
	if !ok {
		return nil, requestTypeError("OffsetForLeaderEpoch", kreq)
	}
	img := b.image()
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	topics := replicaTopicAuthz(rc, false, kmsg.ACLOperationDescribe)
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition = p.Partition
			current := int32(-1)
			if req.Version >= 2 {
				current = p.CurrentLeaderEpoch
			}
			tp := storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			var err error
			if !topics.allowed(t.Topic) {
				err = errTopicAuthz
			} else if _, _, known := currentLeader(img, tp); !known {
				err = errf(kerr.UnknownTopicOrPartition, "partition %s does not exist", tp)
			} else if part, local := b.rm.Partition(tp); !local {
				err = errf(kerr.NotLeaderForPartition, "broker %d does not host %s", b.cfg.NodeID, tp)
			} else {
				rp.LeaderEpoch, rp.EndOffset, err = part.epochEndOffset(current, p.LeaderEpoch)
			}
			if err != nil {
				rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = errorCode(err), -1, -1
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
