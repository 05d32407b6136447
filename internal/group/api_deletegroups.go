package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleDeleteGroups serves DeleteGroups v0-v2: an Empty group is deleted
// with all its offsets; a group with members is not (NON_EMPTY_GROUP).
// Each group needs DELETE (GROUP_AUTHORIZATION_FAILED).
func (c *Coordinator) handleDeleteGroups(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		if !groupAllowed(rc, kmsg.ACLOperationDelete, id) {
			r := kmsg.NewDeleteGroupsResponseGroup()
			r.Group, r.ErrorCode = id, kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, r)
			continue
		}
		rep, err := c.call(ctx, c.PartitionFor(id), func(err error) Reply { return Reply{Err: offsetStoreError(err)} },
			func(rid RequestID) coordinator.Op[*shard] {
				return func(s *shard) (coordinator.Result, error) { return s.deleteGroup(rid, id), nil }
			})
		if err != nil {
			return nil, err
		}
		r := kmsg.NewDeleteGroupsResponseGroup()
		r.Group = id
		r.ErrorCode = errCode(rep.Err)
		resp.Groups = append(resp.Groups, r)
	}
	return resp, nil
}

// deleteGroup removes an Empty group, its offsets (committed, and pending
// in open transactions) and its metadata.
func (s *shard) deleteGroup(id RequestID, group string) coordinator.Result {
	g := s.group(group)
	if g == nil {
		return s.answer(Reply{Request: id, Err: kerr.GroupIDNotFound})
	}
	tr := g.Handle(s.now(), &s.c.machine, DeleteEvent{Request: id})
	if r := tr.Replies[0]; r.Err != nil {
		return s.answer(r)
	}
	var tps []TopicPartition
	if o := s.offsets[group]; o != nil {
		tps = o.Partitions()
	}
	res := s.cleanup([]removal{{group: group, offsets: tps}})
	recs := res.Records
	if g.Generation() > 0 {
		recs = append(recs, coordinator.Record{Key: EncodeGroupKey(group)})
	}
	res.Records = recs
	apply := res.Apply
	res.Apply = func(base int64) {
		apply(base)
		if o := s.offsets[group]; o != nil {
			for pid := range o.pending {
				if gs := s.txnGroups[pid]; gs != nil {
					delete(gs, group)
					if len(gs) == 0 {
						delete(s.txnGroups, pid)
					}
				}
			}
			delete(s.offsets, group)
		}
		s.install(group, tr)
	}
	return res
}
