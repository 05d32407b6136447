package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// The broker's handlers authorize what a request names (its topics, its
// transactional id, the cluster) with the principal's ACLs, following
// auth.RequiredFor: a refused topic is answered TOPIC_AUTHORIZATION_FAILED
// and the rest of the request is served, as Kafka does. Without an
// authorizer (authorizer.class.name empty) every check passes and costs
// nothing.

// topicAuthz answers, for one request, whether its principal may perform an
// operation on each topic the request names. The authorizer is asked once
// per topic name, however many partitions of the topic the request lists.
type topicAuthz struct {
	rc *wire.RequestContext
	op kmsg.ACLOperation
	// all is set when every topic is allowed: no authorizer, or a right
	// that covers the whole request (CLUSTER_ACTION of a follower).
	all bool
	// none is set when no topic is allowed (a follower's request without
	// CLUSTER_ACTION).
	none bool
	seen map[string]bool
}

// newTopicAuthz returns the topic checks of op for rc.
func newTopicAuthz(rc *wire.RequestContext, op kmsg.ACLOperation) *topicAuthz {
	return &topicAuthz{rc: rc, op: op, all: !authorizing(rc)}
}

// allowed reports whether the principal may perform the operation on topic.
func (a *topicAuthz) allowed(topic string) bool {
	if a.all {
		return true
	}
	if a.none {
		return false
	}
	if ok, found := a.seen[topic]; found {
		return ok
	}
	if a.seen == nil {
		a.seen = map[string]bool{}
	}
	ok := a.rc.Authorize(a.op, kmsg.ACLResourceTypeTopic, topic)
	a.seen[topic] = ok
	return ok
}

// replicaTopicAuthz returns the topic checks of a request that a follower
// replica may send (ListOffsets, OffsetForLeaderEpoch): CLUSTER_ACTION on
// the cluster, the inter-broker right, allows every topic. Without it a
// request from a replica (replica true) is refused on every topic, and any
// other needs op on each topic.
func replicaTopicAuthz(rc *wire.RequestContext, replica bool, op kmsg.ACLOperation) *topicAuthz {
	a := newTopicAuthz(rc, op)
	if a.all {
		return a
	}
	if rc.AuthorizeCluster(kmsg.ACLOperationClusterAction) {
		a.all = true
	} else if replica {
		a.none = true
	}
	return a
}

// newCreateAuthz returns the checks of topic creation (CreateTopics,
// Metadata's auto-creation): CREATE on the cluster allows any topic,
// otherwise each topic needs CREATE.
func newCreateAuthz(rc *wire.RequestContext) *topicAuthz {
	a := newTopicAuthz(rc, kmsg.ACLOperationCreate)
	if !a.all && rc.AuthorizeCluster(kmsg.ACLOperationCreate) {
		a.all = true
	}
	return a
}

// authorizing reports whether rc has an authorizer to ask: without one
// every operation is allowed and handlers skip their checks.
func authorizing(rc *wire.RequestContext) bool {
	return rc != nil && rc.Authz != nil
}

// errTopicAuthz is the answer of a partition whose topic the principal may
// not use for the request's operation.
var errTopicAuthz error = kerr.TopicAuthorizationFailed
