package auth

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// Scope says when a Check applies to a request.
type Scope int8

const (
	// Required checks apply to every request of the API. A Required check
	// on the cluster needs nothing from the request, so the server enforces
	// it before dispatch.
	Required Scope = iota + 1
	// Sufficient checks allow the whole request when they pass; when they
	// fail, the PerItem checks decide (CreateTopics: CREATE on the cluster,
	// else CREATE on each topic).
	Sufficient
	// PerItem checks apply once per resource the request names (each topic,
	// group, transactional id); an item that fails gets the resource type's
	// authorization error, the rest of the request is served.
	PerItem
	// Listing checks select what a listing returns: resources that fail
	// are left out silently (Metadata for all topics, ListGroups, ...).
	Listing
	// Conditional checks apply only in the case the Check's Note describes
	// (a transactional Produce, a Fetch from a follower replica).
	Conditional
)

// String names the scope.
func (s Scope) String() string {
	switch s {
	case Required:
		return "required"
	case Sufficient:
		return "sufficient"
	case PerItem:
		return "per-item"
	case Listing:
		return "listing"
	case Conditional:
		return "conditional"
	}
	return "unknown"
}

// Check is one authorization an API needs: an operation on a resource type.
type Check struct {
	Resource  kmsg.ACLResourceType
	Operation kmsg.ACLOperation
	Scope     Scope
	// Note says where the resource names come from, or when a Conditional
	// check applies.
	Note string
}

// Requirement is what one API needs: its checks, in the order Kafka makes
// them. An API without checks (ApiVersions, the SASL APIs) is open to every
// connection.
type Requirement struct {
	Key    int16
	Checks []Check
}

// ClusterCheck returns the operation on the cluster the server can enforce
// for the API before dispatch: the API's checks are all Required and on the
// cluster (CreateAcls, DescribeCluster, the inter-broker and mirror admin
// APIs). ok is false when a check needs the request's contents.
func (r Requirement) ClusterCheck() (op kmsg.ACLOperation, ok bool) {
	if len(r.Checks) != 1 {
		return 0, false
	}
	c := r.Checks[0]
	if c.Resource != kmsg.ACLResourceTypeCluster || c.Scope != Required {
		return 0, false
	}
	return c.Operation, true
}

// ErrorFor is the error a failed check on a resource type answers
// (TOPIC_AUTHORIZATION_FAILED for a topic, ...).
func ErrorFor(rt kmsg.ACLResourceType) *kerr.Error {
	switch rt {
	case kmsg.ACLResourceTypeTopic:
		return kerr.TopicAuthorizationFailed
	case kmsg.ACLResourceTypeGroup:
		return kerr.GroupAuthorizationFailed
	case kmsg.ACLResourceTypeTransactionalId:
		return kerr.TransactionalIDAuthorizationFailed
	case kmsg.ACLResourceTypeDelegationToken:
		return kerr.DelegationTokenAuthorizationFailed
	}
	return kerr.ClusterAuthorizationFailed
}

// RequiredFor returns Kafka's authorization rules of an API key (with
// kmirror's rules for the mirror APIs, wire.MinMirrorKey to
// wire.MaxMirrorKey); ok is false for a key the table does not know.
func RequiredFor(key int16) (Requirement, bool) {
	i, found := slices.BinarySearchFunc(requirements, key, func(r Requirement, k int16) int { return int(r.Key) - int(k) })
	if !found {
		return Requirement{Key: key}, false
	}
	return requirements[i], true
}

// Requirements returns the whole table, sorted by key. The slice is shared:
// do not modify it.
func Requirements() []Requirement { return requirements }

// PreAuthenticationAPIs are the only APIs a SASL connection may use before it
// has authenticated; any other request closes it.
var PreAuthenticationAPIs = []int16{int16(kmsg.ApiVersions), int16(kmsg.SASLHandshake), int16(kmsg.SASLAuthenticate)}

// Short names for the table.
const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	cluster = kmsg.ACLResourceTypeCluster
	txnID   = kmsg.ACLResourceTypeTransactionalId
	dtoken  = kmsg.ACLResourceTypeDelegationToken
	user    = kmsg.ACLResourceTypeUser

	opRead         = kmsg.ACLOperationRead
	opWrite        = kmsg.ACLOperationWrite
	opCreate       = kmsg.ACLOperationCreate
	opDelete       = kmsg.ACLOperationDelete
	opAlter        = kmsg.ACLOperationAlter
	opDescribe     = kmsg.ACLOperationDescribe
	opClusterAct   = kmsg.ACLOperationClusterAction
	opDescribeCfgs = kmsg.ACLOperationDescribeConfigs
	opAlterCfgs    = kmsg.ACLOperationAlterConfigs
	opIdempotent   = kmsg.ACLOperationIdempotentWrite
	opCreateTokens = kmsg.ACLOperationCreateTokens
	opDescTokens   = kmsg.ACLOperationDescribeTokens
)

func req(rt kmsg.ACLResourceType, op kmsg.ACLOperation, note string) Check {
	return Check{Resource: rt, Operation: op, Scope: Required, Note: note}
}

func each(rt kmsg.ACLResourceType, op kmsg.ACLOperation, note string) Check {
	return Check{Resource: rt, Operation: op, Scope: PerItem, Note: note}
}

func suff(rt kmsg.ACLResourceType, op kmsg.ACLOperation, note string) Check {
	return Check{Resource: rt, Operation: op, Scope: Sufficient, Note: note}
}

func listing(rt kmsg.ACLResourceType, op kmsg.ACLOperation, note string) Check {
	return Check{Resource: rt, Operation: op, Scope: Listing, Note: note}
}

func cond(rt kmsg.ACLResourceType, op kmsg.ACLOperation, note string) Check {
	return Check{Resource: rt, Operation: op, Scope: Conditional, Note: note}
}

func clusterOnly(op kmsg.ACLOperation) []Check {
	return []Check{req(cluster, op, "")}
}

// requirements is Kafka's operation/resource table (KafkaApis and the
// controller's checks), sorted by key.
var requirements = []Requirement{
	{Key: 0, Checks: []Check{ // Produce
		cond(txnID, opWrite, "transactional produce: TransactionalID; failure answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition"),
		each(topic, opWrite, "each topic"),
	}},
	{Key: 1, Checks: []Check{ // Fetch
		cond(cluster, opClusterAct, "fetch from a follower replica (ReplicaID >= 0 or ReplicaState.ID >= 0)"),
		each(topic, opRead, "each topic of a consumer fetch"),
	}},
	{Key: 2, Checks: []Check{each(topic, opDescribe, "each topic")}}, // ListOffsets
	{Key: 3, Checks: []Check{ // Metadata
		each(topic, opDescribe, "each requested topic; unauthorized ones answer TOPIC_AUTHORIZATION_FAILED"),
		listing(topic, opDescribe, "a request for all topics lists only the describable ones"),
		cond(cluster, opCreate, "auto-creation: CREATE on the cluster, else CREATE on each topic to create"),
		cond(cluster, opDescribe, "IncludeClusterAuthorizedOperations (v8-v10): the bitfield of the cluster"),
	}},
	{Key: 4, Checks: clusterOnly(opClusterAct)}, // LeaderAndIsr
	{Key: 5, Checks: clusterOnly(opClusterAct)}, // StopReplica
	{Key: 6, Checks: clusterOnly(opClusterAct)}, // UpdateMetadata
	{Key: 7, Checks: clusterOnly(opClusterAct)}, // ControlledShutdown
	{Key: 8, Checks: []Check{ // OffsetCommit
		req(group, opRead, "the Group"),
		each(topic, opRead, "each topic"),
	}},
	{Key: 9, Checks: []Check{ // OffsetFetch
		each(group, opDescribe, "the Group (v0-7) or each of Groups (v8+)"),
		listing(topic, opDescribe, "each topic; with all topics requested, undescribable ones are left out"),
	}},
	{Key: 10, Checks: []Check{ // FindCoordinator
		each(group, opDescribe, "each key of KeyType GROUP"),
		each(txnID, opDescribe, "each key of KeyType TRANSACTION"),
	}},
	{Key: 11, Checks: []Check{req(group, opRead, "the Group")}}, // JoinGroup
	{Key: 12, Checks: []Check{req(group, opRead, "the Group")}}, // Heartbeat
	{Key: 13, Checks: []Check{req(group, opRead, "the Group")}}, // LeaveGroup
	{Key: 14, Checks: []Check{req(group, opRead, "the Group")}}, // SyncGroup
	{Key: 15, Checks: []Check{ // DescribeGroups
		each(group, opDescribe, "each group"),
		cond(group, opDescribe, "IncludeAuthorizedOperations (v3+): the bitfield of each group"),
	}},
	{Key: 16, Checks: []Check{ // ListGroups
		suff(cluster, opDescribe, "lists every group"),
		listing(group, opDescribe, "otherwise only the describable groups"),
	}},
	{Key: 17}, // SaslHandshake
	{Key: 18}, // ApiVersions
	{Key: 19, Checks: []Check{ // CreateTopics
		suff(cluster, opCreate, "creates any topic"),
		each(topic, opCreate, "otherwise each topic"),
		cond(topic, opDescribeCfgs, "the configs of a created topic are returned only with DESCRIBE_CONFIGS on it"),
	}},
	{Key: 20, Checks: []Check{ // DeleteTopics
		each(topic, opDelete, "each topic (by name, or by id after DESCRIBE on the name)"),
	}},
	{Key: 21, Checks: []Check{each(topic, opDelete, "each topic")}}, // DeleteRecords
	{Key: 22, Checks: []Check{ // InitProducerId
		cond(txnID, opWrite, "a TransactionalID"),
		cond(cluster, opIdempotent, "no TransactionalID: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (Authorizer.AuthorizeAny)"),
	}},
	{Key: 23, Checks: []Check{ // OffsetForLeaderEpoch
		cond(cluster, opClusterAct, "from a follower replica (ReplicaID >= 0)"),
		each(topic, opDescribe, "each topic of a consumer request"),
	}},
	{Key: 24, Checks: []Check{ // AddPartitionsToTxn
		cond(cluster, opClusterAct, "v4+ request from a broker (VerifyOnly batches)"),
		each(txnID, opWrite, "the TransactionalID (each transaction in v4+)"),
		each(topic, opWrite, "each topic"),
	}},
	{Key: 25, Checks: []Check{ // AddOffsetsToTxn
		req(txnID, opWrite, "the TransactionalID"),
		req(group, opRead, "the Group"),
	}},
	{Key: 26, Checks: []Check{req(txnID, opWrite, "the TransactionalID")}}, // EndTxn
	{Key: 27, Checks: clusterOnly(opClusterAct)},                           // WriteTxnMarkers
	{Key: 28, Checks: []Check{ // TxnOffsetCommit
		req(txnID, opWrite, "the TransactionalID"),
		req(group, opRead, "the Group"),
		each(topic, opRead, "each topic"),
	}},
	{Key: 29, Checks: clusterOnly(opDescribe)}, // DescribeAcls
	{Key: 30, Checks: clusterOnly(opAlter)},    // CreateAcls
	{Key: 31, Checks: clusterOnly(opAlter)},    // DeleteAcls
	{Key: 32, Checks: []Check{ // DescribeConfigs
		each(cluster, opDescribeCfgs, "each BROKER, BROKER_LOGGER, CLIENT_METRICS (and kmirror MIRROR) resource"),
		each(topic, opDescribeCfgs, "each TOPIC resource"),
		each(group, opDescribeCfgs, "each GROUP resource"),
	}},
	{Key: 33, Checks: []Check{ // AlterConfigs
		each(cluster, opAlterCfgs, "each BROKER, BROKER_LOGGER (and kmirror MIRROR) resource"),
		each(topic, opAlterCfgs, "each TOPIC resource"),
	}},
	{Key: 34, Checks: clusterOnly(opAlter)},    // AlterReplicaLogDirs
	{Key: 35, Checks: clusterOnly(opDescribe)}, // DescribeLogDirs
	{Key: 36}, // SaslAuthenticate
	{Key: 37, Checks: []Check{each(topic, opAlter, "each topic")}},                                                 // CreatePartitions
	{Key: 38, Checks: []Check{cond(user, opCreateTokens, "tokens for another owner: CREATE_TOKENS on that user")}}, // CreateDelegationToken
	{Key: 39, Checks: []Check{cond(dtoken, opDescribe, "the token's owner may renew it")}},                         // RenewDelegationToken
	{Key: 40, Checks: []Check{cond(dtoken, opDescribe, "the token's owner may expire it")}},                        // ExpireDelegationToken
	{Key: 41, Checks: []Check{ // DescribeDelegationToken
		listing(dtoken, opDescribe, "each token"),
		listing(user, opDescTokens, "tokens of other owners"),
	}},
	{Key: 42, Checks: []Check{each(group, opDelete, "each group")}}, // DeleteGroups
	{Key: 43, Checks: clusterOnly(opAlter)},                         // ElectLeaders
	{Key: 44, Checks: []Check{ // IncrementalAlterConfigs
		each(cluster, opAlterCfgs, "each BROKER, BROKER_LOGGER, CLIENT_METRICS (and kmirror MIRROR) resource"),
		each(topic, opAlterCfgs, "each TOPIC resource"),
		each(group, opAlterCfgs, "each GROUP resource"),
	}},
	{Key: 45, Checks: clusterOnly(opAlter)},    // AlterPartitionReassignments
	{Key: 46, Checks: clusterOnly(opDescribe)}, // ListPartitionReassignments
	{Key: 47, Checks: []Check{ // OffsetDelete
		req(group, opDelete, "the Group"),
		each(topic, opRead, "each topic"),
	}},
	{Key: 48, Checks: clusterOnly(opDescribeCfgs)}, // DescribeClientQuotas
	{Key: 49, Checks: clusterOnly(opAlterCfgs)},    // AlterClientQuotas
	{Key: 50, Checks: clusterOnly(opDescribe)},     // DescribeUserScramCredentials
	{Key: 51, Checks: clusterOnly(opAlter)},        // AlterUserScramCredentials
	{Key: 52, Checks: clusterOnly(opClusterAct)},   // Vote
	{Key: 53, Checks: clusterOnly(opClusterAct)},   // BeginQuorumEpoch
	{Key: 54, Checks: clusterOnly(opClusterAct)},   // EndQuorumEpoch
	{Key: 55, Checks: clusterOnly(opDescribe)},     // DescribeQuorum
	{Key: 56, Checks: clusterOnly(opClusterAct)},   // AlterPartition
	{Key: 57, Checks: clusterOnly(opAlter)},        // UpdateFeatures
	{Key: 58, Checks: clusterOnly(opClusterAct)},   // Envelope
	{Key: 59, Checks: clusterOnly(opClusterAct)},   // FetchSnapshot
	{Key: 60, Checks: []Check{ // DescribeCluster: open to all, as Metadata
		cond(cluster, opDescribe, "IncludeClusterAuthorizedOperations: the bitfield, 0 without DESCRIBE"),
	}},
	{Key: 61, Checks: []Check{each(topic, opRead, "each topic")}}, // DescribeProducers
	{Key: 62, Checks: clusterOnly(opClusterAct)},                  // BrokerRegistration
	{Key: 63, Checks: clusterOnly(opClusterAct)},                  // BrokerHeartbeat
	{Key: 64, Checks: clusterOnly(opAlter)},                       // UnregisterBroker
	{Key: 65, Checks: []Check{ // DescribeTransactions
		each(txnID, opDescribe, "each transactional id"),
		listing(topic, opDescribe, "partitions of undescribable topics are left out"),
	}},
	{Key: 66, Checks: []Check{listing(txnID, opDescribe, "only describable transactional ids are listed")}}, // ListTransactions
	{Key: 67, Checks: clusterOnly(opClusterAct)},                                                            // AllocateProducerIds
	{Key: 68, Checks: []Check{ // ConsumerGroupHeartbeat
		req(group, opRead, "the GroupID"),
		each(topic, opDescribe, "each subscribed topic"),
	}},
	{Key: 69, Checks: []Check{each(group, opDescribe, "each group")}}, // ConsumerGroupDescribe
	{Key: 70, Checks: clusterOnly(opClusterAct)},                      // ControllerRegistration
	{Key: 71}, // GetTelemetrySubscriptions
	{Key: 72}, // PushTelemetry
	{Key: 73, Checks: clusterOnly(opClusterAct)},                      // AssignReplicasToDirs
	{Key: 74, Checks: clusterOnly(opDescribeCfgs)},                    // ListClientMetricsResources
	{Key: 75, Checks: []Check{each(topic, opDescribe, "each topic")}}, // DescribeTopicPartitions

	// kmirror's mirror APIs: administration is ALTER on the cluster, reading
	// mirror state DESCRIBE, the broker-to-coordinator state RPCs
	// CLUSTER_ACTION. ReadLastMirroredEpochs is sent by a destination
	// cluster's brokers with the mirror's credentials on the source, which
	// grants it DESCRIBE on its cluster.
	{Key: wire.KeyCreateMirror, Checks: clusterOnly(opAlter)},
	{Key: wire.KeyAddTopicsToMirror, Checks: clusterOnly(opAlter)},
	{Key: wire.KeyRemoveTopicsFromMirror, Checks: clusterOnly(opAlter)},
	{Key: wire.KeyDeleteMirror, Checks: clusterOnly(opAlter)},
	{Key: wire.KeyListMirrors, Checks: clusterOnly(opDescribe)},
	{Key: wire.KeyDescribeMirrors, Checks: clusterOnly(opDescribe)},
	{Key: wire.KeyReadMirrorStates, Checks: clusterOnly(opClusterAct)},
	{Key: wire.KeyWriteMirrorStates, Checks: clusterOnly(opClusterAct)},
	{Key: wire.KeyPauseMirrorTopics, Checks: clusterOnly(opAlter)},
	{Key: wire.KeyResumeMirrorTopics, Checks: clusterOnly(opAlter)},
	{Key: wire.KeyReadLastMirroredEpochs, Checks: clusterOnly(opDescribe)},
}
