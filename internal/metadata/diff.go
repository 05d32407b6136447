package metadata

import (
	"bytes"
	"maps"
	"slices"
)

// Diff returns a delta on top of from whose Apply is equal to to (with to's
// offset), as if the records between the two images had been replayed: every
// difference appears in the change lists. Use it where records are not at
// hand: to hand a new publisher the whole image (Diff(EmptyImage(), img)), or
// to announce an image rebuilt from a snapshot. The delta may be replayed
// further.
func Diff(from, to *Image) *Delta {
	d := NewDelta(from)
	d.offset = to.offset

	for id := range from.brokers {
		if _, ok := to.brokers[id]; !ok {
			d.brokers[id] = nil
		}
	}
	for id, b := range to.brokers {
		if old, ok := from.brokers[id]; !ok || !brokerEqual(old, b) {
			b := b
			d.brokers[id] = &b
		}
	}

	for id, old := range from.topicsByID {
		if t, ok := to.topicsByID[id]; !ok || t.Name != old.Name || !hasAllPartitions(t, old) {
			d.deletedTopics[id] = old
		}
	}
	for id, t := range to.topicsByID {
		old, ok := from.topicsByID[id]
		if ok && old == t {
			continue
		}
		if _, deleted := d.deletedTopics[id]; !ok || deleted {
			d.topics[id] = &topicDelta{name: t.Name, id: id, fresh: true, partitions: maps.Clone(t.Partitions)}
			d.names[t.Name] = id
			continue
		}
		td := &topicDelta{name: t.Name, id: id, base: old, partitions: map[int32]PartitionState{}}
		for p, s := range t.Partitions {
			if prev, ok := old.Partitions[p]; !ok || !partitionEqual(prev, s) {
				td.partitions[p] = s
			}
		}
		if len(td.partitions) > 0 {
			d.topics[id] = td
		}
	}
	// A base topic whose name now belongs to another id is covered above:
	// its id is either deleted or renamed (deleted and created fresh).

	for res, cfg := range from.configs {
		if !maps.Equal(cfg, to.configs[res]) {
			d.configs[res] = &configDelta{cleared: true, set: map[string]configChange{}}
		}
	}
	for res, cfg := range to.configs {
		if maps.Equal(cfg, from.configs[res]) {
			continue
		}
		cd := &configDelta{cleared: true, set: make(map[string]configChange, len(cfg))}
		for k, v := range cfg {
			cd.set[k] = configChange{value: v}
		}
		d.configs[res] = cd
	}

	if from.nextProducerID != to.nextProducerID {
		d.producerIDSet, d.nextProducerID = true, to.nextProducerID
	}
	for id := range from.acls {
		if _, ok := to.acls[id]; !ok {
			d.acls[id] = nil
		}
	}
	for id, a := range to.acls {
		if old, ok := from.acls[id]; !ok || old != a {
			a := a
			d.acls[id] = &a
		}
	}
	for k := range from.scram {
		if _, ok := to.scram[k]; !ok {
			d.scram[k] = nil
		}
	}
	for k, c := range to.scram {
		if old, ok := from.scram[k]; !ok || !scramEqual(old, c) {
			c := c
			d.scram[k] = &c
		}
	}
	for name := range from.features {
		if _, ok := to.features[name]; !ok {
			d.features[name] = 0
		}
	}
	for name, level := range to.features {
		if from.features[name] != level {
			d.features[name] = level
		}
	}
	return d
}

// hasAllPartitions reports whether t keeps every partition of old; a topic
// that lost partitions can only be the result of deleting and re-creating it.
func hasAllPartitions(t, old *TopicImage) bool {
	for p := range old.Partitions {
		if _, ok := t.Partitions[p]; !ok {
			return false
		}
	}
	return true
}

func brokerEqual(a, b BrokerRegistration) bool {
	return a.ID == b.ID && a.IncarnationID == b.IncarnationID && a.Epoch == b.Epoch &&
		slices.Equal(a.Endpoints, b.Endpoints) && slices.Equal(a.Features, b.Features) &&
		a.Rack == b.Rack && a.Fenced == b.Fenced && a.InControlledShutdown == b.InControlledShutdown
}

func partitionEqual(a, b PartitionState) bool {
	return slices.Equal(a.Replicas, b.Replicas) && slices.Equal(a.ISR, b.ISR) &&
		slices.Equal(a.AddingReplicas, b.AddingReplicas) && slices.Equal(a.RemovingReplicas, b.RemovingReplicas) &&
		a.Leader == b.Leader && a.LeaderRecoveryState == b.LeaderRecoveryState &&
		a.LeaderEpoch == b.LeaderEpoch && a.PartitionEpoch == b.PartitionEpoch
}

func scramEqual(a, b ScramCredential) bool {
	return a.Name == b.Name && a.Mechanism == b.Mechanism && a.Iterations == b.Iterations &&
		bytes.Equal(a.Salt, b.Salt) && bytes.Equal(a.StoredKey, b.StoredKey) && bytes.Equal(a.ServerKey, b.ServerKey)
}
