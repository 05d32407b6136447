package mirrorconfig

import (
	"maps"
	"slices"

	"github.com/kmirror/kmirror/internal/config"
)

// NeverSyncedTopicConfigs are the topic configs a mirror never copies from
// the source, neither when it creates a topic nor in its periodic sync:
//   - mirror.name: the destination's own mirror membership;
//   - leader.replication.throttled.replicas and
//     follower.replication.throttled.replicas: they name the source's
//     brokers;
//   - min.insync.replicas: it must fit the destination's replication
//     factor, which may be lower than the source's (it is capped at the
//     destination's live brokers), and a value above it would refuse every
//     acks=all produce after failover.
var NeverSyncedTopicConfigs = []string{
	"follower.replication.throttled.replicas",
	"leader.replication.throttled.replicas",
	"min.insync.replicas",
	"mirror.name",
}

// SyncsTopicConfig reports whether a mirror copies the topic config name
// from the source.
func SyncsTopicConfig(name string) bool {
	return !slices.Contains(NeverSyncedTopicConfigs, name)
}

// ManagedTopicConfig reports whether the periodic config sync owns the
// destination topic config name: a config this cluster knows, that only
// kmirror does not set itself, and that is not never-synced. The sync sets
// such a config to the source's value and removes it when the source has
// none; every other config of the topic is left alone.
func ManagedTopicConfig(name string) bool {
	def, known := config.TopicDefinition(name)
	return known && !def.Internal && SyncsTopicConfig(name)
}

// TopicConfigsToSync returns the source topic configs (the ones set on the
// topic, not the source brokers' defaults) that a mirrored topic takes:
// the managed ones whose value this cluster accepts. skipped names the
// rest, sorted, for a log line (names only: a value may be anything).
func TopicConfigsToSync(src map[string]string) (kept map[string]string, skipped []string) {
	kept = map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(src)) {
		if !ManagedTopicConfig(k) {
			skipped = append(skipped, k)
			continue
		}
		def, _ := config.TopicDefinition(k)
		if _, err := def.Parse(src[k]); err != nil {
			skipped = append(skipped, k)
			continue
		}
		kept[k] = src[k]
	}
	return kept, skipped
}
