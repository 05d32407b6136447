package controller

import (
	"net"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// MetadataTopic is the name Kafka gives the metadata log's partition in
// DescribeQuorum (KIP-595): __cluster_metadata, partition 0.
const MetadataTopic = "__cluster_metadata"

// decideDescribeQuorum answers DescribeQuorum (key 55, KIP-595 and
// KIP-853's v2) from kmirror's metadata quorum, as the active controller
// sees it: the metadata log is __cluster_metadata-0, its leader the raft
// leader (this node), its leader epoch the raft term, its high watermark
// the commit index + 1. Offsets are Kafka's: an entry's raft index, a log
// end offset one past the last entry.
//
// Each voter's log end offset and last fetch are what the controller knows
// of it: its own log end; for a voter that is also a broker, the metadata
// offset and time of its last heartbeat (a broker applies what its raft
// log holds, so this trails its log end by what is not applied yet). A
// controller-only voter shows -1: kmirror's raft does not expose a
// follower's position. Observers are the broker-only nodes, likewise from
// their heartbeats. Any other topic or partition is
// UNKNOWN_TOPIC_OR_PARTITION.
func decideDescribeQuorum(req *kmsg.DescribeQuorumRequest, st quorumStatus) *kmsg.DescribeQuorumResponse {
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	resp.Version = req.Version
	for _, t := range req.Topics {
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeQuorumResponseTopicPartition()
			rp.Partition = p.Partition
			if t.Topic != MetadataTopic || p.Partition != 0 {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				msg := "kmirror's metadata quorum is " + MetadataTopic + "-0"
				rp.ErrorMessage = &msg
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rp.LeaderID, rp.LeaderEpoch, rp.HighWatermark = st.leader, st.epoch, st.highWatermark
			for _, v := range st.voters {
				rp.CurrentVoters = append(rp.CurrentVoters, v.state())
			}
			for _, o := range st.observers {
				rp.Observers = append(rp.Observers, o.state())
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.Version >= 2 {
		for _, v := range st.voters {
			n := kmsg.NewDescribeQuorumResponseNode()
			n.NodeID = v.id
			if host, port, err := net.SplitHostPort(v.addr); err == nil {
				if p, err := strconv.ParseUint(port, 10, 16); err == nil {
					l := kmsg.NewDescribeQuorumResponseNodeListener()
					l.Name, l.Host, l.Port = st.listener, host, uint16(p)
					n.Listeners = append(n.Listeners, l)
				}
			}
			resp.Nodes = append(resp.Nodes, n)
		}
	}
	return resp
}

// quorumStatus is what DescribeQuorum reports.
type quorumStatus struct {
	leader, epoch int32
	highWatermark int64
	listener      string
	voters        []replicaStatus
	observers     []replicaStatus
}

// replicaStatus is one replica of the metadata log.
type replicaStatus struct {
	id        int32
	addr      string
	logEnd    int64 // -1: unknown
	lastFetch int64 // ms, -1: unknown
	caughtUp  int64 // ms, -1: unknown
}

func (r replicaStatus) state() kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	s := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	s.ReplicaID, s.LogEndOffset, s.LastFetchTimestamp, s.LastCaughtUpTimestamp = r.id, r.logEnd, r.lastFetch, r.caughtUp
	return s
}

// quorumStatusLocked gathers the status as the active controller. Caller
// holds mu.
func (c *Controller) quorumStatusLocked() (quorumStatus, error) {
	servers, err := c.q.Servers()
	if err != nil {
		return quorumStatus{}, err
	}
	now := c.now().UnixMilli()
	logEnd := int64(c.q.LogEnd())
	st := quorumStatus{leader: c.nodeID, epoch: int32(c.q.Term()), highWatermark: int64(c.q.CommitIndex()) + 1}
	if len(c.cfg.ControllerListenerNames) > 0 {
		st.listener = c.cfg.ControllerListenerNames[0]
	}
	img := c.q.Image()
	known := map[int32]bool{}
	for _, s := range servers {
		known[s.ID] = true
		r := replicaStatus{id: s.ID, addr: s.Addr, logEnd: -1, lastFetch: -1, caughtUp: -1}
		switch {
		case s.ID == c.nodeID:
			r.logEnd, r.lastFetch, r.caughtUp = logEnd, now, now
		default:
			r = c.brokerReplicaLocked(r, img, st.highWatermark)
		}
		if s.Voter {
			st.voters = append(st.voters, r)
		} else {
			st.observers = append(st.observers, r)
		}
	}
	// Brokers the raft configuration does not list (yet) observe too.
	for _, b := range img.Brokers() {
		if !known[b.ID] {
			st.observers = append(st.observers, c.brokerReplicaLocked(replicaStatus{id: b.ID, logEnd: -1, lastFetch: -1, caughtUp: -1}, img, st.highWatermark))
		}
	}
	slices.SortFunc(st.voters, func(a, b replicaStatus) int { return int(a.id - b.id) })
	slices.SortFunc(st.observers, func(a, b replicaStatus) int { return int(a.id - b.id) })
	return st, nil
}

// brokerReplicaLocked fills r from the heartbeats of broker r.id, if it is
// a registered broker that heartbeat to this controller. Caller holds mu.
func (c *Controller) brokerReplicaLocked(r replicaStatus, img *metadata.Image, hw int64) replicaStatus {
	if _, ok := img.Broker(r.id); !ok {
		return r
	}
	s := c.sessions[r.id]
	if s == nil || s.metadataOffset < 0 {
		return r
	}
	r.logEnd = s.metadataOffset + 1
	r.lastFetch = s.lastContact.UnixMilli()
	if r.logEnd >= hw {
		r.caughtUp = r.lastFetch
	}
	return r
}

// describeQuorum is the driver of DescribeQuorum: only the active
// controller answers (NOT_CONTROLLER otherwise, which brokers forwarding it
// retry on the active one).
func (c *Controller) describeQuorum(req *kmsg.DescribeQuorumRequest) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	resp.Version = req.Version
	if !c.activeLocked() {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	st, err := c.quorumStatusLocked()
	if err != nil {
		resp.ErrorCode = codeOf(err)
		if req.Version >= 2 {
			resp.ErrorMessage = messageOf(err)
		}
		return resp, nil
	}
	return decideDescribeQuorum(req, st), nil
}
