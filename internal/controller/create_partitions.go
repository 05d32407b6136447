package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// decideCreatePartitions validates a CreatePartitions request and returns
// the PartitionRecords of the new partitions and the response. A topic's
// partition count only grows (INVALID_PARTITIONS otherwise); the new
// partitions take the replication factor of partition 0, placed as
// CreateTopics does (continuing its round-robin) unless the request assigns
// them, one assignment per new partition.
func decideCreatePartitions(v *view, req *kmsg.CreatePartitionsRequest) ([]metadata.Record, *kmsg.CreatePartitionsResponse) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	resp.Version = req.Version
	counts := map[string]int{}
	for _, t := range req.Topics {
		counts[t.Topic]++
	}
	var recs []metadata.Record
	created := 0
	answered := map[string]bool{}
	for _, t := range req.Topics {
		if answered[t.Topic] {
			continue
		}
		answered[t.Topic] = true
		res := kmsg.NewCreatePartitionsResponseTopic()
		res.Topic = t.Topic
		var trecs []metadata.Record
		var err error
		if counts[t.Topic] > 1 {
			err = errf(kerr.InvalidRequest, "Duplicate topic name.")
		} else {
			// A mirrored topic grows only through its mirror's
			// partition sync (mirror_readonly.go).
			err = mirroredTopicRefusal(v.img, t.Topic, "adding partitions", syncingMirror(req))
		}
		if err == nil {
			trecs, err = createPartitions(v, t, created)
		}
		if err != nil {
			res.ErrorCode = codeOf(err)
			res.ErrorMessage = messageOf(err)
		} else {
			recs = append(recs, trecs...)
			created += len(trecs)
		}
		resp.Topics = append(resp.Topics, res)
	}
	return recs, resp
}

// createPartitions decides one topic; created is the number of partitions
// the request already creates.
func createPartitions(v *view, t kmsg.CreatePartitionsRequestTopic, created int) ([]metadata.Record, error) {
	img := v.img
	topic, ok := img.Topic(t.Topic)
	if !ok {
		return nil, errf(kerr.UnknownTopicOrPartition, "Topic '%s' does not exist.", t.Topic)
	}
	current := int32(len(topic.Partitions))
	switch {
	case t.Count == current:
		return nil, errf(kerr.InvalidPartitions, "Topic already has %d partition(s).", current)
	case t.Count < current:
		return nil, errf(kerr.InvalidPartitions, "The topic %s currently has %d partition(s); %d would not be an increase.", t.Topic, current, t.Count)
	}
	additional := t.Count - current
	if created+int(additional) > maxPartitionsPerRequest {
		return nil, errf(kerr.InvalidPartitions, "A request may create at most %d partitions; %s asks for %d more.", maxPartitionsPerRequest, t.Topic, additional)
	}
	if t.Assignment != nil && len(t.Assignment) != int(additional) {
		return nil, errf(kerr.InvalidReplicaAssignment, "Attempted to add %d additional partition(s), but only %d assignment(s) were specified.", additional, len(t.Assignment))
	}
	first, ok := topic.Partition(0)
	if !ok {
		return nil, errf(kerr.UnknownServerError, "Topic %s has no partition 0.", t.Topic)
	}
	rf := len(first.Replicas)

	var replicas [][]int32
	if t.Assignment != nil {
		for i, a := range t.Assignment {
			if err := validateManualReplicas(img, a.Replicas, rf); err != nil {
				return nil, err
			}
			if len(activeReplicas(img, a.Replicas)) == 0 {
				return nil, errf(kerr.InvalidReplicaAssignment, "All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", current+int32(i))
			}
			replicas = append(replicas, slices.Clone(a.Replicas))
		}
	} else {
		var err error
		replicas, err = placeReplicas(v.usableBrokers(), current, additional, int16(rf), v.rnd)
		if err != nil {
			return nil, err
		}
	}
	recs := make([]metadata.Record, 0, len(replicas))
	for i, rs := range replicas {
		isr := activeReplicas(img, rs)
		recs = append(recs, &metadata.PartitionRecord{TopicID: topic.ID, Partition: current + int32(i), PartitionState: metadata.PartitionState{
			Replicas: rs, ISR: isr, Leader: isr[0], LeaderRecoveryState: metadata.Recovered,
		}})
	}
	return recs, nil
}

// createPartitions is the driver of CreatePartitions.
func (c *Controller) createPartitions(req *kmsg.CreatePartitionsRequest) (kmsg.Response, error) {
	var resp *kmsg.CreatePartitionsResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideCreatePartitions(v, req)
		if len(recs) == 0 || req.ValidateOnly {
			return nil
		}
		if _, err := c.propose(recs); err != nil {
			perr := proposeError(err)
			for i := range resp.Topics {
				if t := &resp.Topics[i]; t.ErrorCode == 0 {
					t.ErrorCode, t.ErrorMessage = codeOf(perr), messageOf(perr)
				}
			}
		}
		return nil
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return resp, nil
}
