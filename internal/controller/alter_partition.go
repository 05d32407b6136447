package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// decideAlterPartition validates an AlterPartition request (v0–v3) from a
// partition leader — its ISR changes — and returns the PartitionChangeRecord
// of every accepted change and the response, as Kafka's
// ReplicationControlManager.alterPartition does:
//
//   - the sender's broker epoch must be current (STALE_BROKER_EPOCH for the
//     whole request);
//   - per partition: a leader or partition epoch newer than the
//     controller's means this controller lags (NOT_CONTROLLER, so the
//     leader looks for the active one); the sender must be the leader
//     (INVALID_REQUEST) in the current leader epoch (FENCED_LEADER_EPOCH)
//     and partition epoch (INVALID_UPDATE_VERSION);
//   - the new ISR must be a duplicate-free subset of the replicas that
//     contains the leader, a recovering leader must stay alone in it, and a
//     recovered partition cannot go back to recovering (INVALID_REQUEST);
//   - every member must be registered, unfenced, not shutting down and, in
//     v3, in the broker epoch the leader names (INELIGIBLE_REPLICA;
//     OPERATION_NOT_ATTEMPTED in v0, which lacks that code).
//
// An accepted change sets the ISR (and the recovery state) without
// touching the leader, so the leader epoch stays and the partition epoch
// goes up by one; the response carries the state after it.
func decideAlterPartition(v *view, req *kmsg.AlterPartitionRequest) ([]metadata.Record, *kmsg.AlterPartitionResponse) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	resp.Version = req.Version
	img := v.img
	if err := checkBrokerEpoch(img, req.BrokerID, req.BrokerEpoch); err != nil {
		resp.ErrorCode = codeOf(err)
		return nil, resp
	}
	var recs []metadata.Record
	seen := map[metadata.Uuid]map[int32]bool{}
	for _, rt := range req.Topics {
		out := kmsg.NewAlterPartitionResponseTopic()
		out.Topic, out.TopidID = rt.Topic, rt.TopicID
		var topic *metadata.TopicImage
		var ok bool
		if req.Version >= 2 {
			topic, ok = img.TopicByID(metadata.Uuid(rt.TopicID))
		} else {
			topic, ok = img.Topic(rt.Topic)
		}
		for _, rp := range rt.Partitions {
			res := kmsg.NewAlterPartitionResponseTopicPartition()
			res.Partition = rp.Partition
			if !ok {
				res.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if req.Version >= 2 {
					res.ErrorCode = kerr.UnknownTopicID.Code
				}
				out.Partitions = append(out.Partitions, res)
				continue
			}
			if seen[topic.ID] == nil {
				seen[topic.ID] = map[int32]bool{}
			}
			if seen[topic.ID][rp.Partition] {
				res.ErrorCode = kerr.InvalidRequest.Code
				out.Partitions = append(out.Partitions, res)
				continue
			}
			seen[topic.ID][rp.Partition] = true
			rec, st, code := decideISRChange(img, req, topic, rp)
			res.ErrorCode = code
			if code == 0 {
				if rec != nil {
					recs = append(recs, rec)
				}
				res.LeaderID, res.LeaderEpoch, res.ISR = st.Leader, st.LeaderEpoch, slices.Clone(st.ISR)
				res.LeaderRecoveryState, res.PartitionEpoch = int8(st.LeaderRecoveryState), st.PartitionEpoch
			}
			out.Partitions = append(out.Partitions, res)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return recs, resp
}

// decideISRChange validates one partition's change and returns its record
// (nil when nothing changes) and the partition's state after it, or an
// error code.
func decideISRChange(img *metadata.Image, req *kmsg.AlterPartitionRequest, topic *metadata.TopicImage, rp kmsg.AlterPartitionRequestTopicPartition) (*metadata.PartitionChangeRecord, metadata.PartitionState, int16) {
	st, ok := topic.Partition(rp.Partition)
	switch {
	case !ok:
		return nil, st, kerr.UnknownTopicOrPartition.Code
	case rp.LeaderEpoch > st.LeaderEpoch || rp.PartitionEpoch > st.PartitionEpoch:
		return nil, st, kerr.NotController.Code
	case req.BrokerID != st.Leader:
		return nil, st, kerr.InvalidRequest.Code
	case rp.LeaderEpoch != st.LeaderEpoch:
		return nil, st, kerr.FencedLeaderEpoch.Code
	case rp.PartitionEpoch != st.PartitionEpoch:
		return nil, st, kerr.InvalidUpdateVersion.Code
	}
	type member struct {
		id    int32
		epoch int64
	}
	var members []member
	if req.Version >= 3 {
		for _, e := range rp.NewEpochISR {
			members = append(members, member{e.BrokerID, e.BrokerEpoch})
		}
	} else {
		for _, id := range rp.NewISR {
			members = append(members, member{id, -1})
		}
	}
	isr := make([]int32, 0, len(members))
	for _, m := range members {
		if !st.HasReplica(m.id) || slices.Contains(isr, m.id) {
			return nil, st, kerr.InvalidRequest.Code
		}
		isr = append(isr, m.id)
	}
	if !slices.Contains(isr, st.Leader) {
		return nil, st, kerr.InvalidRequest.Code
	}
	recovery := metadata.Recovered
	if req.Version >= 1 {
		recovery = metadata.LeaderRecoveryState(rp.LeaderRecoveryState)
	}
	switch {
	case recovery != metadata.Recovered && recovery != metadata.Recovering:
		return nil, st, kerr.InvalidRequest.Code
	case recovery == metadata.Recovering && len(isr) > 1:
		return nil, st, kerr.InvalidRequest.Code
	case st.LeaderRecoveryState == metadata.Recovered && recovery == metadata.Recovering:
		return nil, st, kerr.InvalidRequest.Code
	}
	for _, m := range members {
		reg, ok := img.Broker(m.id)
		if !ok || reg.Fenced || reg.InControlledShutdown || (m.epoch != -1 && m.epoch != reg.Epoch) {
			if req.Version == 0 {
				return nil, st, kerr.OperationNotAttempted.Code
			}
			return nil, st, kerr.IneligibleReplica.Code
		}
	}
	rec := &metadata.PartitionChangeRecord{TopicID: topic.ID, Partition: rp.Partition}
	changed := false
	if !slices.Equal(isr, st.ISR) {
		rec.ISR = isr
		st.ISR = isr
		changed = true
	}
	if recovery != st.LeaderRecoveryState {
		rs := recovery
		rec.LeaderRecoveryState = &rs
		st.LeaderRecoveryState = recovery
		changed = true
	}
	if !changed {
		return nil, st, 0
	}
	st.PartitionEpoch++
	return rec, st, 0
}

// alterPartition is the driver of AlterPartition.
func (c *Controller) alterPartition(req *kmsg.AlterPartitionRequest) (kmsg.Response, error) {
	var resp *kmsg.AlterPartitionResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideAlterPartition(v, req)
		if len(recs) == 0 {
			return nil
		}
		if _, err := c.propose(recs); err != nil {
			failed := req.ResponseKind().(*kmsg.AlterPartitionResponse)
			failed.Version, failed.ErrorCode = req.Version, codeOf(proposeError(err))
			resp = failed
			return nil
		}
		c.log.Info("ISR changes", "broker", req.BrokerID, "partitions", len(recs))
		return nil
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return resp, nil
}
