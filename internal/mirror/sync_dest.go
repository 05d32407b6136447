package mirror

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/storage"
)

// The offset sync talks to this cluster's group coordinators and partition
// leaders the way a client would — FindCoordinator, DescribeGroups,
// OffsetFetch, OffsetCommit, ListOffsets — over the inter-broker listener
// (this broker included), so that the groups' own coordinators decide, with
// Kafka's rules, whether a commit without a member is allowed.

// destRequest sends req to broker id of this cluster.
func (r *syncRunner) destRequest(ctx context.Context, img *metadata.Image, id int32, req kmsg.Request) (kmsg.Response, error) {
	addr, err := brokerAddr(img, id, r.m.deps.Sync.InterBrokerListener)
	if err != nil {
		return nil, err
	}
	return r.pool.request(ctx, addr, req)
}

// groupCoordinators finds the coordinator of each group (node id), asking
// this broker; groups without one yet (their partition of
// __consumer_offsets is being created or loaded) are missing from the map
// and named in the error.
func (r *syncRunner) groupCoordinators(ctx context.Context, img *metadata.Image, groups []string) (map[string]int32, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 4
	req.CoordinatorType = 0
	req.CoordinatorKeys = groups
	resp, err := r.destRequest(ctx, img, r.m.cfg.NodeID, req)
	if err != nil {
		return nil, fmt.Errorf("find group coordinators: %w", err)
	}
	fr, ok := resp.(*kmsg.FindCoordinatorResponse)
	if !ok {
		return nil, fmt.Errorf("find group coordinators: unexpected answer %T", resp)
	}
	out := map[string]int32{}
	var missing []string
	var code int16
	for _, c := range fr.Coordinators {
		if c.ErrorCode != 0 {
			missing, code = append(missing, c.Key), c.ErrorCode
			continue
		}
		out[c.Key] = c.NodeID
	}
	if len(missing) > 0 {
		return out, fmt.Errorf("no coordinator yet for groups %v: %w", missing, kerr.ErrorForCode(code))
	}
	return out, nil
}

// offsetRange is a destination partition's valid range for a committed
// offset: its log start offset and its high watermark (the end a consumer
// reads to).
type offsetRange struct {
	start, end int64
}

// destOffsetRanges asks the destination leaders of tps for their log start
// and end (ListOffsets earliest and latest, READ_UNCOMMITTED). Partitions
// whose leader does not answer are missing from the map.
func (r *syncRunner) destOffsetRanges(ctx context.Context, img *metadata.Image, tps []storage.TopicPartition) (map[storage.TopicPartition]offsetRange, error) {
	byLeader := map[int32][]storage.TopicPartition{}
	for _, tp := range tps {
		t, ok := img.Topic(tp.Topic)
		if !ok {
			continue
		}
		ps, ok := t.Partition(tp.Partition)
		if !ok || ps.Leader < 0 {
			continue
		}
		byLeader[ps.Leader] = append(byLeader[ps.Leader], tp)
	}
	out := map[storage.TopicPartition]offsetRange{}
	var firstErr error
	for leader, parts := range byLeader {
		var rng [2]map[storage.TopicPartition]int64
		for i, ts := range []int64{-2, -1} {
			req := kmsg.NewPtrListOffsetsRequest()
			req.Version, req.ReplicaID, req.IsolationLevel = 7, -1, 0
			topics := map[string]int{}
			for _, tp := range parts {
				j, ok := topics[tp.Topic]
				if !ok {
					j = len(req.Topics)
					topics[tp.Topic] = j
					rt := kmsg.NewListOffsetsRequestTopic()
					rt.Topic = tp.Topic
					req.Topics = append(req.Topics, rt)
				}
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp = tp.Partition, ts
				req.Topics[j].Partitions = append(req.Topics[j].Partitions, rp)
			}
			resp, err := r.destRequest(ctx, img, leader, req)
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("list offsets on broker %d: %w", leader, err)
				}
				break
			}
			lr, ok := resp.(*kmsg.ListOffsetsResponse)
			if !ok {
				break
			}
			rng[i] = map[storage.TopicPartition]int64{}
			for _, t := range lr.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode == 0 {
						rng[i][storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.Offset
					}
				}
			}
		}
		for _, tp := range parts {
			s, ok1 := rng[0][tp]
			e, ok2 := rng[1][tp]
			if ok1 && ok2 {
				out[tp] = offsetRange{start: s, end: e}
			}
		}
	}
	return out, firstErr
}
