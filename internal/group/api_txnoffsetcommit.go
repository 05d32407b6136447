package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleTxnOffsetCommit serves TxnOffsetCommit v0-v4: the offsets are
// written in the producer's transaction and count only once its COMMIT
// marker is written to the group's partition (CompleteTransaction). As in
// Kafka the transactional id needs WRITE (else every partition is
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then the group READ
// (GROUP_AUTHORIZATION_FAILED), then each topic READ.
func (c *Coordinator) handleTxnOffsetCommit(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req := kreq.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	var groupErr *kerr.Error
	switch {
	case !rc.Authorize(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, req.TransactionalID):
		groupErr = kerr.TransactionalIDAuthorizationFailed
	case !groupAllowed(rc, kmsg.ACLOperationRead, req.Group):
		groupErr = kerr.GroupAuthorizationFailed
	}
	topics := newTopicRights(rc, kmsg.ACLOperationRead)
	cr := commitRequest{
		group:      req.Group,
		memberID:   "",
		generation: -1,
		producer:   &coordinator.Producer{ID: req.ProducerID, Epoch: req.ProducerEpoch},
	}
	if req.Version >= 3 {
		cr.memberID, cr.generation, cr.instanceID = req.MemberID, req.Generation, deref(req.InstanceID)
	}
	now := c.cfg.Clock.Now().UnixMilli()
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			pc := partitionCommit{tp: TopicPartition{Topic: t.Topic, Partition: p.Partition}}
			pc.commit = OffsetCommit{Offset: p.Offset, LeaderEpoch: -1, Metadata: deref(p.Metadata), CommitTime: now, ExpireTime: -1}
			if req.Version >= 2 && p.LeaderEpoch >= 0 {
				pc.commit.LeaderEpoch = p.LeaderEpoch
			}
			pc.err = c.checkCommit(pc, groupErr, topics)
			cr.offsets = append(cr.offsets, pc)
		}
	}
	errs, err := c.commitOffsets(ctx, cr)
	if err != nil {
		return nil, err
	}
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = errCode(errs[i])
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
