package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleDescribeProducers serves DescribeProducers v0: the active
// producers of each requested partition this node leads, with their epoch,
// last sequence and timestamp, coordinator epoch and the start of their
// ongoing transaction. Each topic needs READ (TOPIC_AUTHORIZATION_FAILED
// otherwise), as in Kafka.
func (b *Broker) handleDescribeProducers(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.DescribeProducersRequest)
	if !ok {
		return nil, requestTypeError("DescribeProducers", kreq)
	}
	img := b.image()
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	topics := newTopicAuthz(rc, kmsg.ACLOperationRead)
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeProducersResponseTopic()
		rt.Topic = t.Topic
		for _, pid := range t.Partitions {
			rp := kmsg.NewDescribeProducersResponseTopicPartition()
			rp.Partition = pid
			tp := storage.TopicPartition{Topic: t.Topic, Partition: pid}
			var err error
			if !topics.allowed(t.Topic) {
				err = errTopicAuthz
			} else if _, _, known := currentLeader(img, tp); !known {
				err = errf(kerr.UnknownTopicOrPartition, "partition %s does not exist", tp)
			} else if part, local := b.rm.Partition(tp); !local {
				err = errf(kerr.NotLeaderForPartition, "broker %d does not host %s", b.cfg.NodeID, tp)
			} else {
				rp.ActiveProducers, err = part.activeProducers()
			}
			if err != nil {
				rp.ErrorCode, rp.ErrorMessage = errorCode(err), errorMessage(err)
			}
			if rp.ActiveProducers == nil {
				rp.ActiveProducers = []kmsg.DescribeProducersResponseTopicPartitionActiveProducer{}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// activeProducers lists the partition's producer state as its leader.
func (p *Partition) activeProducers() ([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	log, err := p.localLogLocked(-1, true)
	if err != nil {
		return nil, err
	}
	var out []kmsg.DescribeProducersResponseTopicPartitionActiveProducer
	for _, e := range log.ActiveProducers() {
		ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
		ap.ProducerID = e.ProducerID
		ap.ProducerEpoch = int32(e.ProducerEpoch)
		if n := len(e.Batches); n > 0 {
			ap.LastSequence = e.Batches[n-1].LastSeq
		}
		ap.LastTimestamp = e.LastTimestamp
		ap.CoordinatorEpoch = e.CoordinatorEpoch
		ap.CurrentTxnStartOffset = e.CurrentTxnFirstOffset
		out = append(out, ap)
	}
	return out, nil
}
