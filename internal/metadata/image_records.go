package metadata

import (
	"cmp"
	"maps"
	"slices"
)

// ToRecords returns records that rebuild this image when replayed onto the
// empty image: feature levels first (so a reader learns the metadata
// version before anything else, as in Kafka), then brokers, topics with their
// partitions, configs, the producer-id counter, ACLs and SCRAM credentials,
// each group in a deterministic order. Raft snapshots store these records.
//
// The records share slices with the image; do not modify them.
func (im *Image) ToRecords() []Record {
	var rs []Record
	for _, name := range slices.Sorted(maps.Keys(im.features)) {
		rs = append(rs, &FeatureLevelRecord{Name: name, Level: im.features[name]})
	}
	for _, b := range im.Brokers() {
		rs = append(rs, &RegisterBrokerRecord{BrokerRegistration: b})
	}
	for _, t := range im.Topics() {
		rs = append(rs, &TopicRecord{Name: t.Name, ID: t.ID})
		for _, p := range t.PartitionIDs() {
			rs = append(rs, &PartitionRecord{TopicID: t.ID, Partition: p, PartitionState: t.Partitions[p]})
		}
	}
	resources := slices.SortedFunc(maps.Keys(im.configs), compareResources)
	for _, res := range resources {
		cfg := im.configs[res]
		for _, name := range slices.Sorted(maps.Keys(cfg)) {
			rs = append(rs, SetConfig(res, name, cfg[name]))
		}
	}
	if im.nextProducerID > 0 {
		rs = append(rs, &ProducerIdsRecord{BrokerID: -1, BrokerEpoch: -1, NextProducerID: im.nextProducerID})
	}
	for _, a := range im.ACLs() {
		rs = append(rs, &AccessControlEntryRecord{ACLEntry: a})
	}
	for _, c := range im.ScramCredentials() {
		rs = append(rs, &UserScramCredentialRecord{ScramCredential: c})
	}
	for _, q := range im.ClientQuotas() {
		for _, k := range slices.Sorted(maps.Keys(q.Values)) {
			rs = append(rs, &ClientQuotaRecord{Entity: q.Entity, Key: k, Value: q.Values[k]})
		}
	}
	return rs
}

func compareResources(a, b ConfigResource) int {
	return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Name, b.Name))
}
