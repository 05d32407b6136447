package metadata

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
)

// This file answers "what changed?" for publishers. Every answer compares
// the delta's effect with its base image; things created and removed within
// one delta do not appear.

// HasChanges reports whether the delta changes anything but the offset.
func (d *Delta) HasChanges() bool {
	return len(d.brokers) > 0 || len(d.topics) > 0 || len(d.deletedTopics) > 0 ||
		len(d.configs) > 0 || d.producerIDSet || len(d.acls) > 0 || len(d.scram) > 0 || len(d.quotas) > 0 ||
		len(d.features) > 0
}

// ChangedBrokers returns the ids of brokers registered, re-registered,
// unregistered, fenced, unfenced or put in controlled shutdown, sorted.
func (d *Delta) ChangedBrokers() []int32 {
	return slices.Sorted(maps.Keys(d.brokers))
}

// CreatedTopics returns the ids of topics the delta created, sorted by name.
// A topic removed and created again with the same id is both created and
// deleted.
func (d *Delta) CreatedTopics() []Uuid {
	var ids []Uuid
	for id, td := range d.topics {
		if td.fresh {
			ids = append(ids, id)
		}
	}
	return d.sortTopicIDs(ids)
}

// ChangedTopics returns the ids of topics that exist after the delta and were
// created by it or had partitions added or changed, sorted by name. Look them
// up in the image the delta produced.
func (d *Delta) ChangedTopics() []Uuid {
	return d.sortTopicIDs(slices.Collect(maps.Keys(d.topics)))
}

func (d *Delta) sortTopicIDs(ids []Uuid) []Uuid {
	slices.SortFunc(ids, func(a, b Uuid) int { return cmp.Compare(d.topics[a].name, d.topics[b].name) })
	return ids
}

// ChangedPartitions returns the partitions of topic id that the delta created
// or changed, sorted; all partitions of a created topic.
func (d *Delta) ChangedPartitions(id Uuid) []int32 {
	td, ok := d.topics[id]
	if !ok {
		return nil
	}
	return sortedPartitions(td.partitions)
}

// DeletedTopics returns the base image's topics that the delta removed, as
// they were before, sorted by name. Handle deletions before creations: a
// name (or, in theory, an id) can be deleted and created in one delta.
func (d *Delta) DeletedTopics() []*TopicImage {
	ts := slices.Collect(maps.Values(d.deletedTopics))
	slices.SortFunc(ts, func(a, b *TopicImage) int { return cmp.Compare(a.Name, b.Name) })
	return ts
}

// ChangedConfigs returns the resources whose configs differ between the base
// and the result (topic deletion clears the topic's configs), sorted by type
// then name.
func (d *Delta) ChangedConfigs() []ConfigResource {
	var out []ConfigResource
	for res, cd := range d.configs {
		if !maps.Equal(d.effectiveConfigs(res, cd), d.base.configs[res]) {
			out = append(out, res)
		}
	}
	slices.SortFunc(out, compareResources)
	return out
}

// MirrorNameChange is a change of a topic's mirror.name config: the topic
// joined a mirror (Old == ""), left one (New == ""), or both.
type MirrorNameChange struct {
	Topic    string
	Old, New string
}

// MirrorNameChanges returns the topics whose mirror.name changed, sorted by
// topic. Deleting a topic that was in a mirror reports New == "".
func (d *Delta) MirrorNameChanges() []MirrorNameChange {
	var out []MirrorNameChange
	for _, res := range d.ChangedConfigs() {
		if res.Type != ResourceTopic {
			continue
		}
		old := d.base.configs[res][MirrorNameConfig]
		now, _ := d.config(res, MirrorNameConfig)
		if old != now {
			out = append(out, MirrorNameChange{Topic: res.Name, Old: old, New: now})
		}
	}
	return out
}

// ChangedMirrors returns the names of mirrors whose configuration changed
// (created, altered or deleted), sorted.
func (d *Delta) ChangedMirrors() []string {
	var out []string
	for _, res := range d.ChangedConfigs() {
		if res.Type == ResourceMirror {
			out = append(out, res.Name)
		}
	}
	return out
}

// ProducerIDsChanged reports whether a producer-id block was handed out.
func (d *Delta) ProducerIDsChanged() bool { return d.producerIDSet }

// ChangedACLs returns the ids of ACL entries added or removed, sorted.
func (d *Delta) ChangedACLs() []Uuid {
	return sortedKeys(d.acls, func(a, b Uuid) int { return bytes.Compare(a[:], b[:]) })
}

// ChangedScramCredentials returns the credentials added, replaced or
// removed, sorted by user then mechanism.
func (d *Delta) ChangedScramCredentials() []ScramKey {
	return sortedKeys(d.scram, func(a, b ScramKey) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Mechanism, b.Mechanism))
	})
}

// ChangedFeatures returns the names of features whose level changed, sorted.
func (d *Delta) ChangedFeatures() []string {
	return slices.Sorted(maps.Keys(d.features))
}

// LocalPartition is a partition replica a broker hosts (or hosted).
type LocalPartition struct {
	Topic     string
	TopicID   Uuid
	Partition int32
	// State is the new state, or for Deletes the last state the broker was
	// a replica in.
	State PartitionState
	// TopicDeleted is set in Deletes when the whole topic was removed
	// (rather than the replica moved away).
	TopicDeleted bool
}

// LocalReplicaChanges is what a delta means for the replicas of one broker.
type LocalReplicaChanges struct {
	// Leaders are created or changed partitions this broker now leads.
	Leaders []LocalPartition
	// Followers are created or changed partitions this broker is a replica
	// of and does not lead.
	Followers []LocalPartition
	// Deletes are replicas this broker must remove: their topic was deleted
	// or the broker is no longer in the replica set.
	Deletes []LocalPartition
}

// LocalChanges returns what the delta means for broker id's replicas, each
// list sorted by topic name then partition. Callers apply Deletes first.
func (d *Delta) LocalChanges(id int32) LocalReplicaChanges {
	var lc LocalReplicaChanges
	for _, t := range d.DeletedTopics() {
		for _, p := range t.PartitionIDs() {
			if s := t.Partitions[p]; s.HasReplica(id) {
				lc.Deletes = append(lc.Deletes, LocalPartition{Topic: t.Name, TopicID: t.ID, Partition: p, State: s, TopicDeleted: true})
			}
		}
	}
	for _, tid := range d.ChangedTopics() {
		td := d.topics[tid]
		for _, p := range sortedPartitions(td.partitions) {
			s := td.partitions[p]
			lp := LocalPartition{Topic: td.name, TopicID: tid, Partition: p, State: s}
			switch {
			case s.Leader == id:
				lc.Leaders = append(lc.Leaders, lp)
			case s.HasReplica(id):
				lc.Followers = append(lc.Followers, lp)
			case !td.fresh:
				if prev, ok := td.base.Partitions[p]; ok && prev.HasReplica(id) {
					lp.State = prev
					lc.Deletes = append(lc.Deletes, lp)
				}
			}
		}
	}
	slices.SortStableFunc(lc.Deletes, func(a, b LocalPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return lc
}
