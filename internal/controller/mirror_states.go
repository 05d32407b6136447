package controller

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
	"github.com/kmirror/kmirror/internal/wire"
)

// stateKey names a mirrored partition's persisted state in __mirror_state.
type stateKey struct {
	Mirror    string
	TopicID   metadata.Uuid
	Partition int32
}

// stateReader reads the persisted states of mirrored partitions from their
// mirror coordinators. The controller's is readStatesOverWire; tests
// replace it.
type stateReader func(ctx context.Context, img *metadata.Image, keys []stateKey) (map[stateKey]wire.MirrorPartitionState, error)

// partitionKeys returns the state keys of every partition of topic in
// mirror.
func partitionKeys(mirror string, t *metadata.TopicImage) []stateKey {
	keys := make([]stateKey, 0, len(t.Partitions))
	for p := range t.Partitions {
		keys = append(keys, stateKey{Mirror: mirror, TopicID: t.ID, Partition: p})
	}
	slices.SortFunc(keys, func(a, b stateKey) int { return cmp.Compare(a.Partition, b.Partition) })
	return keys
}

// Retry pacing of readStatesOverWire while a coordinator moves or loads.
const (
	stateReadMinBackoff = 10 * time.Millisecond
	stateReadMaxBackoff = 500 * time.Millisecond
	stateReadDialLimit  = 5 * time.Second
)

// readStatesOverWire asks the mirror coordinators for the keys' states:
// each key belongs to partition mirrorstate.PartitionFor(...) of
// __mirror_state, whose leader (from the image, refreshed on every retry)
// answers ReadMirrorStates on its inter-broker listener. The controller may
// be a controller-only node, so it always goes over the network. A key
// whose coordinator answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS,
// or cannot be reached, is asked again until ctx ends; any other error
// fails the read. Without __mirror_state no state was ever written: every
// key is UNKNOWN.
func (c *Controller) readStatesOverWire(ctx context.Context, _ *metadata.Image, keys []stateKey) (map[stateKey]wire.MirrorPartitionState, error) {
	out := make(map[stateKey]wire.MirrorPartitionState, len(keys))
	pending := slices.Clone(keys)
	backoff := stateReadMinBackoff
	var lastErr error
	for {
		img := c.q.Image()
		topic, ok := img.Topic(MirrorStateTopic)
		if !ok {
			for _, k := range pending {
				out[k] = wire.MirrorStateUnknown
			}
			return out, nil
		}
		n := int32(len(topic.Partitions))
		byLeader := map[int32][]stateKey{}
		for _, k := range pending {
			p := mirrorstate.PartitionFor(k.Mirror, k.TopicID, k.Partition, n)
			leader := metadata.NoLeader
			if st, ok := topic.Partition(p); ok {
				leader = st.Leader
			}
			byLeader[leader] = append(byLeader[leader], k)
		}
		pending = pending[:0]
		for _, leader := range slices.Sorted(maps.Keys(byLeader)) {
			group := byLeader[leader]
			retry, err := c.readStatesFrom(ctx, img, leader, group, out)
			if err != nil {
				return nil, err
			}
			if len(retry) > 0 {
				pending = append(pending, retry...)
				lastErr = fmt.Errorf("mirror coordinator %d: %w", leader, errRetryCoordinator)
			}
		}
		if len(pending) == 0 {
			return out, nil
		}
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, errf(kerr.CoordinatorNotAvailable, "mirror states of %d partition(s) could not be read in time (%v): %v", len(pending), lastErr, ctx.Err())
		case <-timer.C:
		}
		backoff = min(2*backoff, stateReadMaxBackoff)
	}
}

// errRetryCoordinator marks a key whose coordinator should be asked again.
var errRetryCoordinator = fmt.Errorf("coordinator not available yet")

// readStatesFrom sends one ReadMirrorStates to leader for keys, records the
// answered states in out and returns the keys to ask again. A Kafka error
// other than a coordinator move fails the whole read.
func (c *Controller) readStatesFrom(ctx context.Context, img *metadata.Image, leader int32, keys []stateKey, out map[stateKey]wire.MirrorPartitionState) ([]stateKey, error) {
	reg, ok := img.Broker(leader)
	if !ok || reg.Fenced {
		return keys, nil
	}
	ep, ok := reg.Endpoint(c.cfg.InterBrokerListenerName)
	if !ok {
		return nil, errf(kerr.CoordinatorNotAvailable, "broker %d has no %s listener to reach its mirror coordinator", leader, c.cfg.InterBrokerListenerName)
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	dctx, cancel := context.WithTimeout(ctx, stateReadDialLimit)
	conn, err := wire.Dial(dctx, "tcp", addr, "kmirror-controller-"+strconv.Itoa(int(c.nodeID)), c.brokerDial...)
	cancel()
	if err != nil {
		c.log.Debug("mirror coordinator unreachable", "broker", leader, "addr", addr, "err", err)
		return keys, nil
	}
	defer conn.Close()
	req := &wire.ReadMirrorStatesRequest{}
	for _, k := range keys {
		req.Partitions = append(req.Partitions, wire.ReadMirrorStatesRequestPartition{MirrorName: k.Mirror, TopicID: k.TopicID, Partition: k.Partition})
	}
	resp, err := req.RequestWith(ctx, conn)
	if err != nil {
		c.log.Debug("ReadMirrorStates failed", "broker", leader, "addr", addr, "err", err)
		return keys, nil
	}
	if resp.ErrorCode != 0 {
		if retriableCoordinator(resp.ErrorCode) {
			return keys, nil
		}
		return nil, errf(kerrOf(resp.ErrorCode), "mirror coordinator %d: %s", leader, kerrOf(resp.ErrorCode).Message)
	}
	answered := map[stateKey]bool{}
	var retry []stateKey
	for _, p := range resp.Partitions {
		k := stateKey{Mirror: p.MirrorName, TopicID: p.TopicID, Partition: p.Partition}
		if !slices.Contains(keys, k) {
			continue
		}
		answered[k] = true
		switch {
		case p.ErrorCode == 0:
			out[k] = p.State
		case retriableCoordinator(p.ErrorCode):
			retry = append(retry, k)
		default:
			msg := kerrOf(p.ErrorCode).Message
			if p.ErrorMessage != nil {
				msg = *p.ErrorMessage
			}
			return nil, errf(kerrOf(p.ErrorCode), "mirror coordinator %d, partition %d of topic id %s: %s", leader, k.Partition, k.TopicID, msg)
		}
	}
	for _, k := range keys {
		if !answered[k] {
			retry = append(retry, k)
		}
	}
	return retry, nil
}

// retriableCoordinator reports whether a coordinator error means "ask again
// (maybe elsewhere) later".
func retriableCoordinator(code int16) bool {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code:
		return true
	}
	return false
}

// kerrOf returns the Kafka error of a code (UNKNOWN_SERVER_ERROR for a code
// this client does not know).
func kerrOf(code int16) *kerr.Error {
	if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return ke
	}
	return kerr.UnknownServerError
}
