package txn

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/readonly"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleAddPartitionsToTxn serves AddPartitionsToTxn: v0-v3 from producers
// (one transaction; every partition gets the same answer), v4+ from
// brokers (a batch of transactions, each either added or only verified:
// KIP-890). Partitions of topics that do not exist are answered
// UNKNOWN_TOPIC_OR_PARTITION and the others of the same transaction
// OPERATION_NOT_ATTEMPTED, without touching the transaction, as Kafka does;
// partitions of a mirrored (read-only) topic are answered
// INVALID_TOPIC_EXCEPTION the same way.
//
// A producer's request needs WRITE on its transactional id (every
// partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each topic
// (TOPIC_AUTHORIZATION_FAILED, the rest OPERATION_NOT_ATTEMPTED); a
// broker's (v4+) needs CLUSTER_ACTION, without which the whole answer is
// CLUSTER_AUTHORIZATION_FAILED, and its partitions are not checked again:
// the broker checked its producer's rights on Produce.
func (c *Coordinator) handleAddPartitionsToTxn(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.AddPartitionsToTxnRequest)
	if !ok {
		return nil, fmt.Errorf("AddPartitionsToTxn handler got %T", kreq)
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		tps := requestPartitions(req.Topics)
		var codes map[storage.TopicPartition]int16
		if refused, ok := authorizeAddPartitions(rc, req.TransactionalID, tps); ok {
			codes = c.addPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, tps, req.Version)
		} else {
			codes = refused
		}
		for _, t := range groupByTopic(tps) {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.topic
			for _, p := range t.partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition = p
				rp.ErrorCode = codes[storage.TopicPartition{Topic: t.topic, Partition: p}]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	if !rc.AuthorizeCluster(kmsg.ACLOperationClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	for _, t := range req.Transactions {
		var tps []storage.TopicPartition
		for _, rt := range t.Topics {
			for _, p := range rt.Partitions {
				tps = append(tps, storage.TopicPartition{Topic: rt.Topic, Partition: p})
			}
		}
		tps = sortedPartitions(tps)
		var codes map[storage.TopicPartition]int16
		if t.VerifyOnly {
			codes = c.verifyCodes(ctx, t.TransactionalID, t.ProducerID, t.ProducerEpoch, tps, req.Version)
		} else {
			codes = c.addPartitions(ctx, t.TransactionalID, t.ProducerID, t.ProducerEpoch, tps, req.Version)
		}
		rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rtx.TransactionalID = t.TransactionalID
		for _, g := range groupByTopic(tps) {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = g.topic
			for _, p := range g.partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition = p
				rp.ErrorCode = codes[storage.TopicPartition{Topic: g.topic, Partition: p}]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rtx.Topics = append(rtx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rtx)
	}
	return resp, nil
}

// authorizeAddPartitions checks a producer's AddPartitionsToTxn: ok when
// the principal may write the transactional id and every topic; otherwise
// the answer of every partition.
func authorizeAddPartitions(rc *wire.RequestContext, id string, tps []storage.TopicPartition) (map[storage.TopicPartition]int16, bool) {
	codes := make(map[storage.TopicPartition]int16, len(tps))
	if !txnIDAllowed(rc, kmsg.ACLOperationWrite, id) {
		for _, tp := range tps {
			codes[tp] = kerr.TransactionalIDAuthorizationFailed.Code
		}
		return codes, false
	}
	allowed := topicsAllowed(rc, kmsg.ACLOperationWrite, tps)
	refused := false
	for _, tp := range tps {
		if !allowed[tp.Topic] {
			codes[tp] = kerr.TopicAuthorizationFailed.Code
			refused = true
		}
	}
	if !refused {
		return nil, true
	}
	for _, tp := range tps {
		if codes[tp] == 0 {
			codes[tp] = kerr.OperationNotAttempted.Code
		}
	}
	return codes, false
}

// addPartitions adds tps to the transaction and returns each partition's
// error code.
func (c *Coordinator) addPartitions(ctx context.Context, id string, pid int64, epoch int16, tps []storage.TopicPartition, version int16) map[storage.TopicPartition]int16 {
	codes := make(map[storage.TopicPartition]int16, len(tps))
	all := func(err *kerr.Error) map[storage.TopicPartition]int16 {
		for _, tp := range tps {
			codes[tp] = errCode(err)
		}
		return codes
	}
	if id == "" {
		return all(kerr.InvalidRequest)
	}
	if c.deps.Metadata != nil {
		img := c.deps.Metadata.Image()
		missing := false
		for _, tp := range tps {
			if _, exists := partitionLeader(img, tp.Topic, tp.Partition); !exists {
				codes[tp] = kerr.UnknownTopicOrPartition.Code
				missing = true
				continue
			}
			// A mirrored or paused topic is read-only (package
			// readonly): its partitions join no transaction. A failing
			// over one does; its produces wait until it is STOPPED.
			raw, _ := img.Config(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: tp.Topic}, metadata.MirrorNameConfig)
			if _, m := wire.ParseMirrorName(raw); m == wire.MembershipMirroring || m == wire.MembershipPaused {
				err := readonly.Refusal(tp.Topic, raw, "adding a partition to a transaction", kerr.InvalidTopicException)
				c.log.Info("partition refused by AddPartitionsToTxn", "transactional_id", id, "topic", tp.Topic, "partition", tp.Partition, "reason", err)
				codes[tp] = kerr.InvalidTopicException.Code
				missing = true
			}
		}
		if missing {
			for _, tp := range tps {
				if codes[tp] == 0 {
					codes[tp] = kerr.OperationNotAttempted.Code
				}
			}
			return codes
		}
	}
	tr, err := c.run(ctx, id, AddPartitionsEvent{
		TransactionalID: id, ProducerID: pid, ProducerEpoch: epoch, Partitions: tps, Now: c.nowMs(),
	})
	if err != nil {
		return all(writeError(err))
	}
	return all(oldFenced(tr.Err, version, 2))
}

// verifyCodes answers a broker's verification of tps (AddPartitionsToTxn
// VerifyOnly). Partitions outside the transaction are
// TRANSACTION_ABORTABLE from v5 and INVALID_TXN_STATE before, which older
// brokers pass on to producers.
func (c *Coordinator) verifyCodes(ctx context.Context, id string, pid int64, epoch int16, tps []storage.TopicPartition, version int16) map[storage.TopicPartition]int16 {
	codes := make(map[storage.TopicPartition]int16, len(tps))
	top, per, err := c.verify(ctx, id, pid, epoch, tps)
	if err != nil {
		top = kafkaError(err)
	}
	for i, tp := range tps {
		e := top
		if e == nil && per != nil {
			e = per[i]
		}
		if e == kerr.TransactionAbortable && version < 5 {
			e = kerr.InvalidTxnState
		}
		codes[tp] = errCode(e)
	}
	return codes
}

// requestPartitions returns the partitions of a v0-v3 request, sorted and
// without duplicates.
func requestPartitions(topics []kmsg.AddPartitionsToTxnRequestTopic) []storage.TopicPartition {
	var tps []storage.TopicPartition
	for _, t := range topics {
		for _, p := range t.Partitions {
			tps = append(tps, storage.TopicPartition{Topic: t.Topic, Partition: p})
		}
	}
	return sortedPartitions(tps)
}

type topicPartitions struct {
	topic      string
	partitions []int32
}

// groupByTopic groups sorted partitions by topic.
func groupByTopic(tps []storage.TopicPartition) []topicPartitions {
	var out []topicPartitions
	for _, tp := range tps {
		if n := len(out); n == 0 || out[n-1].topic != tp.Topic {
			out = append(out, topicPartitions{topic: tp.Topic})
		}
		last := &out[len(out)-1]
		last.partitions = append(last.partitions, tp.Partition)
	}
	return out
}
