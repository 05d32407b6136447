package txn

import (
	"cmp"
	"math"
	"slices"

	"github.com/kmirror/kmirror/internal/storage"
)

// NoProducerID and NoProducerEpoch are Kafka's "none" values.
const (
	NoProducerID    int64 = -1
	NoProducerEpoch int16 = -1
)

// Txn is the metadata of one transactional id: what __transaction_state
// stores for it, plus the previous producer id and epoch that InitProducerId
// retries are recognised by (like Kafka, not stored: they are lost when the
// coordinator moves).
//
// A Txn is never modified once installed in a shard: transitions build a
// new one, so that a write that fails leaves the installed one intact.
type Txn struct {
	ID            string
	ProducerID    int64
	ProducerEpoch int16
	// LastProducerID and LastProducerEpoch are the id and epoch the
	// producer had before the last InitProducerId (NoProducerID /
	// NoProducerEpoch when unknown).
	LastProducerID    int64
	LastProducerEpoch int16
	TimeoutMs         int32
	State             State
	// Partitions are the partitions of the ongoing (or completing)
	// transaction, sorted, without duplicates; empty when no transaction is
	// in progress.
	Partitions []storage.TopicPartition
	// StartTime is when the current transaction added its first partition
	// (milliseconds), -1 when none started; LastUpdate is the time of the
	// last transition.
	StartTime  int64
	LastUpdate int64
}

// clone returns a copy that shares nothing mutable with t.
func (t *Txn) clone() *Txn {
	c := *t
	c.Partitions = slices.Clone(t.Partitions)
	return &c
}

// HasPartition reports whether tp is part of the transaction.
func (t *Txn) HasPartition(tp storage.TopicPartition) bool {
	_, ok := slices.BinarySearchFunc(t.Partitions, tp, compareTP)
	return ok
}

// hasAll reports whether every partition of tps is in the transaction.
func (t *Txn) hasAll(tps []storage.TopicPartition) bool {
	for _, tp := range tps {
		if !t.HasPartition(tp) {
			return false
		}
	}
	return true
}

// withPartitions returns the sorted union of t's partitions and tps.
func (t *Txn) withPartitions(tps []storage.TopicPartition) []storage.TopicPartition {
	out := slices.Clone(t.Partitions)
	out = append(out, tps...)
	return sortedPartitions(out)
}

// sortedPartitions sorts tps and drops duplicates, in place.
func sortedPartitions(tps []storage.TopicPartition) []storage.TopicPartition {
	slices.SortFunc(tps, compareTP)
	return slices.Compact(tps)
}

func compareTP(a, b storage.TopicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// epochExhausted reports whether a producer epoch leaves no room for the
// bumps a transaction may need (Kafka's TransactionMetadata.isEpochExhausted):
// at Short.MaxValue-1 the producer gets a new id instead.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }
