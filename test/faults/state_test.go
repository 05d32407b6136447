package faults

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// The helpers of this file ask one node at a time what it knows (its
// metadata image, its replicas), on a fresh connection with a short
// deadline, so that a paused node costs a second and never blocks a
// client that the test relies on.

// rpcTimeout bounds one request to one node.
const rpcTimeout = 2 * time.Second

// rpc sends req to addr and returns the response.
func rpc(addr string, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	conn, err := wire.Dial(ctx, "tcp", addr, "faults-test")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.Request(ctx, req)
}

// partState is a partition as a broker's Metadata describes it.
type partState struct {
	Leader   int32
	Epoch    int32
	Replicas []int32
	ISR      []int32
	Offline  []int32
}

func (s partState) String() string {
	return fmt.Sprintf("leader %d epoch %d replicas %v isr %v offline %v", s.Leader, s.Epoch, s.Replicas, s.ISR, s.Offline)
}

// nodeView is what one broker's Metadata says.
type nodeView struct {
	clusterID  string
	controller int32
	brokers    []int32 // the unfenced brokers
	parts      map[string]map[int32]partState
}

// viewOf asks node n for the metadata of topics (none: no topics).
func (n *procNode) view(topics ...string) (nodeView, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	raw, err := rpc(n.addr(), req)
	if err != nil {
		return nodeView{}, err
	}
	resp := raw.(*kmsg.MetadataResponse)
	v := nodeView{controller: resp.ControllerID, parts: map[string]map[int32]partState{}}
	if resp.ClusterID != nil {
		v.clusterID = *resp.ClusterID
	}
	for _, b := range resp.Brokers {
		v.brokers = append(v.brokers, b.NodeID)
	}
	slices.Sort(v.brokers)
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return v, fmt.Errorf("node %d: topic %s: %w", n.id, *t.Topic, err)
		}
		ps := map[int32]partState{}
		for _, p := range t.Partitions {
			ps[p.Partition] = partState{Leader: p.Leader, Epoch: p.LeaderEpoch,
				Replicas: sortedIDs(p.Replicas), ISR: sortedIDs(p.ISR), Offline: sortedIDs(p.OfflineReplicas)}
		}
		v.parts[*t.Topic] = ps
	}
	return v, nil
}

// agreed asks every broker node that is up for its view and returns the
// first if all agree according to same; otherwise it says why not.
func (c *procCluster) agreed(topics []string, same func(a, b nodeView) bool) (nodeView, string) {
	var first nodeView
	var firstID int32 = -1
	for _, n := range c.brokers() {
		if !n.up() {
			continue
		}
		v, err := n.view(topics...)
		if err != nil {
			return v, fmt.Sprintf("node %d: %v", n.id, err)
		}
		if firstID < 0 {
			first, firstID = v, n.id
			continue
		}
		if !same(first, v) {
			return first, fmt.Sprintf("nodes %d and %d disagree", firstID, n.id)
		}
	}
	if firstID < 0 {
		return first, "no broker is up"
	}
	return first, ""
}

// partition returns topic-partition's state if every broker that is up
// agrees on it.
func (c *procCluster) partition(topic string, p int32) (partState, string) {
	v, why := c.agreed([]string{topic}, func(a, b nodeView) bool {
		x, ok1 := a.parts[topic][p]
		y, ok2 := b.parts[topic][p]
		return ok1 && ok2 && x.Leader == y.Leader && x.Epoch == y.Epoch && slices.Equal(x.ISR, y.ISR)
	})
	if why != "" {
		return partState{}, why
	}
	st, ok := v.parts[topic][p]
	if !ok {
		return st, fmt.Sprintf("no partition %s-%d", topic, p)
	}
	return st, ""
}

// waitPartition polls until every broker that is up agrees on
// topic-partition's state and cond holds for it; it returns the state.
func (c *procCluster) waitPartition(topic string, p int32, what string, cond func(partState) bool) partState {
	c.t.Helper()
	var st partState
	waitFor(c.t, fmt.Sprintf("%s-%d: %s", topic, p, what), func() (bool, string) {
		var why string
		st, why = c.partition(topic, p)
		if why != "" {
			return false, why
		}
		return cond(st), st.String()
	})
	return st
}

// waitFullISR waits until every partition of topic has all its replicas in
// its ISR and a leader.
func (c *procCluster) waitFullISR(topic string, partitions int32) {
	c.t.Helper()
	for p := range partitions {
		c.waitPartition(topic, p, "every replica in the ISR", func(s partState) bool {
			return s.Leader >= 0 && len(s.ISR) == len(s.Replicas)
		})
	}
}

// controller returns the active controller's id if every broker that is
// up names the same one (combined nodes: the metadata quorum's leader).
func (c *procCluster) controller() (int32, string) {
	v, why := c.agreed(nil, func(a, b nodeView) bool { return a.controller == b.controller })
	return v.controller, why
}

// waitBrokersUnfenced waits until every broker that is up lists every
// broker that is up as unfenced.
func (c *procCluster) waitBrokersUnfenced() {
	c.t.Helper()
	var want []int32
	for _, n := range c.brokers() {
		if n.up() {
			want = append(want, n.id)
		}
	}
	waitFor(c.t, fmt.Sprintf("brokers %v unfenced everywhere", want), func() (bool, string) {
		v, why := c.agreed(nil, func(a, b nodeView) bool { return slices.Equal(a.brokers, b.brokers) })
		if why != "" {
			return false, why
		}
		for _, id := range want {
			if !slices.Contains(v.brokers, id) {
				return false, fmt.Sprintf("unfenced %v", v.brokers)
			}
		}
		return true, ""
	})
}

// replicaSizes asks node n for the sizes of its replicas of topic.
func (n *procNode) replicaSizes(topic string, partitions int32) (map[int32]int64, error) {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.SetVersion(4)
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Topics = append(req.Topics, rt)
	raw, err := rpc(n.addr(), req)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, d := range raw.(*kmsg.DescribeLogDirsResponse).Dirs {
		if err := kerr.ErrorForCode(d.ErrorCode); err != nil {
			return nil, fmt.Errorf("log dir %s: %w", d.Dir, err)
		}
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				out[p.Partition] = p.Size
			}
		}
	}
	return out, nil
}

// coordinator asks an up broker which node coordinates key (a group id, or
// a transactional id with keyType 1).
func (c *procCluster) coordinator(key string, keyType int8) (int32, string) {
	for _, n := range c.brokers() {
		if !n.up() {
			continue
		}
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.SetVersion(4)
		req.CoordinatorType = keyType
		req.CoordinatorKeys = []string{key}
		raw, err := rpc(n.addr(), req)
		if err != nil {
			return -1, fmt.Sprintf("node %d: %v", n.id, err)
		}
		resp := raw.(*kmsg.FindCoordinatorResponse)
		if len(resp.Coordinators) != 1 {
			return -1, fmt.Sprintf("node %d: %d coordinators", n.id, len(resp.Coordinators))
		}
		co := resp.Coordinators[0]
		if err := kerr.ErrorForCode(co.ErrorCode); err != nil {
			return -1, fmt.Sprintf("node %d: %v", n.id, err)
		}
		return co.NodeID, ""
	}
	return -1, "no broker is up"
}

// waitCoordinator waits until a live node coordinates key and returns it.
func (c *procCluster) waitCoordinator(key string, keyType int8, cond func(int32) bool) int32 {
	c.t.Helper()
	var id int32
	waitFor(c.t, "the coordinator of "+key, func() (bool, string) {
		var why string
		id, why = c.coordinator(key, keyType)
		if why != "" {
			return false, why
		}
		return cond(id), fmt.Sprintf("node %d", id)
	})
	return id
}
