package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleDeleteRecords serves DeleteRecords v0–v2: on each partition this
// node leads, the log start offset moves up to the requested offset (-1:
// the high watermark; beyond it is OFFSET_OUT_OF_RANGE). Internal topics
// and topics without the delete cleanup policy refuse it. As in Kafka's
// DelayedDeleteRecords, the answer waits (up to the request's timeout,
// then REQUEST_TIMED_OUT) until the partition's low watermark — the least
// log start offset of the leader and its ISR followers, which follow the
// leader's through their fetches — has reached the new log start, and
// carries that low watermark. Each topic needs DELETE
// (TOPIC_AUTHORIZATION_FAILED otherwise).
func (b *Broker) handleDeleteRecords(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.DeleteRecordsRequest)
	if !ok {
		return nil, requestTypeError("DeleteRecords", kreq)
	}
	img := b.image()
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	type pending struct {
		rp       *kmsg.DeleteRecordsResponseTopicPartition
		part     *Partition
		required int64
	}
	var waits []pending
	topics := newTopicAuthz(rc, kmsg.ACLOperationDelete)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.LowWatermark = -1
			tp := storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			var err error
			var part *Partition
			switch _, _, known := currentLeader(img, tp); {
			case !topics.allowed(t.Topic):
				err = errTopicAuthz
			case !known:
				err = errf(kerr.UnknownTopicOrPartition, "partition %s does not exist", tp)
			case isInternalTopic(t.Topic):
				err = errf(kerr.InvalidTopicException, "cannot delete records of internal topic %s", t.Topic)
			default:
				var local bool
				part, local = b.rm.Partition(tp)
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
	// Pointers into the response only once it is fully built.
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			rp := &resp.Topics[i].Partitions[j]
			if rp.ErrorCode != 0 {
				continue
			}
			part, _ := b.rm.Partition(storage.TopicPartition{Topic: resp.Topics[i].Topic, Partition: rp.Partition})
			if part != nil {
				waits = append(waits, pending{rp: rp, part: part, required: rp.LowWatermark})
			}
		}
	}
	if len(waits) == 0 {
		return resp, nil
	}
	ns := make([]*notifier, len(waits))
	for i, w := range waits {
		ns[i] = &w.part.notify
	}
	done := make([]bool, len(waits))
	cond := func() bool {
		all := true
		for i, w := range waits {
			if done[i] {
				continue
			}
			low, err := w.part.lowWatermark()
			switch {
			case err != nil:
				w.rp.ErrorCode, w.rp.LowWatermark, done[i] = errorCode(err), -1, true
			case low >= w.required:
				w.rp.LowWatermark, done[i] = low, true
			default:
				all = false
			}
		}
		return all
	}
	deadline := time.Now().Add(time.Duration(max(req.TimeoutMillis, 0)) * time.Millisecond)
	if waitUntil(ctx, b.closing, deadline, ns, cond) != waitDone {
		for i, w := range waits {
			if !done[i] {
				w.rp.ErrorCode, w.rp.LowWatermark = kerr.RequestTimedOut.Code, -1
			}
		}
	}
	return resp, nil
}
