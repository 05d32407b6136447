package broker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/storage"
)

// ensureTopicWait caps how long EnsureTopic waits for a created topic to
// reach this broker when the caller's context has no deadline.
const ensureTopicWait = 30 * time.Second

// CoordinatorHost returns the coordinator.Host through which coordinator
// runtimes (groups, transactions, mirrors) use their internal topics on
// this broker.
func (b *Broker) CoordinatorHost() coordinator.Host { return &coordinatorHost{b: b} }

// coordinatorHost implements coordinator.Host over the replica manager.
type coordinatorHost struct{ b *Broker }

var _ coordinator.Host = (*coordinatorHost)(nil)

// PartitionLog implements coordinator.Host. The returned log looks the
// partition up on every call, so it follows the partition through
// leadership changes (and reports NOT_LEADER_OR_FOLLOWER once it is gone).
func (h *coordinatorHost) PartitionLog(topic string, partition int32) (coordinator.PartitionLog, error) {
	tp := storage.TopicPartition{Topic: topic, Partition: partition}
	if _, ok := h.b.rm.Partition(tp); !ok {
		return nil, errf(kerr.NotLeaderForPartition, "broker %d does not host %s", h.b.cfg.NodeID, tp)
	}
	return &coordinatorLog{b: h.b, tp: tp}, nil
}

// WatchLeadership implements coordinator.Host.
func (h *coordinatorHost) WatchLeadership(topic string, fn func(partition int32, leader bool, leaderEpoch int32)) func() {
	return h.b.rm.WatchLeadership(topic, fn)
}

// EnsureTopic implements coordinator.Host: it creates the internal topic
// through the controller unless it exists, and waits until this broker
// serves it.
func (h *coordinatorHost) EnsureTopic(ctx context.Context, spec coordinator.TopicSpec) error {
	return h.b.EnsureInternalTopic(ctx, spec.Name, spec.Partitions, spec.ReplicationFactor, spec.Configs)
}

// EnsureInternalTopic creates an internal topic through the controller if
// the metadata does not have it, then waits (until ctx ends, at most
// ensureTopicWait without a deadline) until this broker applied it. An
// existing topic is success; so is a topic another node created meanwhile.
func (b *Broker) EnsureInternalTopic(ctx context.Context, name string, partitions int32, replicationFactor int16, configs map[string]string) error {
	if _, ok := b.rm.Image().Topic(name); ok {
		return nil
	}
	if c, ok := b.deps.Controller.(internalTopicCreator); ok {
		if _, err := c.CreateInternalTopic(ctx, name, partitions, configs); err != nil && !isTopicExists(err) {
			return fmt.Errorf("create internal topic %s: %w", name, err)
		}
	} else {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = 7
		req.TimeoutMillis = int32(ensureTopicWait.Milliseconds())
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, replicationFactor
		if partitions <= 0 {
			t.NumPartitions = -1
		}
		if replicationFactor <= 0 {
			t.ReplicationFactor = -1
		}
		for _, k := range slices.Sorted(maps.Keys(configs)) {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			v := configs[k]
			c.Name, c.Value = k, &v
			t.Configs = append(t.Configs, c)
		}
		req.Topics = append(req.Topics, t)
		resp, err := b.deps.Controller.Send(ctx, req)
		if err != nil {
			return fmt.Errorf("create internal topic %s: %w", name, err)
		}
		r, ok := resp.(*kmsg.CreateTopicsResponse)
		if !ok || len(r.Topics) != 1 {
			return fmt.Errorf("create internal topic %s: unexpected response %T", name, resp)
		}
		if code := r.Topics[0].ErrorCode; code != 0 && code != kerr.TopicAlreadyExists.Code {
			return fmt.Errorf("create internal topic %s: %w", name, kerr.ErrorForCode(code))
		}
	}
	wait := ensureTopicWait
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	if !b.waitForTopics(ctx, []string{name}, wait) {
		return fmt.Errorf("internal topic %s was created but has not reached broker %d: %w", name, b.cfg.NodeID, kerr.CoordinatorNotAvailable)
	}
	return nil
}

func isTopicExists(err error) bool {
	return err != nil && errorCode(err) == kerr.TopicAlreadyExists.Code
}

// coordinatorLog is one internal-topic partition as a coordinator uses it.
type coordinatorLog struct {
	b  *Broker
	tp storage.TopicPartition
}

func (l *coordinatorLog) partition() (*Partition, error) {
	p, ok := l.b.rm.Partition(l.tp)
	if !ok {
		return nil, errf(kerr.NotLeaderForPartition, "broker %d no longer hosts %s", l.b.cfg.NodeID, l.tp)
	}
	return p, nil
}

// Read implements coordinator.PartitionLog: whole batches from offset (the
// log start if offset is below it) up to the log end.
func (l *coordinatorLog) Read(ctx context.Context, offset int64, maxBytes int) ([]byte, int64, error) {
	p, err := l.partition()
	if err != nil {
		return nil, -1, err
	}
	log := p.Log()
	if log == nil {
		return nil, -1, errf(kerr.NotLeaderForPartition, "%s has no local log", l.tp)
	}
	offset = max(offset, log.LogStartOffset())
	res, err := p.Read(offset, int64(max(maxBytes, 0)), storage.FetchLogEnd, true)
	if err != nil {
		return nil, -1, err
	}
	defer res.Release()
	buf, err := res.Bytes()
	if err != nil {
		return nil, -1, fmt.Errorf("read %s: %w", l.tp, err)
	}
	return buf, res.LogEndOffset, nil
}

// Append implements coordinator.PartitionLog: a coordinator-origin append
// in leaderEpoch, then a wait until the high watermark passes it.
func (l *coordinatorLog) Append(ctx context.Context, batch []byte, leaderEpoch int32) (int64, error) {
	p, err := l.partition()
	if err != nil {
		return -1, err
	}
	info, epoch, err := p.appendAsLeader(batch, storage.OriginCoordinator, -1, leaderEpoch, false)
	if err != nil {
		return -1, err
	}
	// No deadline of its own: the caller's context bounds the wait.
	if err := p.waitCommitted(ctx, time.Time{}, info.LastOffset+1, epoch); err != nil {
		return -1, err
	}
	return info.FirstOffset, nil
}
