package mirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/storage"
)

// The consumer group offset sync. For every group of the source that the
// mirror's groups / groups.exclude select, the offsets it committed on the
// mirrored topics are committed here too, so that after a failover the
// group resumes where it was. Rules:
//   - only groups without active members here: the commit is a standalone
//     one (no member, generation -1), which the group's coordinator allows
//     only while the group is Empty (or does not exist yet), atomically
//     with the commit — a consumer that joined meanwhile wins;
//   - the offset is clamped into this cluster's valid range,
//     max(logStart, min(highWatermark, sourceCommitted)): while the mirror
//     lags, the group is placed at what this cluster has, never past it;
//   - the committed leader epoch is carried over when the offset is the
//     source's (the mirrored log holds the source's epochs), -1 when it was
//     clamped (the record at the clamped offset may be of another epoch);
//   - the metadata string is carried over;
//   - nothing is written when this cluster already has that offset and
//     epoch.

// syncedOffset is a committed offset as the sync moves it.
type syncedOffset struct {
	offset   int64
	epoch    int32
	metadata string
}

// clampOffset places a source commit into a destination partition's range.
func clampOffset(src syncedOffset, r offsetRange) syncedOffset {
	out := src
	out.offset = max(r.start, min(r.end, src.offset))
	if out.offset != src.offset {
		out.epoch = -1
	}
	return out
}

// groupPlan is what the sync commits for one group.
type groupPlan map[storage.TopicPartition]syncedOffset

// syncGroupOffsets copies the selected groups' offsets of the mirrored
// topics.
func (s *mirrorSync) syncGroupOffsets(ctx context.Context, rd syncRound) error {
	if len(rd.topics) == 0 {
		return nil
	}
	adm := kadm.NewClient(rd.cl)
	listed, err := adm.ListGroups(ctx)
	if err != nil && len(listed) == 0 {
		return fmt.Errorf("list the source's groups: %w", err)
	}
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("list the source's groups: %w", err))
	}
	var groups []string
	for g := range listed {
		if rd.cfg.SyncsGroup(g) {
			groups = append(groups, g)
		}
	}
	slices.Sort(groups)
	if len(groups) == 0 {
		return errJoin(errs)
	}
	fetched := adm.FetchManyOffsets(ctx, groups...)
	plans := map[string]groupPlan{}
	var tps []storage.TopicPartition
	seen := map[storage.TopicPartition]bool{}
	for _, g := range groups {
		f, ok := fetched[g]
		if !ok {
			continue
		}
		if f.Err != nil {
			if !errors.Is(f.Err, kerr.GroupIDNotFound) {
				errs = append(errs, fmt.Errorf("offsets of group %q on the source: %w", g, f.Err))
			}
			continue
		}
		plan := groupPlan{}
		for _, t := range rd.topics {
			dest, ok := rd.img.Topic(t)
			if !ok {
				continue
			}
			for p, o := range f.Fetched[t] {
				if o.Err != nil || o.At < 0 {
					continue
				}
				if _, ok := dest.Partition(p); !ok {
					continue // added on the source, not here yet
				}
				tp := storage.TopicPartition{Topic: t, Partition: p}
				plan[tp] = syncedOffset{offset: o.At, epoch: o.LeaderEpoch, metadata: o.Metadata}
				if !seen[tp] {
					seen[tp] = true
					tps = append(tps, tp)
				}
			}
		}
		if len(plan) > 0 {
			plans[g] = plan
		}
	}
	if len(plans) == 0 {
		return errJoin(errs)
	}
	ranges, err := s.r.destOffsetRanges(ctx, rd.img, tps)
	if err != nil {
		errs = append(errs, err)
	}
	names := slices.Sorted(maps.Keys(plans))
	coords, err := s.r.groupCoordinators(ctx, rd.img, names)
	if err != nil {
		errs = append(errs, err)
	}
	byCoord := map[int32][]string{}
	for _, g := range names {
		if c, ok := coords[g]; ok {
			byCoord[c] = append(byCoord[c], g)
		}
	}
	for coord, gs := range byCoord {
		for _, g := range gs {
			plan := groupPlan{}
			for tp, o := range plans[g] {
				if r, ok := ranges[tp]; ok {
					plan[tp] = clampOffset(o, r)
				}
			}
			if len(plan) == 0 {
				continue
			}
			if err := s.syncGroup(ctx, rd.img, coord, g, plan); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errJoin(errs)
}

// syncGroup commits plan for group g at its coordinator, unless the group
// has members here or already has those offsets.
func (s *mirrorSync) syncGroup(ctx context.Context, img *metadata.Image, coord int32, g string, plan groupPlan) error {
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Version = 5
	dreq.Groups = []string{g}
	resp, err := s.r.destRequest(ctx, img, coord, dreq)
	if err != nil {
		return fmt.Errorf("describe group %q: %w", g, err)
	}
	dr, ok := resp.(*kmsg.DescribeGroupsResponse)
	if !ok || len(dr.Groups) != 1 {
		return fmt.Errorf("describe group %q: unexpected answer %T", g, resp)
	}
	dg := dr.Groups[0]
	switch {
	case dg.ErrorCode != 0 && dg.ErrorCode != kerr.GroupIDNotFound.Code:
		return fmt.Errorf("describe group %q: %w", g, kerr.ErrorForCode(dg.ErrorCode))
	case len(dg.Members) > 0 || (dg.State != "" && dg.State != "Empty" && dg.State != "Dead"):
		return nil // active here: its consumers own its offsets
	}

	freq := kmsg.NewPtrOffsetFetchRequest()
	freq.Version = 7
	freq.Group = g
	topics := map[string]int{}
	for _, tp := range slices.SortedFunc(maps.Keys(plan), compareTP) {
		j, ok := topics[tp.Topic]
		if !ok {
			j = len(freq.Topics)
			topics[tp.Topic] = j
			ft := kmsg.NewOffsetFetchRequestTopic()
			ft.Topic = tp.Topic
			freq.Topics = append(freq.Topics, ft)
		}
		freq.Topics[j].Partitions = append(freq.Topics[j].Partitions, tp.Partition)
	}
	resp, err = s.r.destRequest(ctx, img, coord, freq)
	if err != nil {
		return fmt.Errorf("fetch offsets of group %q: %w", g, err)
	}
	fr, ok := resp.(*kmsg.OffsetFetchResponse)
	if !ok {
		return fmt.Errorf("fetch offsets of group %q: unexpected answer %T", g, resp)
	}
	if fr.ErrorCode != 0 {
		return fmt.Errorf("fetch offsets of group %q: %w", g, kerr.ErrorForCode(fr.ErrorCode))
	}
	for _, t := range fr.Topics {
		for _, p := range t.Partitions {
			tp := storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}
			if want, ok := plan[tp]; ok && p.ErrorCode == 0 && p.Offset == want.offset && p.LeaderEpoch == want.epoch {
				delete(plan, tp)
			}
		}
	}
	if len(plan) == 0 {
		return nil
	}

	creq := kmsg.NewPtrOffsetCommitRequest()
	creq.Version = 8
	creq.Group, creq.Generation, creq.MemberID = g, -1, ""
	topics = map[string]int{}
	for _, tp := range slices.SortedFunc(maps.Keys(plan), compareTP) {
		j, ok := topics[tp.Topic]
		if !ok {
			j = len(creq.Topics)
			topics[tp.Topic] = j
			ct := kmsg.NewOffsetCommitRequestTopic()
			ct.Topic = tp.Topic
			creq.Topics = append(creq.Topics, ct)
		}
		o := plan[tp]
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset, cp.LeaderEpoch = tp.Partition, o.offset, o.epoch
		cp.Metadata = kmsg.StringPtr(o.metadata)
		creq.Topics[j].Partitions = append(creq.Topics[j].Partitions, cp)
	}
	resp, err = s.r.destRequest(ctx, img, coord, creq)
	if err != nil {
		return fmt.Errorf("commit offsets of group %q: %w", g, err)
	}
	cr, ok := resp.(*kmsg.OffsetCommitResponse)
	if !ok {
		return fmt.Errorf("commit offsets of group %q: unexpected answer %T", g, resp)
	}
	var errs []error
	committed := 0
	for _, t := range cr.Topics {
		for _, p := range t.Partitions {
			switch p.ErrorCode {
			case 0:
				committed++
			case kerr.UnknownMemberID.Code, kerr.IllegalGeneration.Code, kerr.RebalanceInProgress.Code:
				// A consumer joined since the check: its offsets win.
			default:
				errs = append(errs, fmt.Errorf("commit offset of group %q on %s-%d: %w", g, t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode)))
			}
		}
	}
	if committed > 0 {
		s.log.Debug("group offsets synced from the source", "group", g, "partitions", committed)
	}
	return errJoin(errs)
}
