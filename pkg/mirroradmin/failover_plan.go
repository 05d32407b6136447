package mirroradmin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kmirror/kmirror/internal/wire"
)

// FailoverPlan is what failing topics over now would do (a dry run of
// RemoveTopics): per partition where its log would be cut and what that
// drops, and how far behind the source it is — the recovery point of a
// failover now. Nothing changes.
type FailoverPlan struct {
	// Mirror is the mirror the topics would be removed from.
	Mirror string `json:"mirror"`
	// Topics are the checked topics; a topic RemoveTopics would refuse has
	// Err set and no partitions.
	Topics []FailoverPlanTopic `json:"topics"`
	// GroupOffsetsSynced is when the mirror's group-offset sync last
	// succeeded; zero if never (consumers moved now start from offsets
	// that old).
	GroupOffsetsSynced time.Time `json:"group_offsets_synced,omitzero"`
}

// FailoverPlanTopic is one topic of a FailoverPlan.
type FailoverPlanTopic struct {
	Name       string                  `json:"name"`
	Err        error                   `json:"-"`
	ErrMessage string                  `json:"error,omitempty"`
	Partitions []FailoverPlanPartition `json:"partitions,omitempty"`
}

// FailoverPlanPartition is one partition of a FailoverPlan.
type FailoverPlanPartition struct {
	Partition int32 `json:"partition"`
	State     State `json:"state"`
	// LogEndOffset is this cluster's log end now.
	LogEndOffset int64 `json:"log_end_offset"`
	// CutOffset is where the failover would cut the log (the first offset
	// of the oldest open transaction, or the log end); -1 when unknown.
	CutOffset int64 `json:"cut_offset"`
	// DroppedRecords is how many offsets the cut removes (records of
	// transactions the source had not finished); -1 when unknown.
	DroppedRecords int64 `json:"dropped_records"`
	// SourceHighWatermark is the source's last known high watermark, -1
	// when unknown.
	SourceHighWatermark int64 `json:"source_high_watermark"`
	// Lag and LagSeconds are how far behind the source the partition is,
	// in offsets and in time; -1 when unknown.
	Lag        int64   `json:"lag"`
	LagSeconds float64 `json:"lag_seconds"`
}

// PlanFailover is a dry run of RemoveTopics: it checks, without changing
// anything, that the topics can be failed over (the request's validate-only
// mode) and reports per partition what a failover now would do.
func (c *Client) PlanFailover(ctx context.Context, mirror string, topics ...string) (*FailoverPlan, error) {
	if c.missing != nil {
		return nil, c.missing
	}
	if len(topics) == 0 {
		return nil, errors.New("mirroradmin: no topics given")
	}
	body := &wire.MirrorTopicsRequest{MirrorName: mirror, TimeoutMillis: c.timeoutMillis, ValidateOnly: true}
	for _, t := range topics {
		body.Topics = append(body.Topics, wire.MirrorTopicsRequestTopic{Name: t})
	}
	resp, err := c.cl.Request(ctx, (*wire.RemoveTopicsFromMirrorRequest)(body))
	if err != nil {
		return nil, err
	}
	checked, err := topicResults(resp)
	if err != nil {
		return nil, err
	}
	ms, err := c.DescribeMirrors(ctx, mirror)
	if err != nil {
		return nil, err
	}
	m, ok := ms.On(mirror)
	if !ok {
		return nil, fmt.Errorf("mirror %s not described", mirror)
	}
	if m.Err != nil {
		return nil, m.Err
	}
	plan := &FailoverPlan{Mirror: mirror}
	for _, s := range m.Syncs {
		if s.Kind == "group-offsets" {
			plan.GroupOffsetsSynced = s.LastSuccess
		}
	}
	for _, r := range checked {
		pt := FailoverPlanTopic{Name: r.Topic, Err: r.Err}
		if r.Err != nil {
			pt.ErrMessage = r.Err.Error()
			plan.Topics = append(plan.Topics, pt)
			continue
		}
		i := slices.IndexFunc(m.Topics, func(t MirrorTopic) bool { return t.Name == r.Topic })
		if i < 0 {
			pt.Err = fmt.Errorf("topic %s not described in mirror %s", r.Topic, mirror)
			pt.ErrMessage = pt.Err.Error()
		} else {
			for _, p := range m.Topics[i].Partitions {
				pp := FailoverPlanPartition{Partition: p.Partition, State: p.State, LogEndOffset: p.DestinationLogEndOffset,
					CutOffset: p.LastStableOffset, DroppedRecords: -1, SourceHighWatermark: p.SourceHighWatermark,
					Lag: p.Lag, LagSeconds: p.LagSeconds}
				if p.LastStableOffset >= 0 && p.DestinationLogEndOffset >= 0 {
					pp.DroppedRecords = p.DestinationLogEndOffset - p.LastStableOffset
				}
				pt.Partitions = append(pt.Partitions, pp)
			}
		}
		plan.Topics = append(plan.Topics, pt)
	}
	return plan, nil
}
