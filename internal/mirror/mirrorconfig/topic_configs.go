package mirrorconfig

import "slices"

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
