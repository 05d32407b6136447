package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleOffsetDelete serves OffsetDelete v0: an Empty group's offsets go; a
// consumer group with members keeps the offsets of topics it subscribes to
// (GROUP_SUBSCRIBED_TO_TOPIC); other groups with members refuse
// (NON_EMPTY_GROUP). As in Kafka the group needs DELETE (a top-level
// GROUP_AUTHORIZATION_FAILED) and each topic READ
// (TOPIC_AUTHORIZATION_FAILED on its partitions, which keep their offsets).
func (c *Coordinator) handleOffsetDelete(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req := kreq.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if !groupAllowed(rc, kmsg.ACLOperationDelete, req.Group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	topics := newTopicRights(rc, kmsg.ACLOperationRead)
	errs := map[TopicPartition]*kerr.Error{}
	var candidates []TopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tp := TopicPartition{Topic: t.Topic, Partition: p.Partition}
			if !topics.allowed(t.Topic) {
				errs[tp] = kerr.TopicAuthorizationFailed
				continue
			}
			if c.meta != nil {
				if ti, ok := c.meta.Image().Topic(t.Topic); !ok {
					errs[tp] = kerr.UnknownTopicOrPartition
					continue
				} else if _, ok := ti.Partition(p.Partition); !ok {
					errs[tp] = kerr.UnknownTopicOrPartition
					continue
				}
			}
			candidates = append(candidates, tp)
		}
	}
	group := req.Group
	rep, err := c.call(ctx, c.PartitionFor(group), func(err error) Reply { return Reply{Err: offsetStoreError(err)} },
		func(rid RequestID) coordinator.Op[*shard] {
			return func(s *shard) (coordinator.Result, error) {
				gerr, perrs, res := s.deleteOffsets(group, candidates)
				if gerr != nil {
					return s.answer(Reply{Request: rid, Err: gerr}), nil
				}
				for tp, e := range perrs {
					errs[tp] = e
				}
				apply := res.Apply
				res.Apply = func(base int64) {
					apply(base)
					s.c.waiters.deliver(Reply{Request: rid})
				}
				return res, nil
			}
		})
	if err != nil {
		return nil, err
	}
	if rep.Err != nil {
		resp.ErrorCode = rep.Err.Code
		return resp, nil
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = errCode(errs[TopicPartition{Topic: t.Topic, Partition: p.Partition}])
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// deleteOffsets decides an OffsetDelete: a group-level error, or the
// partitions refused and the write removing the others.
func (s *shard) deleteOffsets(group string, tps []TopicPartition) (*kerr.Error, map[TopicPartition]*kerr.Error, coordinator.Result) {
	g := s.group(group)
	if g == nil || g.State() == Dead {
		return kerr.GroupIDNotFound, nil, coordinator.Result{}
	}
	perrs := map[TopicPartition]*kerr.Error{}
	var eligible []TopicPartition
	switch {
	case g.State() == Empty:
		eligible = tps
	case g.ProtocolType() == ConsumerProtocolType:
		for _, tp := range tps {
			if g.IsSubscribedTo(tp.Topic) {
				perrs[tp] = kerr.GroupSubscribedToTopic
			} else {
				eligible = append(eligible, tp)
			}
		}
	default:
		return kerr.NonEmptyGroup, nil, coordinator.Result{}
	}
	var present []TopicPartition
	if o := s.offsets[group]; o != nil {
		for _, tp := range eligible {
			if _, ok := o.Get(tp); ok {
				present = append(present, tp)
			}
		}
	}
	return nil, perrs, s.cleanup([]removal{s.removalOf(group, present)})
}
