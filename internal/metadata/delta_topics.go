package metadata

import (
	"fmt"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// maxTopicNameLen is Kafka's limit on topic name length.
const maxTopicNameLen = 249

// validTopicName applies Kafka's topic name rules.
func validTopicName(name string) error {
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("topic name %q is not allowed", name)
	}
	if len(name) > maxTopicNameLen {
		return fmt.Errorf("topic name is %d characters, the limit is %d", len(name), maxTopicNameLen)
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %q has a character outside [a-zA-Z0-9._-]", name)
		}
	}
	return nil
}

// topicByID returns a view of topic id as the delta sees it: its name and a
// partition lookup. ok is false when the topic does not exist.
func (d *Delta) topicByID(id Uuid) (name string, partition func(int32) (PartitionState, bool), ok bool) {
	if td, found := d.topics[id]; found {
		return td.name, td.partition, true
	}
	if _, deleted := d.deletedTopics[id]; deleted {
		return "", nil, false
	}
	t, found := d.base.topicsByID[id]
	if !found {
		return "", nil, false
	}
	return t.Name, t.Partition, true
}

// topicIDByName returns the id of the topic called name as the delta sees it.
func (d *Delta) topicIDByName(name string) (Uuid, bool) {
	if id, ok := d.names[name]; ok {
		return id, true
	}
	t, ok := d.base.topicsByName[name]
	if !ok {
		return Uuid{}, false
	}
	if _, deleted := d.deletedTopics[t.ID]; deleted {
		return Uuid{}, false
	}
	return t.ID, true
}

// topicForWrite returns the topicDelta of an existing topic, creating one on
// top of the base topic on first change.
func (d *Delta) topicForWrite(id Uuid) *topicDelta {
	if td, ok := d.topics[id]; ok {
		return td
	}
	t := d.base.topicsByID[id]
	td := &topicDelta{name: t.Name, id: id, base: t, partitions: map[int32]PartitionState{}}
	d.topics[id] = td
	return td
}

func (d *Delta) replayTopic(x *TopicRecord, off uint64) error {
	if err := validTopicName(x.Name); err != nil {
		return replayErr(x, off, kerr.InvalidTopicException, "%v", err)
	}
	if x.ID.IsZero() || x.ID == metadataTopicID {
		return replayErr(x, off, kerr.InvalidRequest, "topic %s: id %s is reserved", x.Name, x.ID)
	}
	if _, _, ok := d.topicByID(x.ID); ok {
		return replayErr(x, off, kerr.TopicAlreadyExists, "topic id %s already exists", x.ID)
	}
	if id, ok := d.topicIDByName(x.Name); ok {
		return replayErr(x, off, kerr.TopicAlreadyExists, "topic %s already exists with id %s", x.Name, id)
	}
	d.topics[x.ID] = &topicDelta{name: x.Name, id: x.ID, fresh: true, partitions: map[int32]PartitionState{}}
	d.names[x.Name] = x.ID
	return nil
}

// validatePartition checks the invariants every partition state keeps:
// replicas are non-empty and distinct; ISR, adding and removing replicas are
// distinct subsets of the replicas, and no replica is both adding and
// removing; the leader is NoLeader or a member of the ISR; the recovery state
// is known.
func validatePartition(s *PartitionState) (*kerr.Error, error) {
	if len(s.Replicas) == 0 {
		return kerr.InvalidReplicaAssignment, fmt.Errorf("no replicas")
	}
	replicas := make(map[int32]bool, len(s.Replicas))
	for _, r := range s.Replicas {
		if r < 0 || replicas[r] {
			return kerr.InvalidReplicaAssignment, fmt.Errorf("replicas %v: negative or repeated broker %d", s.Replicas, r)
		}
		replicas[r] = true
	}
	subset := func(what string, vs []int32) error {
		seen := make(map[int32]bool, len(vs))
		for _, v := range vs {
			if !replicas[v] || seen[v] {
				return fmt.Errorf("%s %v: broker %d repeated or not a replica %v", what, vs, v, s.Replicas)
			}
			seen[v] = true
		}
		return nil
	}
	if err := subset("isr", s.ISR); err != nil {
		return kerr.InvalidRequest, err
	}
	if err := subset("adding replicas", s.AddingReplicas); err != nil {
		return kerr.InvalidReplicaAssignment, err
	}
	if err := subset("removing replicas", s.RemovingReplicas); err != nil {
		return kerr.InvalidReplicaAssignment, err
	}
	for _, a := range s.AddingReplicas {
		if contains(s.RemovingReplicas, a) {
			return kerr.InvalidReplicaAssignment, fmt.Errorf("broker %d is both adding and removing", a)
		}
	}
	if s.Leader != NoLeader && !contains(s.ISR, s.Leader) {
		return kerr.InvalidRequest, fmt.Errorf("leader %d is not in isr %v", s.Leader, s.ISR)
	}
	if s.LeaderRecoveryState != Recovered && s.LeaderRecoveryState != Recovering {
		return kerr.InvalidRequest, fmt.Errorf("leader recovery state %d is unknown", s.LeaderRecoveryState)
	}
	return nil, nil
}

func clonePartition(s PartitionState) PartitionState {
	s.Replicas = cloneInt32s(s.Replicas)
	s.ISR = cloneInt32s(s.ISR)
	s.AddingReplicas = cloneInt32s(s.AddingReplicas)
	s.RemovingReplicas = cloneInt32s(s.RemovingReplicas)
	return s
}

func (d *Delta) replayPartition(x *PartitionRecord, off uint64) error {
	name, _, ok := d.topicByID(x.TopicID)
	if !ok {
		return replayErr(x, off, kerr.UnknownTopicID, "topic id %s does not exist", x.TopicID)
	}
	if x.Partition < 0 {
		return replayErr(x, off, kerr.InvalidPartitions, "%s: partition %d is negative", name, x.Partition)
	}
	s := clonePartition(x.PartitionState)
	if code, err := validatePartition(&s); err != nil {
		return replayErr(x, off, code, "%s-%d: %v", name, x.Partition, err)
	}
	d.topicForWrite(x.TopicID).partitions[x.Partition] = s
	return nil
}

// replayPartitionChange merges a change the way Kafka does: nil fields keep
// their value, a set Leader (any value) bumps the leader epoch, and every
// change bumps the partition epoch. kmirror's LeaderEpoch raises the leader
// epoch to max(old+1, LeaderEpoch), with or without a new Leader.
func (d *Delta) replayPartitionChange(x *PartitionChangeRecord, off uint64) error {
	name, partition, ok := d.topicByID(x.TopicID)
	if !ok {
		return replayErr(x, off, kerr.UnknownTopicID, "topic id %s does not exist", x.TopicID)
	}
	cur, ok := partition(x.Partition)
	if !ok {
		return replayErr(x, off, kerr.UnknownTopicOrPartition, "%s-%d does not exist", name, x.Partition)
	}
	s := cur
	if x.Replicas != nil {
		s.Replicas = cloneInt32s(x.Replicas)
	}
	if x.ISR != nil {
		s.ISR = cloneInt32s(x.ISR)
	}
	if x.RemovingReplicas != nil {
		s.RemovingReplicas = cloneInt32s(x.RemovingReplicas)
	}
	if x.AddingReplicas != nil {
		s.AddingReplicas = cloneInt32s(x.AddingReplicas)
	}
	if x.Leader != nil || x.LeaderEpoch != nil {
		if x.Leader != nil && *x.Leader < NoLeader {
			return replayErr(x, off, kerr.InvalidRequest, "%s-%d: leader %d", name, x.Partition, *x.Leader)
		}
		if x.LeaderEpoch != nil && *x.LeaderEpoch < 0 {
			return replayErr(x, off, kerr.InvalidRequest, "%s-%d: minimum leader epoch %d is negative", name, x.Partition, *x.LeaderEpoch)
		}
		if s.LeaderEpoch == math.MaxInt32 {
			return replayErr(x, off, kerr.InvalidRequest, "%s-%d: leader epoch would overflow", name, x.Partition)
		}
		if x.Leader != nil {
			s.Leader = *x.Leader
		}
		s.LeaderEpoch++
		if x.LeaderEpoch != nil && *x.LeaderEpoch > s.LeaderEpoch {
			s.LeaderEpoch = *x.LeaderEpoch
		}
	}
	if x.LeaderRecoveryState != nil {
		s.LeaderRecoveryState = *x.LeaderRecoveryState
	}
	if s.PartitionEpoch == math.MaxInt32 {
		return replayErr(x, off, kerr.InvalidRequest, "%s-%d: partition epoch would overflow", name, x.Partition)
	}
	s.PartitionEpoch++
	if code, err := validatePartition(&s); err != nil {
		return replayErr(x, off, code, "%s-%d: %v", name, x.Partition, err)
	}
	d.topicForWrite(x.TopicID).partitions[x.Partition] = s
	return nil
}

// replayRemoveTopic removes the topic and, as Kafka does, the configs of the
// topic resource with its name.
func (d *Delta) replayRemoveTopic(x *RemoveTopicRecord, off uint64) error {
	name, _, ok := d.topicByID(x.ID)
	if !ok {
		return replayErr(x, off, kerr.UnknownTopicID, "topic id %s does not exist", x.ID)
	}
	if td, inDelta := d.topics[x.ID]; inDelta {
		delete(d.topics, x.ID)
		if td.fresh {
			delete(d.names, td.name)
		}
	}
	if t, inBase := d.base.topicsByID[x.ID]; inBase {
		d.deletedTopics[x.ID] = t
	}
	d.configs[ConfigResource{Type: ResourceTopic, Name: name}] = &configDelta{cleared: true, set: map[string]configChange{}}
	return nil
}

// sortedPartitions returns the keys of a partition map in ascending order.
func sortedPartitions(m map[int32]PartitionState) []int32 {
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}
