package group

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// The group APIs authorize what a request names with the principal's ACLs,
// as Kafka does (auth.RequiredFor): the group first (READ to take part in
// it or commit, DESCRIBE to read its offsets or state, DELETE to remove it
// or its offsets; GROUP_AUTHORIZATION_FAILED), then each topic
// (TOPIC_AUTHORIZATION_FAILED on its partitions, checked before whether
// the topic exists). Without an authorizer every check passes
// (wire.RequestContext.Authorize).

// topicRights answers, for one request, whether its principal may perform
// op on each topic the request names, asking the authorizer once per
// topic however many partitions of it the request lists.
type topicRights struct {
	rc   *wire.RequestContext
	op   kmsg.ACLOperation
	seen map[string]bool
}

func newTopicRights(rc *wire.RequestContext, op kmsg.ACLOperation) *topicRights {
	return &topicRights{rc: rc, op: op}
}

// allowed reports whether the principal may perform the operation on topic.
func (r *topicRights) allowed(topic string) bool {
	if r.rc == nil || r.rc.Authz == nil {
		return true
	}
	if ok, found := r.seen[topic]; found {
		return ok
	}
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	ok := r.rc.Authorize(r.op, kmsg.ACLResourceTypeTopic, topic)
	r.seen[topic] = ok
	return ok
}

// groupAllowed reports whether the principal may perform op on group.
func groupAllowed(rc *wire.RequestContext, op kmsg.ACLOperation, group string) bool {
	return rc.Authorize(op, kmsg.ACLResourceTypeGroup, group)
}
