package metadata

import (
	"bytes"
	"cmp"
	"maps"
	"slices"
	"sync"
)

// Image is an immutable snapshot of the cluster metadata at Offset, the
// metadata log offset (raft index) of the last record it reflects.
//
// Never mutate an Image or anything reachable from it: Delta.Apply builds a
// new Image that shares every unchanged part (per topic, per config resource)
// with its base, so one write would corrupt many images. Accessors that
// return maps or slices of the image's own data say so; the rest copy.
// An Image is safe for concurrent use.
type Image struct {
	offset         uint64
	brokers        map[int32]BrokerRegistration
	topicsByName   map[string]*TopicImage
	topicsByID     map[Uuid]*TopicImage
	configs        map[ConfigResource]map[string]string
	nextProducerID int64
	acls           map[Uuid]ACLEntry
	scram          map[ScramKey]ScramCredential
	quotas         map[string]ClientQuota // by QuotaEntity.key
	features       map[string]int16

	sortedOnce   sync.Once
	sortedTopics []*TopicImage
}

// TopicImage is one topic in an Image. It is immutable and shared between
// images while the topic does not change; Partitions must not be modified.
type TopicImage struct {
	Name       string
	ID         Uuid
	Partitions map[int32]PartitionState
}

// Partition returns the state of partition p.
func (t *TopicImage) Partition(p int32) (PartitionState, bool) {
	s, ok := t.Partitions[p]
	return s, ok
}

// PartitionIDs returns the topic's partition ids in ascending order.
func (t *TopicImage) PartitionIDs() []int32 {
	return slices.Sorted(maps.Keys(t.Partitions))
}

var emptyImage = &Image{}

// EmptyImage returns the image of an empty metadata log (offset 0).
func EmptyImage() *Image { return emptyImage }

// Offset is the metadata log offset of the last record this image reflects,
// 0 for the empty image.
func (im *Image) Offset() uint64 { return im.offset }

// Brokers returns every registered broker, sorted by id.
func (im *Image) Brokers() []BrokerRegistration {
	out := make([]BrokerRegistration, 0, len(im.brokers))
	for _, id := range slices.Sorted(maps.Keys(im.brokers)) {
		out = append(out, im.brokers[id])
	}
	return out
}

// Broker returns the registration of broker id.
func (im *Image) Broker(id int32) (BrokerRegistration, bool) {
	b, ok := im.brokers[id]
	return b, ok
}

// Topic returns the topic with this name.
func (im *Image) Topic(name string) (*TopicImage, bool) {
	t, ok := im.topicsByName[name]
	return t, ok
}

// TopicByID returns the topic with this id.
func (im *Image) TopicByID(id Uuid) (*TopicImage, bool) {
	t, ok := im.topicsByID[id]
	return t, ok
}

// Topics returns every topic sorted by name. The slice is shared by all
// callers of this image: do not modify it.
func (im *Image) Topics() []*TopicImage {
	im.sortedOnce.Do(func() {
		ts := slices.Collect(maps.Values(im.topicsByID))
		slices.SortFunc(ts, func(a, b *TopicImage) int { return cmp.Compare(a.Name, b.Name) })
		im.sortedTopics = ts
	})
	return im.sortedTopics
}

// NumTopics returns the number of topics.
func (im *Image) NumTopics() int { return len(im.topicsByID) }

// Configs returns a copy of the configs set on res (empty, never nil, when
// none are).
func (im *Image) Configs(res ConfigResource) map[string]string {
	out := make(map[string]string, len(im.configs[res]))
	maps.Copy(out, im.configs[res])
	return out
}

// Config returns one config of res without copying the others.
func (im *Image) Config(res ConfigResource, name string) (string, bool) {
	v, ok := im.configs[res][name]
	return v, ok
}

// ConfigResources returns the resources of type typ that have at least one
// config, sorted by name.
func (im *Image) ConfigResources(typ int8) []ConfigResource {
	var out []ConfigResource
	for res := range im.configs {
		if res.Type == typ {
			out = append(out, res)
		}
	}
	slices.SortFunc(out, func(a, b ConfigResource) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Mirrors returns the names of the mirrors (MIRROR config resources with at
// least one config), sorted.
func (im *Image) Mirrors() []string {
	var out []string
	for _, res := range im.ConfigResources(ResourceMirror) {
		out = append(out, res.Name)
	}
	return out
}

// MirrorTopics returns the names of the topics whose mirror.name config is
// mirror, sorted.
func (im *Image) MirrorTopics(mirror string) []string {
	var out []string
	for res, cfg := range im.configs {
		if res.Type != ResourceTopic || cfg[MirrorNameConfig] != mirror {
			continue
		}
		if _, ok := im.topicsByName[res.Name]; ok {
			out = append(out, res.Name)
		}
	}
	slices.Sort(out)
	return out
}

// NextProducerID is the first producer id not yet handed out in a block.
func (im *Image) NextProducerID() int64 { return im.nextProducerID }

// ACLs returns every ACL entry, sorted by id.
func (im *Image) ACLs() []ACLEntry {
	out := slices.Collect(maps.Values(im.acls))
	slices.SortFunc(out, func(a, b ACLEntry) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	return out
}

// ACL returns the ACL entry with this id.
func (im *Image) ACL(id Uuid) (ACLEntry, bool) {
	a, ok := im.acls[id]
	return a, ok
}

// ScramCredentials returns every SCRAM credential sorted by user name, then
// mechanism. The byte slices are shared with the image: do not modify them.
func (im *Image) ScramCredentials() []ScramCredential {
	out := slices.Collect(maps.Values(im.scram))
	slices.SortFunc(out, func(a, b ScramCredential) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Mechanism, b.Mechanism))
	})
	return out
}

// ScramCredential returns a user's credential for one mechanism.
func (im *Image) ScramCredential(name string, mechanism int8) (ScramCredential, bool) {
	c, ok := im.scram[ScramKey{name, mechanism}]
	return c, ok
}

// Features returns a copy of the finalized feature levels.
func (im *Image) Features() map[string]int16 {
	out := make(map[string]int16, len(im.features))
	maps.Copy(out, im.features)
	return out
}

// FeatureLevel returns the finalized level of a feature, 0 when unset.
func (im *Image) FeatureLevel(name string) int16 { return im.features[name] }
