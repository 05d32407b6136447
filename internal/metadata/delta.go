package metadata

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Delta accumulates records on top of a base Image. Replay checks each record
// against the state the delta describes (base plus everything replayed so
// far) and either records its effect or returns an error and changes
// nothing. Apply builds the resulting Image. A Delta is not safe for
// concurrent use; once handed to publishers it must no longer be replayed.
type Delta struct {
	base   *Image
	offset uint64

	// brokers holds changed registrations; a nil value is an unregistered
	// broker.
	brokers map[int32]*BrokerRegistration

	// topics holds every topic created or changed by the delta, by id. A
	// topic that exists in the base and is not in topics or deletedTopics is
	// unchanged.
	topics map[Uuid]*topicDelta
	// deletedTopics holds base topics the delta removed. A topic can be in
	// both maps when it was removed and then created again with the same id.
	deletedTopics map[Uuid]*TopicImage
	// names maps the names of topics created by the delta to their ids.
	names map[string]Uuid

	configs map[ConfigResource]*configDelta

	producerIDSet  bool
	nextProducerID int64

	// acls and scram hold changed entries; nil values are removals.
	acls  map[Uuid]*ACLEntry
	scram map[ScramKey]*ScramCredential
	// quotas holds the entities whose quotas changed, with their whole
	// new set (empty: removed).
	quotas map[string]*ClientQuota
	// features holds changed levels; 0 is a removal.
	features map[string]int16
}

// topicDelta is a topic as the delta sees it.
type topicDelta struct {
	name string
	id   Uuid
	// fresh topics were created by the delta and have no base partitions;
	// the others extend base.
	fresh      bool
	base       *TopicImage
	partitions map[int32]PartitionState // changed or new partitions
}

func (t *topicDelta) partition(p int32) (PartitionState, bool) {
	if s, ok := t.partitions[p]; ok {
		return s, true
	}
	if t.fresh {
		return PartitionState{}, false
	}
	s, ok := t.base.Partitions[p]
	return s, ok
}

// configDelta is the change to one config resource: when cleared, the base
// configs are dropped before set applies.
type configDelta struct {
	cleared bool
	set     map[string]configChange
}

type configChange struct {
	value  string
	remove bool
}

// NewDelta returns an empty delta on top of base.
func NewDelta(base *Image) *Delta {
	return &Delta{
		base:          base,
		offset:        base.offset,
		brokers:       map[int32]*BrokerRegistration{},
		topics:        map[Uuid]*topicDelta{},
		deletedTopics: map[Uuid]*TopicImage{},
		names:         map[string]Uuid{},
		configs:       map[ConfigResource]*configDelta{},
		acls:          map[Uuid]*ACLEntry{},
		scram:         map[ScramKey]*ScramCredential{},
		quotas:        map[string]*ClientQuota{},
		features:      map[string]int16{},
	}
}

// Base returns the image the delta started from.
func (d *Delta) Base() *Image { return d.base }

// Offset returns the offset of the last replayed record, or the base's
// offset when nothing was replayed.
func (d *Delta) Offset() uint64 { return d.offset }

// Replay adds the effect of record r, read at metadata log offset offset, to
// the delta. Offsets never go backwards; records of one log entry share its
// offset. An invalid record returns an error (a *ReplayError, or a plain
// error for an offset that goes backwards) and leaves the delta unchanged.
func (d *Delta) Replay(r Record, offset uint64) error {
	if offset < d.offset {
		return &ReplayError{Type: r.Type(), Offset: offset, Code: kerr.InvalidRequest,
			Reason: fmt.Sprintf("offset goes back from %d", d.offset)}
	}
	var err error
	switch x := r.(type) {
	case *RegisterBrokerRecord:
		err = d.replayRegisterBroker(x, offset)
	case *UnregisterBrokerRecord:
		err = d.replayUnregisterBroker(x, offset)
	case *FenceBrokerRecord:
		err = d.replayFencing(x, offset, x.ID, x.Epoch, FencingFence, ShutdownUnchanged)
	case *UnfenceBrokerRecord:
		err = d.replayFencing(x, offset, x.ID, x.Epoch, FencingUnfence, ShutdownUnchanged)
	case *BrokerRegistrationChangeRecord:
		err = d.replayFencing(x, offset, x.BrokerID, x.BrokerEpoch, x.Fenced, x.InControlledShutdown)
	case *TopicRecord:
		err = d.replayTopic(x, offset)
	case *PartitionRecord:
		err = d.replayPartition(x, offset)
	case *PartitionChangeRecord:
		err = d.replayPartitionChange(x, offset)
	case *RemoveTopicRecord:
		err = d.replayRemoveTopic(x, offset)
	case *ConfigRecord:
		err = d.replayConfig(x, offset)
	case *ProducerIdsRecord:
		err = d.replayProducerIDs(x, offset)
	case *AccessControlEntryRecord:
		err = d.replayACL(x, offset)
	case *RemoveAccessControlEntryRecord:
		err = d.replayRemoveACL(x, offset)
	case *UserScramCredentialRecord:
		err = d.replayScram(x, offset)
	case *RemoveUserScramCredentialRecord:
		err = d.replayRemoveScram(x, offset)
	case *ClientQuotaRecord:
		err = d.replayClientQuota(x, offset)
	case *FeatureLevelRecord:
		err = d.replayFeature(x, offset)
	case *NoOpRecord:
	default:
		err = replayErr(r, offset, kerr.InvalidRequest, "record type has no replay rule")
	}
	if err != nil {
		return err
	}
	d.offset = offset
	return nil
}

// Apply returns the image the delta produces. Unchanged parts of the base are
// shared, never copied; changed parts are new. The delta may be replayed
// further and applied again.
func (d *Delta) Apply() *Image {
	b := d.base
	im := &Image{
		offset:         d.offset,
		brokers:        b.brokers,
		topicsByName:   b.topicsByName,
		topicsByID:     b.topicsByID,
		configs:        b.configs,
		nextProducerID: b.nextProducerID,
		acls:           b.acls,
		scram:          b.scram,
		quotas:         b.quotas,
		features:       b.features,
	}
	if len(d.brokers) > 0 {
		im.brokers = cloneMap(b.brokers, len(d.brokers))
		for id, reg := range d.brokers {
			if reg == nil {
				delete(im.brokers, id)
			} else {
				im.brokers[id] = *reg
			}
		}
	}
	if len(d.topics) > 0 || len(d.deletedTopics) > 0 {
		im.topicsByName = cloneMap(b.topicsByName, len(d.topics))
		im.topicsByID = cloneMap(b.topicsByID, len(d.topics))
		for id, t := range d.deletedTopics {
			delete(im.topicsByID, id)
			if cur, ok := im.topicsByName[t.Name]; ok && cur.ID == id {
				delete(im.topicsByName, t.Name)
			}
		}
		for id, td := range d.topics {
			t := &TopicImage{Name: td.name, ID: id}
			if td.fresh {
				t.Partitions = cloneMap(td.partitions, 0)
			} else {
				t.Partitions = cloneMap(td.base.Partitions, len(td.partitions))
				for p, s := range td.partitions {
					t.Partitions[p] = s
				}
			}
			im.topicsByID[id] = t
			im.topicsByName[td.name] = t
		}
	}
	if len(d.configs) > 0 {
		im.configs = cloneMap(b.configs, len(d.configs))
		for res, cd := range d.configs {
			cfg := d.effectiveConfigs(res, cd)
			if len(cfg) == 0 {
				delete(im.configs, res)
			} else {
				im.configs[res] = cfg
			}
		}
	}
	if d.producerIDSet {
		im.nextProducerID = d.nextProducerID
	}
	if len(d.acls) > 0 {
		im.acls = cloneMap(b.acls, len(d.acls))
		for id, a := range d.acls {
			if a == nil {
				delete(im.acls, id)
			} else {
				im.acls[id] = *a
			}
		}
	}
	if len(d.scram) > 0 {
		im.scram = cloneMap(b.scram, len(d.scram))
		for k, c := range d.scram {
			if c == nil {
				delete(im.scram, k)
			} else {
				im.scram[k] = *c
			}
		}
	}
	if len(d.quotas) > 0 {
		im.quotas = cloneMap(b.quotas, len(d.quotas))
		for k, q := range d.quotas {
			if len(q.Values) == 0 {
				delete(im.quotas, k)
			} else {
				im.quotas[k] = ClientQuota{Entity: q.Entity, Values: cloneMap(q.Values, 0)}
			}
		}
	}
	if len(d.features) > 0 {
		im.features = cloneMap(b.features, len(d.features))
		for name, level := range d.features {
			if level == 0 {
				delete(im.features, name)
			} else {
				im.features[name] = level
			}
		}
	}
	return im
}

// effectiveConfigs returns a new map holding res's configs after cd.
func (d *Delta) effectiveConfigs(res ConfigResource, cd *configDelta) map[string]string {
	var cfg map[string]string
	if cd.cleared {
		cfg = make(map[string]string, len(cd.set))
	} else {
		cfg = cloneMap(d.base.configs[res], len(cd.set))
	}
	for k, ch := range cd.set {
		if ch.remove {
			delete(cfg, k)
		} else {
			cfg[k] = ch.value
		}
	}
	return cfg
}

// cloneMap copies m into a new non-nil map with room for extra more keys.
func cloneMap[K comparable, V any](m map[K]V, extra int) map[K]V {
	out := make(map[K]V, len(m)+extra)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// cloneInt32s copies vs so that the delta never aliases a caller's slice;
// empty becomes nil so that equal states compare equal.
func cloneInt32s(vs []int32) []int32 {
	if len(vs) == 0 {
		return nil
	}
	return append([]int32(nil), vs...)
}

func cloneBytes(p []byte) []byte {
	if len(p) == 0 {
		return nil
	}
	return append([]byte(nil), p...)
}
