// Package readonly is the rule that a mirrored topic is read-only, for
// every API: while a topic's mirror.name names a mirror (MIRRORING,
// PAUSED, and REMOVED until its failover completes), nothing but the
// mirror itself may change its data or its shape, so that the destination
// stays a byte-for-byte copy of the source. The rule is enforced where each
// API is served (the broker's partitions, the controller's decisions, the
// transaction coordinator); this table says, for every API key kmirror
// knows, what the API does to a mirrored topic, and the tests check that
// each key has an entry and that each refusal really happens.
package readonly

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// Effect is what an API does to a mirrored topic.
type Effect int8

// The effects.
const (
	// Refused: the API would change the topic's data or shape, and is
	// refused with Rule.Code (Rule.Note says how the mirror's own writes
	// still get through).
	Refused Effect = iota + 1
	// Dropped: an internal writer's write to the topic is not applied, and
	// answered as done (its caller could not act on a refusal).
	Dropped
	// Allowed: the API changes something about the topic that is not its
	// data (where replicas live, who leads, consumer group offsets).
	Allowed
	// Read: the API only reads the topic.
	Read
	// Unrelated: the API does not touch topic data (groups, security,
	// the quorum, the mirror APIs themselves).
	Unrelated
)

// String names the effect as docs/mirroring.md's table does.
func (e Effect) String() string {
	switch e {
	case Refused:
		return "refused"
	case Dropped:
		return "dropped"
	case Allowed:
		return "allowed"
	case Read:
		return "read"
	case Unrelated:
		return "unrelated"
	}
	return "unknown"
}

// Rule is one API's answer on a mirrored topic.
type Rule struct {
	Key    int16
	Effect Effect
	// Code is the error a Refused API answers (nil otherwise).
	Code *kerr.Error
	// Note says what happens exactly.
	Note string
}

// Name is the API's name.
func (r Rule) Name() string { return wire.APIName(r.Key) }

func refused(key kmsg.Key, code *kerr.Error, note string) Rule {
	return Rule{Key: int16(key), Effect: Refused, Code: code, Note: note}
}

func allowed(key kmsg.Key, note string) Rule {
	return Rule{Key: int16(key), Effect: Allowed, Note: note}
}

func read(key kmsg.Key) Rule { return Rule{Key: int16(key), Effect: Read} }

func unrelated(key kmsg.Key, note string) Rule {
	return Rule{Key: int16(key), Effect: Unrelated, Note: note}
}

// rules is sorted by key.
var rules = func() []Rule {
	rs := []Rule{
		refused(kmsg.Produce, kerr.InvalidTopicException, "INVALID_TOPIC_EXCEPTION while mirrored or paused (clients fail at once); NOT_LEADER_OR_FOLLOWER while failing over (clients retry, and write once the partition is STOPPED)"),
		read(kmsg.Fetch),
		read(kmsg.ListOffsets),
		read(kmsg.Metadata),
		unrelated(kmsg.LeaderAndISR, "not served (Kafka's ZooKeeper-era broker API)"),
		unrelated(kmsg.StopReplica, "not served (Kafka's ZooKeeper-era broker API)"),
		unrelated(kmsg.UpdateMetadata, "not served (Kafka's ZooKeeper-era broker API)"),
		unrelated(kmsg.ControlledShutdown, "not served (Kafka's ZooKeeper-era broker API)"),
		allowed(kmsg.OffsetCommit, "group offsets are the group's; the group-offset sync overwrites those of groups without members on this cluster"),
		read(kmsg.OffsetFetch),
		unrelated(kmsg.FindCoordinator, "groups and transactions"),
		unrelated(kmsg.JoinGroup, "groups"),
		unrelated(kmsg.Heartbeat, "groups"),
		unrelated(kmsg.LeaveGroup, "groups"),
		unrelated(kmsg.SyncGroup, "groups"),
		unrelated(kmsg.DescribeGroups, "groups"),
		unrelated(kmsg.ListGroups, "groups"),
		unrelated(kmsg.SASLHandshake, "authentication"),
		unrelated(kmsg.ApiVersions, "connection"),
		unrelated(kmsg.CreateTopics, "the topic exists: TOPIC_ALREADY_EXISTS, as for any topic"),
		refused(kmsg.DeleteTopics, kerr.PolicyViolation, "also while failing over; a failed-over (STOPPED) topic can be deleted"),
		refused(kmsg.DeleteRecords, kerr.PolicyViolation, "the log start follows the source's (its DeleteRecords and retention)"),
		unrelated(kmsg.InitProducerID, "producer ids"),
		read(kmsg.OffsetForLeaderEpoch),
		refused(kmsg.AddPartitionsToTxn, kerr.InvalidTopicException, "a mirrored or paused partition cannot join a transaction (the producer must abort); a failing-over one can, and its produces wait for STOPPED"),
		unrelated(kmsg.AddOffsetsToTxn, "groups"),
		unrelated(kmsg.EndTxn, "the markers it writes: see WriteTxnMarkers"),
		{Key: int16(kmsg.WriteTxnMarkers), Effect: Dropped, Note: "a coordinator's COMMIT or ABORT marker is not written to a read-only partition (answered as written: no transaction wrote there), so the mirror's log never gets an offset the source does not have"},
		allowed(kmsg.TxnOffsetCommit, "group offsets, as OffsetCommit"),
		unrelated(kmsg.DescribeACLs, "security"),
		unrelated(kmsg.CreateACLs, "security; the ACL sync never deletes an ACL it did not create"),
		unrelated(kmsg.DeleteACLs, "security; the ACL sync may create a deleted synced ACL again"),
		read(kmsg.DescribeConfigs),
		refused(kmsg.AlterConfigs, kerr.PolicyViolation, "configs the mirror's config sync owns (all but min.insync.replicas, the throttled-replica lists and mirror.name), while the mirror syncs configs; the sync's own writes pass"),
		allowed(kmsg.AlterReplicaLogDirs, "moves a replica between log directories, not its data (not served by kmirror)"),
		read(kmsg.DescribeLogDirs),
		unrelated(kmsg.SASLAuthenticate, "authentication"),
		refused(kmsg.CreatePartitions, kerr.PolicyViolation, "also while failing over; the mirror's partition sync adds the partitions the source has"),
		unrelated(kmsg.CreateDelegationToken, "security"),
		unrelated(kmsg.RenewDelegationToken, "security"),
		unrelated(kmsg.ExpireDelegationToken, "security"),
		unrelated(kmsg.DescribeDelegationToken, "security"),
		allowed(kmsg.DeleteGroups, "groups"),
		allowed(kmsg.ElectLeaders, "moves leadership; the new leader resumes the mirror from its log end"),
		refused(kmsg.IncrementalAlterConfigs, kerr.PolicyViolation, "as AlterConfigs"),
		allowed(kmsg.AlterPartitionAssignments, "moves replicas, not data; followers copy the mirrored batches byte for byte"),
		read(kmsg.ListPartitionReassignments),
		allowed(kmsg.OffsetDelete, "group offsets"),
		unrelated(kmsg.DescribeClientQuotas, "quotas"),
		unrelated(kmsg.AlterClientQuotas, "quotas"),
		unrelated(kmsg.DescribeUserSCRAMCredentials, "security"),
		unrelated(kmsg.AlterUserSCRAMCredentials, "security"),
		unrelated(kmsg.Vote, "the metadata quorum"),
		unrelated(kmsg.BeginQuorumEpoch, "the metadata quorum"),
		unrelated(kmsg.EndQuorumEpoch, "the metadata quorum"),
		unrelated(kmsg.DescribeQuorum, "the metadata quorum"),
		unrelated(kmsg.AlterPartition, "the ISR; kmirror's failover epoch bump is the mirror's own"),
		unrelated(kmsg.UpdateFeatures, "features"),
		unrelated(kmsg.Envelope, "not served"),
		unrelated(kmsg.FetchSnapshot, "the metadata quorum"),
		read(kmsg.DescribeCluster),
		read(kmsg.DescribeProducers),
		unrelated(kmsg.BrokerRegistration, "the controller"),
		unrelated(kmsg.BrokerHeartbeat, "the controller"),
		unrelated(kmsg.UnregisterBroker, "the controller"),
		read(kmsg.DescribeTransactions),
		read(kmsg.ListTransactions),
		unrelated(kmsg.AllocateProducerIDs, "producer ids"),
		unrelated(kmsg.ConsumerGroupHeartbeat, "groups"),
		unrelated(kmsg.ConsumerGroupDescribe, "groups"),
		unrelated(kmsg.ControllerRegistration, "the controller"),
		unrelated(kmsg.GetTelemetrySubscriptions, "telemetry"),
		unrelated(kmsg.PushTelemetry, "telemetry"),
		unrelated(kmsg.AssignReplicasToDirs, "the controller"),
		unrelated(kmsg.ListConfigResources, "configs of client metrics and other resources"),
		read(kmsg.DescribeTopicPartitions),
	}
	for k := wire.MinMirrorKey; k <= wire.MaxMirrorKey; k++ {
		rs = append(rs, Rule{Key: k, Effect: Unrelated, Note: "the mirror APIs: the mirror's own changes"})
	}
	slices.SortFunc(rs, func(a, b Rule) int { return int(a.Key) - int(b.Key) })
	return rs
}()

// Rules returns the table, sorted by key.
func Rules() []Rule { return rules }

// For returns the rule of an API key.
func For(key int16) (Rule, bool) {
	i, ok := slices.BinarySearchFunc(rules, key, func(r Rule, k int16) int { return int(r.Key) - int(k) })
	if !ok {
		return Rule{}, false
	}
	return rules[i], true
}

// Refusal is the error a mutation of a read-only topic gets: code, with a
// message that names the topic, its mirror and the way out. what names the
// refused mutation ("deleting the topic"). mirrorName is the topic's raw
// mirror.name.
func Refusal(topic, mirrorName, what string, code *kerr.Error) error {
	mirror, m := wire.ParseMirrorName(mirrorName)
	if m == wire.MembershipRemoved {
		return fmt.Errorf("topic %q is failing over from mirror %q (mirror.name=%s): %s is refused until every partition is STOPPED (mirror.name then becomes %s): %w",
			topic, mirror, mirrorName, what, wire.MirrorNameValue(mirror, wire.MembershipStopped), code)
	}
	return fmt.Errorf("topic %q is mirrored by mirror %q (mirror.name=%s) and is read-only: %s is refused; fail it over with 'kmirror mirror remove-topics %s %s' to make it writable: %w",
		topic, mirror, mirrorName, what, mirror, topic, code)
}
