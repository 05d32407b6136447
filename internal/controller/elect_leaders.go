package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// Election types of ElectLeaders (v1+; v0 is always preferred).
const (
	electPreferred int8 = 0
	electUnclean   int8 = 1
)

// decideElectLeaders serves ElectLeaders v0–v2 as Kafka's controller does:
//
//   - PREFERRED makes each partition's first replica its leader if that
//     replica is in the ISR and usable; a partition led by it already is
//     ELECTION_NOT_NEEDED; when it cannot lead and the current leader may
//     stay, PREFERRED_LEADER_NOT_AVAILABLE;
//   - UNCLEAN gives a leaderless partition a leader: an ISR member if one
//     is usable, else (whatever unclean.leader.election.enable says: the
//     operator asked) the first usable replica, which becomes the whole
//     ISR and starts leader recovery; a partition with a leader is
//     ELECTION_NOT_NEEDED, one with no usable replica
//     ELIGIBLE_LEADERS_NOT_AVAILABLE;
//   - no topic list means every partition, and then partitions that need
//     no election are left out of the response.
//
// Every elected leader gets a new leader epoch (replay bumps it).
func decideElectLeaders(v *view, req *kmsg.ElectLeadersRequest) ([]metadata.Record, *kmsg.ElectLeadersResponse) {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	resp.Version = req.Version
	typ := electPreferred
	if req.Version >= 1 {
		typ = req.ElectionType
	}
	if typ != electPreferred && typ != electUnclean {
		if req.Version >= 1 {
			resp.ErrorCode = kerr.InvalidRequest.Code
		}
		return nil, resp
	}
	d := &electDecision{v: v, typ: typ, states: map[metadata.Uuid]map[int32]metadata.PartitionState{}}
	if req.Topics == nil {
		for _, t := range v.img.Topics() {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Name
			for _, p := range t.PartitionIDs() {
				code, msg := d.elect(t.Name, p)
				if code == kerr.ElectionNotNeeded.Code {
					continue
				}
				rt.Partitions = append(rt.Partitions, electResult(p, code, msg))
			}
			if len(rt.Partitions) > 0 {
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return d.recs, resp
	}
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			code, msg := d.elect(t.Topic, p)
			rt.Partitions = append(rt.Partitions, electResult(p, code, msg))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return d.recs, resp
}

func electResult(p int32, code int16, msg *string) kmsg.ElectLeadersResponseTopicPartition {
	r := kmsg.NewElectLeadersResponseTopicPartition()
	r.Partition, r.ErrorCode, r.ErrorMessage = p, code, msg
	return r
}

// electDecision carries one request's elections; states holds the
// partitions it changed, so that a partition named twice is decided once.
type electDecision struct {
	v      *view
	typ    int8
	recs   []metadata.Record
	states map[metadata.Uuid]map[int32]metadata.PartitionState
}

// elect decides one partition and returns its result code and message.
func (d *electDecision) elect(topic string, partition int32) (int16, *string) {
	img := d.v.img
	t, ok := img.Topic(topic)
	if !ok {
		return kerr.UnknownTopicOrPartition.Code, ptrTo(fmt.Sprintf("No such topic as %s", topic))
	}
	st, ok := d.states[t.ID][partition]
	if !ok {
		st, ok = t.Partition(partition)
	}
	if !ok {
		return kerr.UnknownTopicOrPartition.Code, ptrTo(fmt.Sprintf("No such partition as %s-%d", topic, partition))
	}
	usable := func(r int32) bool { return active(img, r) }
	var rec *metadata.PartitionChangeRecord
	switch d.typ {
	case electPreferred:
		if len(st.Replicas) > 0 && st.Leader == st.Replicas[0] {
			return kerr.ElectionNotNeeded.Code, nil
		}
		rec = preferredElection(t.ID, partition, st, usable)
		if rec == nil {
			return kerr.PreferredLeaderNotAvailable.Code, ptrTo(fmt.Sprintf("Failed to elect leader for partition %s-%d under strategy PreferredReplicaPartitionLeaderElectionStrategy", topic, partition))
		}
	default:
		if st.Leader != metadata.NoLeader {
			return kerr.ElectionNotNeeded.Code, nil
		}
		rec = electPartition(t.ID, partition, st, -1, usable, true)
		if rec == nil || rec.Leader == nil || *rec.Leader == metadata.NoLeader {
			return kerr.EligibleLeadersNotAvailable.Code, ptrTo(fmt.Sprintf("Failed to elect leader for partition %s-%d under strategy UncleanLeaderElectionStrategy", topic, partition))
		}
	}
	d.recs = append(d.recs, rec)
	if d.states[t.ID] == nil {
		d.states[t.ID] = map[int32]metadata.PartitionState{}
	}
	d.states[t.ID][partition] = applyChange(st, rec)
	return 0, nil
}

// preferredElection returns the change that makes a partition's preferred
// replica its leader, as Kafka's PREFERRED election: the preferred replica
// if it is in the ISR and usable; otherwise the current leader stays if it
// may (no change), or else the next replica in order that may lead. nil
// when nothing changes.
func preferredElection(topicID metadata.Uuid, partition int32, st metadata.PartitionState, usable func(int32) bool) *metadata.PartitionChangeRecord {
	valid := func(r int32) bool { return r >= 0 && usable(r) && slices.Contains(st.ISR, r) }
	if len(st.Replicas) == 0 {
		return nil
	}
	leader := metadata.NoLeader
	switch {
	case valid(st.Replicas[0]):
		leader = st.Replicas[0]
	case valid(st.Leader):
		return nil
	default:
		for _, r := range st.Replicas[1:] {
			if valid(r) {
				leader = r
				break
			}
		}
	}
	if leader == metadata.NoLeader || leader == st.Leader {
		return nil
	}
	return &metadata.PartitionChangeRecord{TopicID: topicID, Partition: partition, Leader: &leader}
}

// applyChange returns a partition's state after rec, as replay makes it.
func applyChange(st metadata.PartitionState, rec *metadata.PartitionChangeRecord) metadata.PartitionState {
	if rec.ISR != nil {
		st.ISR = slices.Clone(rec.ISR)
	}
	if rec.Replicas != nil {
		st.Replicas = slices.Clone(rec.Replicas)
	}
	if rec.AddingReplicas != nil {
		st.AddingReplicas = slices.Clone(rec.AddingReplicas)
	}
	if rec.RemovingReplicas != nil {
		st.RemovingReplicas = slices.Clone(rec.RemovingReplicas)
	}
	if rec.Leader != nil {
		st.Leader = *rec.Leader
		st.LeaderEpoch++
	}
	if rec.LeaderRecoveryState != nil {
		st.LeaderRecoveryState = *rec.LeaderRecoveryState
	}
	st.PartitionEpoch++
	return st
}

func ptrTo[T any](v T) *T { return &v }

// electLeaders is the driver of ElectLeaders.
func (c *Controller) electLeaders(req *kmsg.ElectLeadersRequest) (kmsg.Response, error) {
	var resp *kmsg.ElectLeadersResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideElectLeaders(v, req)
		if len(recs) == 0 {
			return nil
		}
		if _, err := c.propose(recs); err != nil {
			perr := proposeError(err)
			for i := range resp.Topics {
				for j := range resp.Topics[i].Partitions {
					if p := &resp.Topics[i].Partitions[j]; p.ErrorCode == 0 {
						p.ErrorCode, p.ErrorMessage = codeOf(perr), messageOf(perr)
					}
				}
			}
			return nil
		}
		c.log.Info("leaders elected on request", "elections", len(recs), "type", req.ElectionType)
		return nil
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return resp, nil
}
