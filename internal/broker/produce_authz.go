package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/wire"
)

// authorizeProduce refuses the partitions of a Produce that the principal
// may not write, before any other check, as Kafka does. A request holding a
// transactional batch anywhere needs WRITE on its transactional id (and must
// name one): without it every partition is answered
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED. Otherwise each partition of a
// topic without WRITE is answered TOPIC_AUTHORIZATION_FAILED, whether the
// topic exists or not, so that a client learns nothing about topics it may
// not use. Refused partitions of an acks=0 request close the connection
// like any other failure.
func authorizeProduce(rc *wire.RequestContext, req *kmsg.ProduceRequest, items []*produceItem) {
	if !authorizing(rc) {
		return
	}
	if hasTransactionalBatch(items) && (req.TransactionID == nil ||
		!rc.Authorize(kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *req.TransactionID)) {
		for _, it := range items {
			it.err = kerr.TransactionalIDAuthorizationFailed
		}
		return
	}
	topics := newTopicAuthz(rc, kmsg.ACLOperationWrite)
	for _, it := range items {
		if !topics.allowed(it.tp.Topic) {
			it.err = errTopicAuthz
		}
	}
}

// hasTransactionalBatch reports whether any partition's records start with
// a transactional batch (a record set that does not parse is left to the
// append checks).
func hasTransactionalBatch(items []*produceItem) bool {
	for _, it := range items {
		if h, err := record.ParseHeader(it.records); err == nil && h.IsTransactional() {
			return true
		}
	}
	return false
}
