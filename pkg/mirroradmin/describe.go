package mirroradmin

import (
	"context"
	"time"

	"github.com/kmirror/kmirror/internal/wire"
)

// Config is one of a mirror's properties.
type Config struct {
	// Name is the property name.
	Name string `json:"name"`
	// Value is the property's value; nil for a secret.
	Value *string `json:"value"`
	// Sensitive marks a secret, whose value the cluster never returns.
	Sensitive bool `json:"sensitive"`
}

// PartitionStatus is the mirroring status of one partition.
type PartitionStatus struct {
	// Partition is the partition index.
	Partition int32 `json:"partition"`
	// State is the partition's mirror state.
	State State `json:"state"`
	// LeaderID is the destination broker leading the partition, -1 if none.
	LeaderID int32 `json:"leader_id"`
	// SourceHighWatermark and SourceLogStartOffset are the source's last
	// known figures; -1 when unknown.
	SourceHighWatermark  int64 `json:"source_high_watermark"`
	SourceLogStartOffset int64 `json:"source_log_start_offset"`
	// DestinationLogEndOffset is this cluster's log end.
	DestinationLogEndOffset int64 `json:"destination_log_end_offset"`
	// Lag is how far this cluster is behind the source's high watermark,
	// -1 when unknown.
	Lag int64 `json:"lag"`
	// LastFetch is when data was last fetched from the source; zero if
	// never (omitted from JSON).
	LastFetch time.Time `json:"last_fetch,omitzero"`
	// StateChange is when the partition entered State; zero if unknown.
	StateChange time.Time `json:"state_change,omitzero"`
	// LastError is the partition's last mirroring error, "" if none.
	LastError string `json:"last_error,omitempty"`
	// LastStableOffset is where a failover now would cut this cluster's
	// log: the first offset of its oldest open transaction, or its log end
	// with none; -1 when unknown.
	LastStableOffset int64 `json:"last_stable_offset"`
	// LagSeconds is how far behind the source the partition is in time (0
	// without lag), -1 when unknown.
	LagSeconds float64 `json:"lag_seconds"`
}

// MirrorTopic is a topic in a mirror.
type MirrorTopic struct {
	// Name is the topic's name.
	Name string `json:"name"`
	// ID is the topic's id.
	ID TopicID `json:"topic_id"`
	// MirrorNameConfig is the topic's raw mirror.name: "m", "m.paused",
	// "m.removed" (failing over) or "m.stopped" (failed over).
	MirrorNameConfig string `json:"mirror_name_config"`
	// Partitions is the per-partition status.
	Partitions []PartitionStatus `json:"partitions"`
}

// Sync is the status of one of a mirror's periodic synchronisations.
type Sync struct {
	// Kind is configs, partitions, group-offsets or acls.
	Kind string `json:"kind"`
	// LastSuccess is when it last succeeded; zero if never.
	LastSuccess time.Time `json:"last_success,omitzero"`
	// LastError is the error of its last attempt, "" if it succeeded.
	LastError string `json:"last_error,omitempty"`
}

// Mirror is a mirror's description.
type Mirror struct {
	// Name is the mirror's name.
	Name string `json:"name"`
	// Err is set when the mirror could not be described (e.g. an unknown
	// name); the other fields are then empty.
	Err error `json:"-"`
	// Configs are the mirror's properties, secrets without their values.
	Configs []Config `json:"configs"`
	// Topics are the mirror's topics.
	Topics []MirrorTopic `json:"topics"`
	// Syncs are the periodic synchronisations.
	Syncs []Sync `json:"syncs"`
}

// Mirrors are the described mirrors, in the cluster's order.
type Mirrors []Mirror

// On returns the description of the mirror name.
func (ms Mirrors) On(name string) (Mirror, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m, true
		}
	}
	return Mirror{}, false
}

// DescribeMirrors describes the named mirrors, or every mirror when no
// name is given, with per-partition status.
func (c *Client) DescribeMirrors(ctx context.Context, names ...string) (Mirrors, error) {
	if c.missing != nil {
		return nil, c.missing
	}
	req := &wire.DescribeMirrorsRequest{IncludePartitions: true}
	if len(names) > 0 {
		req.MirrorNames = names
	}
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return nil, err
	}
	return describeResult(resp)
}

// describeResult converts a DescribeMirrors response.
func describeResult(resp *wire.DescribeMirrorsResponse) (Mirrors, error) {
	if err := errorFor(resp.ErrorCode, nil); err != nil {
		return nil, err
	}
	out := make(Mirrors, 0, len(resp.Mirrors))
	for _, m := range resp.Mirrors {
		d := Mirror{Name: m.Name, Err: errorFor(m.ErrorCode, m.ErrorMessage)}
		for _, cfg := range m.Configs {
			c := Config{Name: cfg.Name, Sensitive: cfg.Sensitive}
			if !cfg.Sensitive && cfg.Value != nil {
				v := *cfg.Value
				c.Value = &v
			}
			d.Configs = append(d.Configs, c)
		}
		for _, t := range m.Topics {
			mt := MirrorTopic{Name: t.Name, ID: TopicID(t.TopicID), MirrorNameConfig: t.MirrorNameConfig}
			for _, p := range t.Partitions {
				ps := PartitionStatus{
					Partition: p.Partition, State: State(p.State), LeaderID: p.LeaderID,
					SourceHighWatermark: p.SourceHighWatermark, SourceLogStartOffset: p.SourceLogStartOffset,
					DestinationLogEndOffset: p.DestinationLogEndOffset, Lag: p.Lag,
					LastFetch: millis(p.LastFetchMillis), StateChange: millis(p.StateChangeMillis),
					LastStableOffset: p.LastStableOffset, LagSeconds: -1,
				}
				if p.LagMillis >= 0 {
					ps.LagSeconds = float64(p.LagMillis) / 1000
				}
				if p.LastError != nil {
					ps.LastError = *p.LastError
				}
				mt.Partitions = append(mt.Partitions, ps)
			}
			d.Topics = append(d.Topics, mt)
		}
		for _, s := range m.Syncs {
			sy := Sync{Kind: s.Kind, LastSuccess: millis(s.LastSuccessMillis)}
			if s.LastError != nil {
				sy.LastError = *s.LastError
			}
			d.Syncs = append(d.Syncs, sy)
		}
		out = append(out, d)
	}
	return out, nil
}

// millis converts Unix milliseconds, -1 (or any negative) meaning never.
func millis(ms int64) time.Time {
	if ms < 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
