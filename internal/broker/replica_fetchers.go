package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/replication"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// This file connects the replica manager to the replica fetchers
// (package replication): follower partitions fetch from their leader's
// inter-broker listener, and a Partition is the fetcher's Target.

// EndpointFunc opens a connection to a leader for the replica fetchers;
// tests replace the network with it.
type EndpointFunc func(ctx context.Context, s replication.Source) (replication.Endpoint, error)

// newReplicaFetchers builds the follower fetcher manager from the
// replica.* configs; without dial the fetchers connect to their leaders
// with opts.
func newReplicaFetchers(rm *ReplicaManager, dial EndpointFunc, opts []wire.DialOption) (*replication.Manager, error) {
	cfg := rm.Config()
	clientID := "broker-" + strconv.Itoa(int(rm.nodeID)) + "-fetcher"
	if dial == nil {
		dial = func(ctx context.Context, s replication.Source) (replication.Endpoint, error) {
			return replication.DialEndpoint(ctx, s.Addr, clientID, rm.nodeID, opts...)
		}
	}
	return replication.NewManager(replication.Config{
		Name:              "replica",
		ReplicaID:         rm.nodeID,
		BrokerEpoch:       rm.brokerEpoch,
		ClientID:          clientID,
		NumFetchers:       int(cfg.NumReplicaFetchers),
		MaxBytes:          cfg.ReplicaFetchResponseMaxBytes,
		PartitionMaxBytes: cfg.ReplicaFetchMaxBytes,
		MinBytes:          cfg.ReplicaFetchMinBytes,
		MaxWait:           time.Duration(cfg.ReplicaFetchWaitMaxMs) * time.Millisecond,
		Backoff:           time.Duration(cfg.ReplicaFetchBackoffMs) * time.Millisecond,
		RequestTimeout:    time.Duration(cfg.ReplicaSocketTimeoutMs) * time.Millisecond,
		RackID:            cfg.BrokerRack,
		NewEndpoint:       dial,
		Logger:            rm.log,
		Now:               rm.now,
	})
}

// brokerEpoch returns this broker's epoch as the applied metadata knows it
// (-1 before it registered).
func (rm *ReplicaManager) brokerEpoch() int64 {
	reg, ok := rm.Image().Broker(rm.nodeID)
	if !ok {
		return -1
	}
	return reg.Epoch
}

// leaderSource returns where a follower of a partition led by leader
// fetches: the leader's inter-broker listener in img.
func (rm *ReplicaManager) leaderSource(img *metadata.Image, leader int32) (replication.Source, error) {
	reg, ok := img.Broker(leader)
	if !ok {
		return replication.Source{}, fmt.Errorf("leader %d is not registered", leader)
	}
	listener := rm.Config().InterBrokerListenerName
	ep, ok := reg.Endpoint(listener)
	if !ok {
		return replication.Source{}, fmt.Errorf("leader %d has no %s listener", leader, listener)
	}
	return replication.Source{BrokerID: leader, Addr: net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))}, nil
}

// startFetching points the fetchers at a follower partition's leader,
// keeping the fetch state when the leader, its address and the leader
// epoch are unchanged.
func (rm *ReplicaManager) startFetching(p *Partition, img *metadata.Image) {
	if rm.fetchers == nil {
		return
	}
	st := p.State()
	if st.Leader == metadata.NoLeader || st.Leader == rm.nodeID {
		rm.fetchers.RemovePartitions(p.tp)
		return
	}
	src, err := rm.leaderSource(img, st.Leader)
	if err != nil {
		rm.fetchers.RemovePartitions(p.tp)
		rm.log.Warn("cannot fetch from the leader", "topic", p.tp.Topic, "partition", p.tp.Partition, "error", err)
		return
	}
	err = rm.fetchers.AddPartitions(replication.AddPartition{
		TopicPartition: p.tp, TopicID: p.TopicID(), LeaderEpoch: st.LeaderEpoch,
		Source: src, Target: followerTarget{p}, FetchOffset: -1,
	})
	if err != nil && !errors.Is(err, replication.ErrClosed) {
		rm.log.Warn("add partition to the replica fetchers", "topic", p.tp.Topic, "partition", p.tp.Partition, "error", err)
	}
}

// stopFetching stops the fetchers of the partitions; when it returns no
// fetcher touches them any more.
func (rm *ReplicaManager) stopFetching(tps ...storage.TopicPartition) {
	if rm.fetchers != nil && len(tps) > 0 {
		rm.fetchers.RemovePartitions(tps...)
	}
}

// fetchingInEpoch reports whether the fetchers already fetch tp from
// leader in leaderEpoch.
func (rm *ReplicaManager) fetchingInEpoch(tp storage.TopicPartition, leader, leaderEpoch int32) bool {
	if rm.fetchers == nil {
		return false
	}
	st, ok := rm.fetchers.Status(tp)
	return ok && st.Source.BrokerID == leader && st.LeaderEpoch == leaderEpoch
}

// Fetchers returns the replica fetcher manager (tests and metrics read
// fetch states from it).
func (rm *ReplicaManager) Fetchers() *replication.Manager { return rm.fetchers }

// followerTarget is a follower Partition as a replication.Target.
type followerTarget struct{ p *Partition }

// Append implements replication.Target.
func (t followerTarget) Append(batches []byte) (int64, error) {
	info, err := t.p.appendFromLeader(batches)
	if err != nil {
		return -1, err
	}
	if info.FirstOffset < 0 {
		return -1, nil
	}
	return info.LastOffset, nil
}

// Truncate implements replication.Target.
func (t followerTarget) Truncate(offset int64) error { return t.p.TruncateTo(offset) }

// TruncateFullyAndStartAt implements replication.Target.
func (t followerTarget) TruncateFullyAndStartAt(offset int64) error {
	return t.p.TruncateFullyAndStartAt(offset)
}

// LogStartOffset implements replication.Target.
func (t followerTarget) LogStartOffset() int64 {
	if l := t.p.Log(); l != nil {
		return l.LogStartOffset()
	}
	return 0
}

// LogEndOffset implements replication.Target.
func (t followerTarget) LogEndOffset() int64 {
	if l := t.p.Log(); l != nil {
		return l.LogEndOffset()
	}
	return 0
}

// LatestEpoch implements replication.Target.
func (t followerTarget) LatestEpoch() (int32, bool) {
	if l := t.p.Log(); l != nil {
		return l.LatestEpoch()
	}
	return 0, false
}

// EndOffsetForEpoch implements replication.Target.
func (t followerTarget) EndOffsetForEpoch(epoch int32) (int32, int64) {
	if l := t.p.Log(); l != nil {
		return l.EndOffsetForEpoch(epoch)
	}
	return -1, -1
}

// SetHighWatermark implements replication.Target.
func (t followerTarget) SetHighWatermark(hw int64) { t.p.SetFollowerHighWatermark(hw) }

// MaybeIncrementLogStartOffset implements replication.Target.
func (t followerTarget) MaybeIncrementLogStartOffset(offset int64) {
	t.p.followLeaderLogStart(offset)
}

// appendFromLeader appends fetched batches as a follower. When the log is
// empty and the first batch starts below the log start (the leader's log
// start lies inside a batch, after DeleteRecords), the log restarts at that
// batch's base first, as Kafka's follower does; following the leader's log
// start then moves the log start back up.
func (p *Partition) appendFromLeader(batches []byte) (storage.AppendInfo, error) {
	info, err := p.AppendAsFollower(batches)
	if err == nil || !errors.Is(err, storage.ErrUnexpectedAppendOffset) {
		return info, err
	}
	l := p.Log()
	if l == nil || l.LogEndOffset() != l.LogStartOffset() {
		return info, err
	}
	b, _, berr := record.NextBatch(batches)
	if berr != nil {
		return info, err
	}
	h, herr := record.ParseHeader(b)
	if herr != nil || h.BaseOffset >= l.LogEndOffset() || h.LastOffset() < l.LogEndOffset() {
		return info, err
	}
	if terr := p.TruncateFullyAndStartAt(h.BaseOffset); terr != nil {
		return info, terr
	}
	return p.AppendAsFollower(batches)
}

// followLeaderLogStart moves a follower's log start offset up to the
// leader's (bounded by its own high watermark), so that DeleteRecords and
// the leader's retention reach the followers.
func (p *Partition) followLeaderLogStart(offset int64) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.leader || p.log == nil || p.removed {
		return
	}
	offset = min(offset, p.log.HighWatermark())
	if offset <= p.log.LogStartOffset() {
		return
	}
	if _, err := p.log.DeleteRecordsBefore(offset); err != nil {
		p.rm.log.Warn("follow the leader's log start offset", "topic", p.tp.Topic, "partition", p.tp.Partition, "offset", offset, "error", err)
		return
	}
	p.notify.signal()
}
