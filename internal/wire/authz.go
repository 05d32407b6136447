package wire

import (
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Authorizer decides whether a principal connected from host may perform an
// operation on a resource. The server gives handlers one through
// RequestContext.Authz; package auth implements it (wire cannot import auth,
// which sits above it).
//
// Implementations must be safe for concurrent use and fast: handlers call
// Authorize once per topic, group or transactional id of a request.
type Authorizer interface {
	// Authorize reports whether principal ("User:alice") connected from host
	// (an IP address in text form) may perform op on the resource of type rt
	// called name. The cluster resource is called "kafka-cluster".
	Authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool
	// AuthorizeAny reports whether principal may perform op on at least one
	// resource of type rt (Kafka's authorizeByResourceType): an idempotent
	// producer without IDEMPOTENT_WRITE on the cluster needs WRITE on some
	// topic.
	AuthorizeAny(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool
}

// ClusterResourceName is the name of the cluster resource in ACLs and
// authorization checks, as in Kafka.
const ClusterResourceName = "kafka-cluster"

// AuthorizedOperationsOmitted is the authorized-operations value of a
// response whose request did not ask for the field (Kafka's Integer.MIN_VALUE).
const AuthorizedOperationsOmitted int32 = -2147483648

// resourceOperations are the operations that apply to each resource type, the
// ones an authorized-operations bitfield can contain (Kafka's
// AclEntry.supportedOperations).
var resourceOperations = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	kmsg.ACLResourceTypeTopic: {
		kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
	},
	kmsg.ACLResourceTypeGroup: {
		kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete,
	},
	kmsg.ACLResourceTypeCluster: {
		kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs,
		kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
	},
	kmsg.ACLResourceTypeTransactionalId: {
		kmsg.ACLOperationDescribe, kmsg.ACLOperationWrite,
	},
	kmsg.ACLResourceTypeDelegationToken: {
		kmsg.ACLOperationDescribe,
	},
	kmsg.ACLResourceTypeUser: {
		kmsg.ACLOperationCreateTokens, kmsg.ACLOperationDescribeTokens,
	},
}

// ResourceOperations returns the operations that apply to resources of type
// rt, nil for a type without any (ANY, UNKNOWN). The slice is shared: do not
// modify it.
func ResourceOperations(rt kmsg.ACLResourceType) []kmsg.ACLOperation {
	return resourceOperations[rt]
}

// Authorize reports whether the request's principal may perform op on the
// resource of type rt called name. Without an authorizer (authorizer.class.name
// unset, or a RequestContext built by a test) everything is allowed.
func (rc *RequestContext) Authorize(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if rc == nil || rc.Authz == nil {
		return true
	}
	return rc.Authz.Authorize(rc.Principal, rc.ClientHost(), op, rt, name)
}

// AuthorizeCluster is Authorize on the cluster resource.
func (rc *RequestContext) AuthorizeCluster(op kmsg.ACLOperation) bool {
	return rc.Authorize(op, kmsg.ACLResourceTypeCluster, ClusterResourceName)
}

// AuthorizeAny reports whether the request's principal may perform op on at
// least one resource of type rt; true without an authorizer.
func (rc *RequestContext) AuthorizeAny(op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if rc == nil || rc.Authz == nil {
		return true
	}
	return rc.Authz.AuthorizeAny(rc.Principal, rc.ClientHost(), op, rt)
}

// AuthorizedOperations returns the bitfield of operations the request's
// principal may perform on the resource (bit n set for the operation with
// code n), as Metadata v8+, DescribeGroups v3+ and DescribeCluster report it.
// Only the operations that apply to rt are considered; without an authorizer
// all of them are set.
func (rc *RequestContext) AuthorizedOperations(rt kmsg.ACLResourceType, name string) int32 {
	var bits int32
	for _, op := range resourceOperations[rt] {
		if rc.Authorize(op, rt, name) {
			bits |= 1 << uint(op)
		}
	}
	return bits
}

// ClientHost returns the client's IP address in text form, as ACL hosts are
// written; "" when the address is unknown.
func (rc *RequestContext) ClientHost() string {
	if rc == nil || rc.ClientAddr == nil {
		return ""
	}
	switch a := rc.ClientAddr.(type) {
	case *net.TCPAddr:
		return a.IP.String()
	case *net.UDPAddr:
		return a.IP.String()
	case *net.IPAddr:
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(rc.ClientAddr.String())
	if err != nil {
		return rc.ClientAddr.String()
	}
	return host
}
