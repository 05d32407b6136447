package txn

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// The transaction APIs authorize as Kafka does (auth.RequiredFor): a
// producer's requests need WRITE on their transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and WRITE on the topics it adds
// (TOPIC_AUTHORIZATION_FAILED, the other partitions not attempted), or
// READ on the group whose offsets it adds; a broker's AddPartitionsToTxn
// (v4+) needs CLUSTER_ACTION; descriptions and listings need DESCRIBE on
// the transactional id. Without an authorizer every check passes
// (wire.RequestContext.Authorize).

// txnIDAllowed reports whether the principal may perform op on the
// transactional id.
func txnIDAllowed(rc *wire.RequestContext, op kmsg.ACLOperation, id string) bool {
	return rc.Authorize(op, kmsg.ACLResourceTypeTransactionalId, id)
}

// topicsAllowed returns, for each distinct topic of tps, whether the
// principal may perform op on it; the authorizer is asked once per topic.
func topicsAllowed(rc *wire.RequestContext, op kmsg.ACLOperation, tps []storage.TopicPartition) map[string]bool {
	out := map[string]bool{}
	for _, tp := range tps {
		if _, done := out[tp.Topic]; !done {
			out[tp.Topic] = rc.Authorize(op, kmsg.ACLResourceTypeTopic, tp.Topic)
		}
	}
	return out
}
