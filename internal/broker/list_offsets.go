package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// ListOffsets replica ids with a meaning of their own.
const (
	consumerReplicaID  = -1
	debuggingReplicaID = -2
)

// handleListOffsets serves ListOffsets v1–v8: -1 is the latest offset a
// consumer may read (the high watermark, or the last stable offset for
// READ_COMMITTED), -2 the log start offset, -3 the record with the largest
// timestamp, -4 the log start offset (earliest local), any other value the
// first offset whose timestamp is at or after it; each answer carries the
// leader epoch of that offset. A partition listed twice is INVALID_REQUEST.
// A consumer needs DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED
// otherwise); a follower (a replica id) CLUSTER_ACTION, since it is told
// the log end offset rather than the high watermark.
func (b *Broker) handleListOffsets(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.ListOffsetsRequest)
	if !ok {
		return nil, requestTypeError("ListOffsets", kreq)
	}
	img := b.image()
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	count := map[storage.TopicPartition]int{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			count[storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}]++
		}
	}
	consumer := req.ReplicaID == consumerReplicaID
	committed := req.Version >= 2 && req.IsolationLevel == 1
	requireLeader := req.ReplicaID != debuggingReplicaID
	topics := replicaTopicAuthz(rc, req.ReplicaID >= 0, kmsg.ACLOperationDescribe)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			tp := storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			current := int32(-1)
			if req.Version >= 4 {
				current = p.CurrentLeaderEpoch
			}
			switch {
			case !topics.allowed(t.Topic):
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case count[tp] > 1:
				rp.ErrorCode = kerr.InvalidRequest.Code
			default:
				to, found, err := b.listOffset(img, tp, p.Timestamp, consumer, committed, current, requireLeader)
				rp.ErrorCode = errorCode(err)
				if err == nil && found {
					rp.Timestamp, rp.Offset, rp.LeaderEpoch = to.Timestamp, to.Offset, to.LeaderEpoch
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (b *Broker) listOffset(img *metadata.Image, tp storage.TopicPartition, ts int64, consumer, committed bool, current int32, requireLeader bool) (storage.TimestampOffset, bool, error) {
	t, ok := img.Topic(tp.Topic)
	if !ok {
		return storage.TimestampOffset{}, false, errf(kerr.UnknownTopicOrPartition, "topic %s does not exist", tp.Topic)
	}
	if _, ok := t.Partition(tp.Partition); !ok {
		return storage.TimestampOffset{}, false, errf(kerr.UnknownTopicOrPartition, "partition %s does not exist", tp)
	}
	p, ok := b.rm.Partition(tp)
	if !ok {
		return storage.TimestampOffset{}, false, errf(kerr.NotLeaderForPartition, "broker %d does not host %s", b.cfg.NodeID, tp)
	}
	return p.offsetForTimestamp(ts, consumer, committed, current, requireLeader)
}
