package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// Partition reassignment (AlterPartitionReassignments, KIP-455), as Kafka's
// KRaft controller runs it. A reassignment of a partition from its replicas
// O to the target T is kept in the partition's state:
//
//	Replicas         = T, then the members of O not in T
//	AddingReplicas   = T − O
//	RemovingReplicas = O − T
//
// The adding replicas are ordinary followers: they create the log, fetch
// from the leader and join the ISR when caught up. Once every member of T
// is in the ISR the reassignment completes (completeReassignment): Replicas
// becomes T, the ISR loses the removed replicas, and a leader outside T
// hands leadership to the first member of T in the ISR; the removed
// replicas stop and delete their logs. Cancelling (a null target) returns
// to O. A new target for a partition under reassignment replaces the old
// one, starting again from O.

// reassignmentOf returns a partition's original replicas (before its
// ongoing reassignment) and its target, and whether one is ongoing.
func reassignmentOf(st metadata.PartitionState) (original, target []int32, ongoing bool) {
	if !st.Reassigning() {
		return st.Replicas, st.Replicas, false
	}
	for _, r := range st.Replicas {
		if !slices.Contains(st.AddingReplicas, r) {
			original = append(original, r)
		}
		if !slices.Contains(st.RemovingReplicas, r) {
			target = append(target, r)
		}
	}
	return original, target, true
}

// decideAlterPartitionReassignments validates an AlterPartitionReassignments
// request (v0–v1) and returns the records that start, replace or cancel
// each partition's reassignment. Per partition: an unknown topic or
// partition is UNKNOWN_TOPIC_OR_PARTITION; a target that is empty, has
// duplicates or names a broker that is not registered is
// INVALID_REPLICA_ASSIGNMENT; with AllowReplicationFactorChange false (v1)
// a target of another size is INVALID_REPLICATION_FACTOR; a cancel or a
// new target that would leave no in-sync replica is
// INVALID_REPLICA_ASSIGNMENT; cancelling a partition that is not being
// reassigned is NO_REASSIGNMENT_IN_PROGRESS.
// A partition named twice is INVALID_REQUEST.
func decideAlterPartitionReassignments(v *view, req *kmsg.AlterPartitionAssignmentsRequest) ([]metadata.Record, *kmsg.AlterPartitionAssignmentsResponse) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.Version = req.Version
	resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
	var recs []metadata.Record
	seen := map[string]map[int32]bool{}
	for _, rt := range req.Topics {
		out := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		out.Topic = rt.Topic
		topic, topicOK := v.img.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			res := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			res.Partition = rp.Partition
			if seen[rt.Topic] == nil {
				seen[rt.Topic] = map[int32]bool{}
			}
			var err error
			if seen[rt.Topic][rp.Partition] {
				err = errf(kerr.InvalidRequest, "partition %s-%d is named more than once", rt.Topic, rp.Partition)
			} else if !topicOK {
				err = errf(kerr.UnknownTopicOrPartition, "topic %q does not exist", rt.Topic)
			} else {
				var rec *metadata.PartitionChangeRecord
				rec, err = decideReassignment(v.img, topic, rp, req.Version >= 1 && !req.AllowReplicationFactorChange)
				if rec != nil {
					recs = append(recs, rec)
				}
			}
			seen[rt.Topic][rp.Partition] = true
			if err != nil {
				res.ErrorCode, res.ErrorMessage = codeOf(err), messageOf(err)
			}
			out.Partitions = append(out.Partitions, res)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return recs, resp
}

// decideReassignment returns the change that starts, replaces or cancels
// one partition's reassignment (nil when nothing changes).
func decideReassignment(img *metadata.Image, topic *metadata.TopicImage, rp kmsg.AlterPartitionAssignmentsRequestTopicPartition, sameRF bool) (*metadata.PartitionChangeRecord, error) {
	st, ok := topic.Partition(rp.Partition)
	if !ok {
		return nil, errf(kerr.UnknownTopicOrPartition, "partition %s-%d does not exist", topic.Name, rp.Partition)
	}
	original, _, ongoing := reassignmentOf(st)
	target := rp.Replicas
	if target == nil {
		if !ongoing {
			return nil, errf(kerr.NoReassignmentInProgress, "partition %s-%d is not being reassigned", topic.Name, rp.Partition)
		}
		target = original
	}
	if len(target) == 0 {
		return nil, errf(kerr.InvalidReplicaAssignment, "partition %s-%d: the target replica list is empty", topic.Name, rp.Partition)
	}
	for i, id := range target {
		if slices.Contains(target[:i], id) {
			return nil, errf(kerr.InvalidReplicaAssignment, "partition %s-%d: broker %d is listed twice", topic.Name, rp.Partition, id)
		}
		if _, ok := img.Broker(id); !ok {
			return nil, errf(kerr.InvalidReplicaAssignment, "partition %s-%d: broker %d is not registered", topic.Name, rp.Partition, id)
		}
	}
	if sameRF && len(target) != len(original) {
		return nil, errf(kerr.InvalidReplicationFactor, "partition %s-%d: the target has %d replicas, the partition %d, and the request does not allow a replication factor change",
			topic.Name, rp.Partition, len(target), len(original))
	}
	next := st
	next.Replicas = slices.Clone(target)
	next.AddingReplicas, next.RemovingReplicas = nil, nil
	for _, id := range original {
		if !slices.Contains(target, id) {
			next.Replicas = append(next.Replicas, id)
			next.RemovingReplicas = append(next.RemovingReplicas, id)
		}
	}
	for _, id := range target {
		if !slices.Contains(original, id) {
			next.AddingReplicas = append(next.AddingReplicas, id)
		}
	}
	// Replicas that leave without ever having joined (a replaced or
	// cancelled target) leave the ISR too.
	next.ISR = nil
	for _, id := range st.ISR {
		if slices.Contains(next.Replicas, id) {
			next.ISR = append(next.ISR, id)
		}
	}
	if len(next.ISR) == 0 {
		// A cancelled or replaced target would drop every in-sync
		// replica (they were all being added): Kafka refuses that too.
		return nil, errf(kerr.InvalidReplicaAssignment, "partition %s-%d: the change would leave it without an in-sync replica (ISR %v, replicas after it %v)",
			topic.Name, rp.Partition, st.ISR, next.Replicas)
	}
	if done := completeReassignment(img, topic.ID, rp.Partition, next); done != nil {
		// The target is already in sync (a shrink, a reorder): done at
		// once, one record from the current state to the completed one.
		final := applyChange(next, done)
		rec := reassignmentChange(topic.ID, rp.Partition, st, final)
		if final.Leader != st.Leader {
			rec.Leader = &final.Leader
		}
		return rec, nil
	}
	if slices.Equal(next.Replicas, st.Replicas) && slices.Equal(next.AddingReplicas, st.AddingReplicas) &&
		slices.Equal(next.RemovingReplicas, st.RemovingReplicas) && slices.Equal(next.ISR, st.ISR) {
		return nil, nil
	}
	if !slices.Contains(next.Replicas, st.Leader) && st.Leader != metadata.NoLeader {
		// A cancelled or replaced target dropped the replica that leads:
		// the partition needs another leader from what remains.
		rec := reassignmentChange(topic.ID, rp.Partition, st, next)
		leader := metadata.NoLeader
		for _, id := range next.Replicas {
			if slices.Contains(next.ISR, id) && active(img, id) {
				leader = id
				break
			}
		}
		rec.Leader = &leader
		return rec, nil
	}
	return reassignmentChange(topic.ID, rp.Partition, st, next), nil
}

// reassignmentChange is the record that takes a partition from st to
// next's replicas, adding and removing replicas and ISR (empty lists clear
// them; unchanged fields stay unset).
func reassignmentChange(topicID metadata.Uuid, partition int32, st, next metadata.PartitionState) *metadata.PartitionChangeRecord {
	rec := &metadata.PartitionChangeRecord{TopicID: topicID, Partition: partition}
	list := func(vs []int32) []int32 {
		if vs == nil {
			return []int32{}
		}
		return vs
	}
	if !slices.Equal(next.Replicas, st.Replicas) {
		rec.Replicas = list(next.Replicas)
	}
	if !slices.Equal(next.AddingReplicas, st.AddingReplicas) {
		rec.AddingReplicas = list(next.AddingReplicas)
	}
	if !slices.Equal(next.RemovingReplicas, st.RemovingReplicas) {
		rec.RemovingReplicas = list(next.RemovingReplicas)
	}
	if !slices.Equal(next.ISR, st.ISR) {
		rec.ISR = list(next.ISR)
	}
	return rec
}

// completeReassignment returns the change that completes a partition's
// reassignment once every replica of its target is in the ISR, or nil (no
// reassignment, or not caught up yet, or no member of the target can lead).
// The target becomes the replicas, the removed replicas leave the ISR, and
// a leader outside the target gives way to the first member of the target
// that is in the ISR and active.
func completeReassignment(img *metadata.Image, topicID metadata.Uuid, partition int32, st metadata.PartitionState) *metadata.PartitionChangeRecord {
	_, target, ongoing := reassignmentOf(st)
	if !ongoing {
		return nil
	}
	for _, id := range target {
		if !slices.Contains(st.ISR, id) {
			return nil
		}
	}
	rec := &metadata.PartitionChangeRecord{TopicID: topicID, Partition: partition,
		Replicas: slices.Clone(target), AddingReplicas: []int32{}, RemovingReplicas: []int32{}}
	isr := []int32{}
	for _, id := range st.ISR {
		if slices.Contains(target, id) {
			isr = append(isr, id)
		}
	}
	if !slices.Equal(isr, st.ISR) {
		rec.ISR = isr
	}
	if !slices.Contains(target, st.Leader) {
		i := slices.IndexFunc(target, func(id int32) bool { return slices.Contains(isr, id) && active(img, id) })
		if i < 0 {
			return nil
		}
		rec.Leader = &target[i]
	}
	return rec
}

// reassignmentCompletions returns the changes that complete every
// reassignment whose target is in sync (the active controller's
// maintenance runs it after each metadata change).
func reassignmentCompletions(img *metadata.Image) []metadata.Record {
	var recs []metadata.Record
	for _, t := range img.Topics() {
		for _, p := range t.PartitionIDs() {
			st, _ := t.Partition(p)
			if rec := completeReassignment(img, t.ID, p, st); rec != nil {
				recs = append(recs, rec)
			}
		}
	}
	return recs
}

// alterPartitionReassignments is the driver of AlterPartitionReassignments.
func (c *Controller) alterPartitionReassignments(req *kmsg.AlterPartitionAssignmentsRequest) (kmsg.Response, error) {
	var resp *kmsg.AlterPartitionAssignmentsResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideAlterPartitionReassignments(v, req)
		if len(recs) == 0 {
			return nil
		}
		if _, err := c.propose(recs); err != nil {
			return proposeError(err)
		}
		c.log.Info("partition reassignments changed", "partitions", len(recs))
		return nil
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return resp, nil
}
