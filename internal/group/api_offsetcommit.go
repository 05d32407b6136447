package group

import (
	"context"
	"slices"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/wire"
)

// commitRequest is an OffsetCommit or TxnOffsetCommit reduced to what the
// shard needs.
type commitRequest struct {
	group      string
	memberID   string
	instanceID string
	generation int32
	producer   *coordinator.Producer // TxnOffsetCommit
	offsets    []partitionCommit
}

// partitionCommit is one partition of a commit with its own error (unknown
// topic, metadata too large), nil when it is to be written.
type partitionCommit struct {
	tp     TopicPartition
	commit OffsetCommit
	err    *kerr.Error
}

// handleOffsetCommit serves OffsetCommit v0-v9. The group needs READ (else
// every partition is GROUP_AUTHORIZATION_FAILED) and so does each topic.
func (c *Coordinator) handleOffsetCommit(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req := kreq.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	cr := commitRequest{group: req.Group, memberID: req.MemberID, generation: req.Generation, instanceID: deref(req.InstanceID)}
	if req.Version == 0 {
		cr.memberID, cr.generation = "", -1
	}
	now := c.cfg.Clock.Now().UnixMilli()
	var groupErr *kerr.Error
	if !groupAllowed(rc, kmsg.ACLOperationRead, req.Group) {
		groupErr = kerr.GroupAuthorizationFailed
	}
	topics := newTopicRights(rc, kmsg.ACLOperationRead)
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			pc := partitionCommit{tp: TopicPartition{Topic: t.Topic, Partition: p.Partition}}
			pc.commit = OffsetCommit{Offset: p.Offset, LeaderEpoch: -1, Metadata: deref(p.Metadata), CommitTime: now, ExpireTime: -1}
			if req.Version >= 6 && p.LeaderEpoch >= 0 {
				pc.commit.LeaderEpoch = p.LeaderEpoch
			}
			if req.Version == 1 && p.Timestamp != -1 {
				pc.commit.CommitTime = p.Timestamp
			}
			if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
				pc.commit.ExpireTime = now + req.RetentionTimeMillis
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
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = errCode(errs[i])
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// checkCommit returns the partition's own error: the group's authorization
// error (groupErr), the topic's (without READ), an unknown topic or
// partition, or metadata longer than offset.metadata.max.bytes (counted in
// UTF-16 code units, as Kafka's String.length does).
func (c *Coordinator) checkCommit(pc partitionCommit, groupErr *kerr.Error, topics *topicRights) *kerr.Error {
	if groupErr != nil {
		return groupErr
	}
	if !topics.allowed(pc.tp.Topic) {
		return kerr.TopicAuthorizationFailed
	}
	if c.meta != nil {
		t, ok := c.meta.Image().Topic(pc.tp.Topic)
		if !ok {
			return kerr.UnknownTopicOrPartition
		}
		if _, ok := t.Partition(pc.tp.Partition); !ok {
			return kerr.UnknownTopicOrPartition
		}
	}
	if utf16Len(pc.commit.Metadata) > c.cfg.OffsetMetadataMaxBytes {
		return kerr.OffsetMetadataTooLarge
	}
	return nil
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// commitOffsets validates a commit against the group and writes the
// partitions without their own error; it returns each partition's error in
// request order. A commit without such a partition (all refused or
// unknown, or none) does not reach the group, as in Kafka: it neither
// creates the group nor checks the membership.
func (c *Coordinator) commitOffsets(ctx context.Context, cr commitRequest) ([]*kerr.Error, error) {
	if !slices.ContainsFunc(cr.offsets, func(pc partitionCommit) bool { return pc.err == nil }) {
		errs := make([]*kerr.Error, len(cr.offsets))
		for i, pc := range cr.offsets {
			errs[i] = pc.err
		}
		return errs, nil
	}
	fail := func(err error) Reply { return Reply{Err: offsetStoreError(err)} }
	rep, err := c.call(ctx, c.PartitionFor(cr.group), fail, func(id RequestID) coordinator.Op[*shard] {
		return func(s *shard) (coordinator.Result, error) { return s.commitOffsets(id, cr), nil }
	})
	if err != nil {
		return nil, err
	}
	errs := make([]*kerr.Error, len(cr.offsets))
	for i, pc := range cr.offsets {
		errs[i] = pc.err
		if errs[i] == nil {
			errs[i] = rep.Err
		}
	}
	return errs, nil
}

// commitOffsets is the shard side of a commit: the membership check, then
// one batch of offset records, applied once committed.
func (s *shard) commitOffsets(id RequestID, cr commitRequest) coordinator.Result {
	now := s.now()
	txn := cr.producer != nil
	g := s.group(cr.group)
	if g == nil {
		if cr.generation >= 0 && !txn {
			// A member of a generation the coordinator does not know.
			return s.answer(Reply{Request: id, Err: kerr.IllegalGeneration})
		}
		g = NewGroup(cr.group, now)
	}
	tr := g.Handle(now, &s.c.machine, CommitEvent{
		Request: id, MemberID: cr.memberID, InstanceID: cr.instanceID, Generation: cr.generation, Transactional: txn,
	})
	for _, r := range tr.Replies {
		if r.Request == id && r.Err != nil {
			return s.answer(r)
		}
	}
	var recs []coordinator.Record
	var written []partitionCommit
	for _, pc := range cr.offsets {
		if pc.err != nil {
			continue
		}
		recs = append(recs, coordinator.Record{Key: EncodeOffsetKey(cr.group, pc.tp), Value: EncodeOffsetValue(pc.commit)})
		written = append(written, pc)
	}
	var producer int64 = -1
	if txn {
		producer = cr.producer.ID
	}
	res := coordinator.Result{
		Records:  recs,
		Producer: cr.producer,
		Apply: func(base int64) {
			for i, pc := range written {
				s.applyOffset(cr.group, pc.tp, pc.commit, base+int64(i), txn, producer)
			}
			s.install(cr.group, tr)
		},
	}
	return res
}
