package mirror

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
	"github.com/kmirror/kmirror/internal/wire"
)

// StateStore is where the partition drivers read and persist their state:
// the mirror coordinator of each key, wherever it is.
type StateStore interface {
	// Read returns a partition's persisted state.
	Read(ctx context.Context, k mirrorstate.PartitionKey) (StoredState, error)
	// Write persists a transition. FENCED_STATE_EPOCH or
	// FENCED_LEADER_EPOCH mean another writer (a newer leader, or this one
	// whose earlier attempt did succeed) got there first: re-read.
	Write(ctx context.Context, w StateWrite) error
	// WriteLME persists a Last Mirrored Epoch record.
	WriteLME(ctx context.Context, l LMEWrite) error
	// ReadLME returns the Last Mirrored Epoch recorded for a partition and
	// a source cluster, (-1, -1) if none.
	ReadLME(ctx context.Context, k mirrorstate.LMEKey, sourceCluster string) (epoch int32, end int64, err error)
}

// RoutedStore is the StateStore of a broker: it sends each key to the leader
// of its __mirror_state partition, calling the local coordinator directly
// when that is this node, and otherwise ReadMirrorStates /
// WriteMirrorStates over the inter-broker listener. Answers that mean the
// coordinator is elsewhere or not ready (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, a failed
// connection) are retried with a growing pause, with a fresh look at the
// metadata each time, until the context ends.
type RoutedStore struct {
	nodeID   int32
	listener string
	meta     MetadataSource
	local    *Coordinator
	conns    *connPool
	defParts int32
}

// NewRoutedStore returns the store of node nodeID. local is the node's own
// coordinator (nil on a node without one: every key goes over the network).
// defaultPartitions is mirror.state.topic.num.partitions, used while
// __mirror_state does not exist yet.
func NewRoutedStore(nodeID int32, interBrokerListener string, meta MetadataSource, local *Coordinator, defaultPartitions int32, dial Dialer) *RoutedStore {
	if defaultPartitions <= 0 {
		defaultPartitions = 50
	}
	return &RoutedStore{
		nodeID: nodeID, listener: interBrokerListener, meta: meta, local: local, defParts: defaultPartitions,
		conns: newConnPool(dial, fmt.Sprintf("kmirror-mirror-store-%d", nodeID)),
	}
}

// Close closes the store's connections.
func (s *RoutedStore) Close() { s.conns.close() }

// Read implements StateStore.
func (s *RoutedStore) Read(ctx context.Context, k mirrorstate.PartitionKey) (StoredState, error) {
	var out StoredState
	err := s.retry(ctx, func(_ int32, leader int32) error {
		if leader == s.nodeID && s.local != nil {
			got, errs := s.local.ReadStates(ctx, []mirrorstate.PartitionKey{k})
			out = got[0]
			return errs[0]
		}
		resp, err := s.remote(ctx, leader, &wire.ReadMirrorStatesRequest{Partitions: []wire.ReadMirrorStatesRequestPartition{
			{MirrorName: k.Mirror, TopicID: k.TopicID, Partition: k.Partition},
		}})
		if err != nil {
			return err
		}
		r, ok := resp.(*wire.ReadMirrorStatesResponse)
		if !ok || len(r.Partitions) != 1 {
			return errNotKmirror
		}
		if r.ErrorCode != 0 {
			return kerr.ErrorForCode(r.ErrorCode)
		}
		p := r.Partitions[0]
		if p.ErrorCode != 0 {
			return remoteErr(p.ErrorCode, p.ErrorMessage)
		}
		out = StoredState{Found: p.UpdateMillis >= 0 || p.State != wire.MirrorStateUnknown}
		out.Value = mirrorstate.PartitionValue{
			State: p.State, StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, UpdateMillis: p.UpdateMillis,
			SourceClusterID: stringTag(p.UnknownTags, tagSourceCluster),
		}
		if p.LastError != nil {
			out.Value.LastError = *p.LastError
		}
		return nil
	}, mirrorstate.PartitionFor(k.Mirror, k.TopicID, k.Partition, s.partitions()))
	return out, err
}

// Write implements StateStore.
func (s *RoutedStore) Write(ctx context.Context, w StateWrite) error {
	return s.retry(ctx, func(_ int32, leader int32) error {
		if leader == s.nodeID && s.local != nil {
			errs, _ := s.local.WriteStates(ctx, []StateWrite{w}, nil)
			return errs[0]
		}
		resp, err := s.remote(ctx, leader, &wire.WriteMirrorStatesRequest{Partitions: []wire.WriteMirrorStatesRequestPartition{stateWriteToWire(w)}})
		if err != nil {
			return err
		}
		r, ok := resp.(*wire.WriteMirrorStatesResponse)
		if !ok || len(r.Partitions) != 1 {
			return errNotKmirror
		}
		if r.ErrorCode != 0 {
			return kerr.ErrorForCode(r.ErrorCode)
		}
		return remoteErr(r.Partitions[0].ErrorCode, r.Partitions[0].ErrorMessage)
	}, mirrorstate.PartitionFor(w.Key.Mirror, w.Key.TopicID, w.Key.Partition, s.partitions()))
}

// WriteLME implements StateStore.
func (s *RoutedStore) WriteLME(ctx context.Context, l LMEWrite) error {
	return s.retry(ctx, func(_ int32, leader int32) error {
		if leader == s.nodeID && s.local != nil {
			_, err := s.local.WriteStates(ctx, nil, []LMEWrite{l})
			return err
		}
		resp, err := s.remote(ctx, leader, &wire.WriteMirrorStatesRequest{LastMirroredEpochs: []wire.WriteMirrorStatesRequestLastMirroredEpoch{{
			MirrorName: l.Value.Mirror, TopicID: l.Key.TopicID, Partition: l.Key.Partition,
			SourceClusterID: l.Value.SourceClusterID, LastMirroredEpoch: l.Value.LastMirroredEpoch, EndOffset: l.Value.EndOffset,
		}}})
		if err != nil {
			return err
		}
		r, ok := resp.(*wire.WriteMirrorStatesResponse)
		if !ok {
			return errNotKmirror
		}
		return remoteErr(r.ErrorCode, nil)
	}, mirrorstate.LMEPartitionFor(l.Key.TopicID, l.Key.Partition, s.partitions()))
}

// ReadLME implements StateStore. A remote coordinator is asked with
// ReadLastMirroredEpochs carrying the local-only tag.
func (s *RoutedStore) ReadLME(ctx context.Context, k mirrorstate.LMEKey, sourceCluster string) (int32, int64, error) {
	epoch, end := int32(-1), int64(-1)
	err := s.retry(ctx, func(_ int32, leader int32) error {
		if leader == s.nodeID && s.local != nil {
			var err error
			epoch, end, err = s.local.ReadLME(ctx, k, sourceCluster)
			return err
		}
		req := &wire.ReadLastMirroredEpochsRequest{ClusterID: sourceCluster, Topics: []wire.ReadLastMirroredEpochsRequestTopic{
			{TopicID: k.TopicID, Partitions: []int32{k.Partition}},
		}}
		setLocalOnly(&req.UnknownTags)
		resp, err := s.remote(ctx, leader, req)
		if err != nil {
			return err
		}
		r, ok := resp.(*wire.ReadLastMirroredEpochsResponse)
		if !ok || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return errNotKmirror
		}
		if r.ErrorCode != 0 {
			return kerr.ErrorForCode(r.ErrorCode)
		}
		p := r.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return kerr.ErrorForCode(p.ErrorCode)
		}
		epoch, end = p.LastMirroredEpoch, p.EndOffset
		return nil
	}, mirrorstate.LMEPartitionFor(k.TopicID, k.Partition, s.partitions()))
	return epoch, end, err
}

func (s *RoutedStore) partitions() int32 { return statePartitions(s.meta.Image(), s.defParts) }

// retry runs op against the leader of __mirror_state partition p until it
// succeeds, fails for a reason a retry cannot fix, or ctx ends.
func (s *RoutedStore) retry(ctx context.Context, op func(partition, leader int32) error, p int32) error {
	backoff := 20 * time.Millisecond
	for {
		leader, err := stateLeader(s.meta.Image(), mirrorstate.Topic, p)
		if err == nil {
			err = op(p, leader)
		}
		if err == nil || !retriableStoreErr(err) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}

// remote sends req to broker leader's inter-broker listener.
func (s *RoutedStore) remote(ctx context.Context, leader int32, req kmsg.Request) (kmsg.Response, error) {
	addr, err := brokerAddr(s.meta.Image(), leader, s.listener)
	if err != nil {
		return nil, err
	}
	resp, err := s.conns.request(ctx, addr, req)
	if err != nil {
		return nil, fmt.Errorf("mirror coordinator on broker %d: %v: %w", leader, err, kerr.CoordinatorNotAvailable)
	}
	return resp, nil
}

// retriableStoreErr says whether a store operation is worth retrying: the
// coordinator moved, is loading, or could not be reached.
func retriableStoreErr(err error) bool {
	return errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorLoadInProgress) ||
		errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.NotLeaderForPartition) ||
		errors.Is(err, kerr.RequestTimedOut)
}

// remoteErr rebuilds a Kafka error from a code and message.
func remoteErr(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	err := kerr.ErrorForCode(code)
	if msg != nil {
		return fmt.Errorf("%s: %w", *msg, err)
	}
	return err
}
