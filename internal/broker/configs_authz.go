package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// authorizeConfigResource checks op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on
// the resource of a config request, as Kafka maps config resources to ACL
// resources: a TOPIC on the topic, a GROUP on the group, and the node-wide
// ones (BROKER, BROKER_LOGGER, CLIENT_METRICS, and kmirror's MIRROR, whose
// properties hold the source's credentials) on the cluster. It returns the
// error of the resource type, nil when allowed. Unknown resource types are
// left to the handlers, which refuse them.
func authorizeConfigResource(rc *wire.RequestContext, typ kmsg.ConfigResourceType, name string, op kmsg.ACLOperation) *kerr.Error {
	if !authorizing(rc) {
		return nil
	}
	var rt kmsg.ACLResourceType
	switch int8(typ) {
	case metadata.ResourceTopic:
		rt = kmsg.ACLResourceTypeTopic
	case metadata.ResourceGroup:
		rt = kmsg.ACLResourceTypeGroup
	case metadata.ResourceBroker, metadata.ResourceBrokerLogger, metadata.ResourceClientMetrics, metadata.ResourceMirror:
		rt, name = kmsg.ACLResourceTypeCluster, wire.ClusterResourceName
	default:
		return nil
	}
	if rc.Authorize(op, rt, name) {
		return nil
	}
	return auth.ErrorFor(rt)
}
