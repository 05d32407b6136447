package group

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// fetchTopic is a topic of an OffsetFetch, with its partitions' answers.
type fetchTopic struct {
	topic      string
	partitions []fetchPartition
}

type fetchPartition struct {
	partition   int32
	offset      int64
	leaderEpoch int32
	metadata    string
	err         *kerr.Error
}

// handleOffsetFetch serves OffsetFetch v0-v9 (several groups from v8; all
// of a group's partitions when topics are null, from v2). Each group needs
// DESCRIBE (see fetchAuthorized).
func (c *Coordinator) handleOffsetFetch(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req := kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			var topics []fetchTopic
			if rg.Topics != nil {
				topics = make([]fetchTopic, 0, len(rg.Topics))
				for _, t := range rg.Topics {
					topics = append(topics, requested(t.Topic, t.Partitions))
				}
			}
			gerr, got, err := c.fetchAuthorized(ctx, rc, rg.Group, topics, req.RequireStable)
			if err != nil {
				return nil, err
			}
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			g.ErrorCode = errCode(gerr)
			for _, t := range got {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic = t.topic
				for _, p := range t.partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p.partition, p.offset, p.leaderEpoch, errCode(p.err)
					md := p.metadata
					rp.Metadata = &md
					rt.Partitions = append(rt.Partitions, rp)
				}
				g.Topics = append(g.Topics, rt)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}
	var topics []fetchTopic
	if req.Topics != nil || req.Version < 2 {
		topics = make([]fetchTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			topics = append(topics, requested(t.Topic, t.Partitions))
		}
	}
	gerr, got, err := c.fetchAuthorized(ctx, rc, req.Group, topics, req.Version >= 7 && req.RequireStable)
	if err != nil {
		return nil, err
	}
	if gerr != nil {
		if req.Version >= 2 {
			resp.ErrorCode = gerr.Code
			return resp, nil
		}
		// v0-v1 have no top-level error: every requested partition gets it.
		got = topics
		for i := range got {
			for j := range got[i].partitions {
				got[i].partitions[j].err = gerr
			}
		}
	}
	for _, t := range got {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.topic
		for _, p := range t.partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p.partition, p.offset, p.leaderEpoch, errCode(p.err)
			md := p.metadata
			rp.Metadata = &md
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// fetchAuthorized is fetchOffsets for a principal: the group needs DESCRIBE
// (GROUP_AUTHORIZATION_FAILED), a requested topic DESCRIBE (its partitions
// TOPIC_AUTHORIZATION_FAILED, not read), and a request for all the group's
// offsets leaves out the topics without it, as Kafka does. Answers keep
// the request's order.
func (c *Coordinator) fetchAuthorized(ctx context.Context, rc *wire.RequestContext, group string, topics []fetchTopic, requireStable bool) (*kerr.Error, []fetchTopic, error) {
	if !groupAllowed(rc, kmsg.ACLOperationDescribe, group) {
		return kerr.GroupAuthorizationFailed, nil, nil
	}
	rights := newTopicRights(rc, kmsg.ACLOperationDescribe)
	if topics == nil {
		gerr, got, err := c.fetchOffsets(ctx, group, nil, requireStable)
		if gerr != nil || err != nil {
			return gerr, got, err
		}
		return nil, slices.DeleteFunc(got, func(t fetchTopic) bool { return !rights.allowed(t.topic) }), nil
	}
	// Never nil: a nil list asks for every topic.
	allowed := make([]fetchTopic, 0, len(topics))
	for _, t := range topics {
		if rights.allowed(t.topic) {
			allowed = append(allowed, t)
		}
	}
	gerr, got, err := c.fetchOffsets(ctx, group, allowed, requireStable)
	if gerr != nil || err != nil || len(allowed) == len(topics) {
		return gerr, got, err
	}
	out := make([]fetchTopic, 0, len(topics))
	for _, t := range topics {
		if rights.allowed(t.topic) {
			out = append(out, got[0])
			got = got[1:]
			continue
		}
		r := fetchTopic{topic: t.topic, partitions: slices.Clone(t.partitions)}
		for i := range r.partitions {
			r.partitions[i].err = kerr.TopicAuthorizationFailed
		}
		out = append(out, r)
	}
	return nil, out, nil
}

// requested is a requested topic whose partitions are not answered yet.
func requested(topic string, partitions []int32) fetchTopic {
	t := fetchTopic{topic: topic}
	for _, p := range partitions {
		t.partitions = append(t.partitions, fetchPartition{partition: p, offset: -1, leaderEpoch: -1})
	}
	return t
}

// fetchOffsets answers the committed offsets of group for topics (nil: all
// the group has). A partition without a committed offset gets offset -1;
// with requireStable, a partition with an offset pending in an open
// transaction gets UNSTABLE_OFFSET_COMMIT.
func (c *Coordinator) fetchOffsets(ctx context.Context, group string, topics []fetchTopic, requireStable bool) (*kerr.Error, []fetchTopic, error) {
	var out []fetchTopic
	err := c.rt.Read(ctx, c.PartitionFor(group), func(s *shard) error {
		o := s.offsets[group]
		if topics == nil {
			out = allOffsets(o)
		} else {
			out = cloneTopics(topics)
		}
		if o == nil {
			return nil
		}
		for i := range out {
			for j := range out[i].partitions {
				p := &out[i].partitions[j]
				tp := TopicPartition{Topic: out[i].topic, Partition: p.partition}
				if requireStable && o.HasPending(tp) {
					p.err = kerr.UnstableOffsetCommit
					continue
				}
				if oc, ok := o.Get(tp); ok {
					p.offset, p.leaderEpoch, p.metadata = oc.Offset, oc.LeaderEpoch, oc.Metadata
				}
			}
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return kafkaError(err), nil, nil
	}
	return nil, out, nil
}

// allOffsets lists every committed partition of a group, sorted.
func allOffsets(o *Offsets) []fetchTopic {
	if o == nil {
		return nil
	}
	tps := o.Partitions()
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition) - int(b.Partition)
	})
	var out []fetchTopic
	for _, tp := range tps {
		if len(out) == 0 || out[len(out)-1].topic != tp.Topic {
			out = append(out, fetchTopic{topic: tp.Topic})
		}
		t := &out[len(out)-1]
		t.partitions = append(t.partitions, fetchPartition{partition: tp.Partition, offset: -1, leaderEpoch: -1})
	}
	return out
}

func cloneTopics(ts []fetchTopic) []fetchTopic {
	out := make([]fetchTopic, len(ts))
	for i, t := range ts {
		out[i] = fetchTopic{topic: t.topic, partitions: slices.Clone(t.partitions)}
	}
	return out
}
