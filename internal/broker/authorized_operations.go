package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// clusterAuthorizedOperations is the cluster's authorized-operations
// bitfield for the request's principal (Metadata v8-v10, DescribeCluster):
// 0 without DESCRIBE on the cluster, as Kafka answers. Without an authorizer
// every cluster operation is set.
func clusterAuthorizedOperations(rc *wire.RequestContext) int32 {
	if !rc.AuthorizeCluster(kmsg.ACLOperationDescribe) {
		return 0
	}
	return rc.AuthorizedOperations(kmsg.ACLResourceTypeCluster, wire.ClusterResourceName)
}

// topicAuthorizedOperations returns the function that computes a topic's
// authorized-operations bitfield for the request's principal (Metadata v8+).
func topicAuthorizedOperations(rc *wire.RequestContext) func(topic string) int32 {
	return func(topic string) int32 {
		return rc.AuthorizedOperations(kmsg.ACLResourceTypeTopic, topic)
	}
}
