package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// fetchDenied returns which partitions of a fetch the principal may not
// read (nil when it may read them all), as Kafka decides it on every fetch
// over all partitions of the fetch session, not only those the request
// lists: a follower (a replica id) needs CLUSTER_ACTION on the cluster,
// and without it every partition is refused; a consumer needs READ on
// each partition's topic. A partition whose topic id is unknown is not
// refused here: it is answered UNKNOWN_TOPIC_ID, which says nothing about
// any topic.
func fetchDenied(rc *wire.RequestContext, img *metadata.Image, parts []fetchRequestPartition, follower bool) []bool {
	if !authorizing(rc) || len(parts) == 0 {
		return nil
	}
	denied := make([]bool, len(parts))
	if follower {
		if rc.AuthorizeCluster(kmsg.ACLOperationClusterAction) {
			return nil
		}
		for i := range denied {
			denied[i] = true
		}
		return denied
	}
	topics := newTopicAuthz(rc, kmsg.ACLOperationRead)
	some := false
	for i, rp := range parts {
		name, _, ok := resolveFetchTopic(img, rp.key)
		if !ok && !rp.key.id.IsZero() {
			continue
		}
		if !topics.allowed(name) {
			denied[i], some = true, true
		}
	}
	if !some {
		return nil
	}
	return denied
}
