package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

var errInvalidConfig error = kerr.InvalidConfig

// Config is a validated broker configuration: typed fields for what the
// server reads often, and Get/Source for any defined config. A Config is
// immutable; dynamic changes (AlterConfigs) produce a new one with
// WithDynamic. It is safe for concurrent use; callers must not modify the
// slices in its fields.
type Config struct {
	// NodeID is node.id.
	NodeID int32
	// ProcessRoles is process.roles ("broker", "controller").
	ProcessRoles []string
	// Listeners are the bound listeners with their security protocols.
	Listeners []Listener
	// AdvertisedListeners are the listeners published in metadata:
	// advertised.listeners, or the non-controller listeners when unset.
	AdvertisedListeners []Listener
	// ControllerListenerNames is controller.listener.names, upper-case.
	ControllerListenerNames []string
	// InterBrokerListenerName is the listener brokers use with each other.
	InterBrokerListenerName string
	// QuorumVoters is controller.quorum.voters.
	QuorumVoters []Voter
	// QuorumBootstrapServers is controller.quorum.bootstrap.servers.
	QuorumBootstrapServers []string
	// LogDirs are the data directories (log.dirs, else log.dir).
	LogDirs []string
	// MetadataLogDir is metadata.log.dir, else the first data directory.
	MetadataLogDir string
	// BrokerRack is broker.rack ("" when unset).
	BrokerRack string

	// NumPartitions is num.partitions.
	NumPartitions int32
	// DefaultReplicationFactor is default.replication.factor.
	DefaultReplicationFactor int16
	// AutoCreateTopicsEnable is auto.create.topics.enable.
	AutoCreateTopicsEnable bool
	// DeleteTopicEnable is delete.topic.enable.
	DeleteTopicEnable bool

	// MessageMaxBytes is message.max.bytes.
	MessageMaxBytes int32
	// SocketRequestMaxBytes is socket.request.max.bytes.
	SocketRequestMaxBytes int32
	// SocketSendBufferBytes is socket.send.buffer.bytes (-1: OS default).
	SocketSendBufferBytes int32
	// SocketReceiveBufferBytes is socket.receive.buffer.bytes (-1: OS
	// default).
	SocketReceiveBufferBytes int32
	// ConnectionsMaxIdleMs is connections.max.idle.ms.
	ConnectionsMaxIdleMs int64
	// NumNetworkThreads is num.network.threads.
	NumNetworkThreads int32
	// NumIOThreads is num.io.threads.
	NumIOThreads int32
	// FetchMaxBytes is fetch.max.bytes.
	FetchMaxBytes int32
	// MaxIncrementalFetchSessionCacheSlots is
	// max.incremental.fetch.session.cache.slots.
	MaxIncrementalFetchSessionCacheSlots int32

	// LogRetentionCheckIntervalMs is log.retention.check.interval.ms.
	LogRetentionCheckIntervalMs int64
	// LogFlushSchedulerIntervalMs is log.flush.scheduler.interval.ms.
	LogFlushSchedulerIntervalMs int64
	// LogFlushOffsetCheckpointIntervalMs is
	// log.flush.offset.checkpoint.interval.ms.
	LogFlushOffsetCheckpointIntervalMs int32
	// LogFlushStartOffsetCheckpointIntervalMs is
	// log.flush.start.offset.checkpoint.interval.ms.
	LogFlushStartOffsetCheckpointIntervalMs int32
	// ReplicaHighWatermarkCheckpointIntervalMs is
	// replica.high.watermark.checkpoint.interval.ms.
	ReplicaHighWatermarkCheckpointIntervalMs int64
	// NumRecoveryThreadsPerDataDir is num.recovery.threads.per.data.dir.
	NumRecoveryThreadsPerDataDir int32
	// LogCleanerEnable is log.cleaner.enable.
	LogCleanerEnable bool
	// LogCleanerThreads is log.cleaner.threads.
	LogCleanerThreads int32

	// MinInsyncReplicas is min.insync.replicas (the broker default).
	MinInsyncReplicas int32
	// UncleanLeaderElectionEnable is unclean.leader.election.enable.
	UncleanLeaderElectionEnable bool
	// ReplicaLagTimeMaxMs is replica.lag.time.max.ms.
	ReplicaLagTimeMaxMs int64
	// ReplicaFetchMaxBytes is replica.fetch.max.bytes.
	ReplicaFetchMaxBytes int32
	// ReplicaFetchWaitMaxMs is replica.fetch.wait.max.ms.
	ReplicaFetchWaitMaxMs int32
	// ReplicaFetchMinBytes is replica.fetch.min.bytes.
	ReplicaFetchMinBytes int32
	// ReplicaFetchResponseMaxBytes is replica.fetch.response.max.bytes.
	ReplicaFetchResponseMaxBytes int32
	// ReplicaFetchBackoffMs is replica.fetch.backoff.ms.
	ReplicaFetchBackoffMs int32
	// ReplicaSocketTimeoutMs is replica.socket.timeout.ms.
	ReplicaSocketTimeoutMs int32
	// NumReplicaFetchers is num.replica.fetchers.
	NumReplicaFetchers int32

	// BrokerSessionTimeoutMs is broker.session.timeout.ms.
	BrokerSessionTimeoutMs int32
	// BrokerHeartbeatIntervalMs is broker.heartbeat.interval.ms.
	BrokerHeartbeatIntervalMs int32
	// ControllerQuorumElectionTimeoutMs is
	// controller.quorum.election.timeout.ms.
	ControllerQuorumElectionTimeoutMs int32
	// ControllerQuorumFetchTimeoutMs is controller.quorum.fetch.timeout.ms.
	ControllerQuorumFetchTimeoutMs int32
	// ControllerQuorumRequestTimeoutMs is
	// controller.quorum.request.timeout.ms.
	ControllerQuorumRequestTimeoutMs int32
	// AutoLeaderRebalanceEnable is auto.leader.rebalance.enable.
	AutoLeaderRebalanceEnable bool
	// LeaderImbalanceCheckIntervalSeconds is
	// leader.imbalance.check.interval.seconds.
	LeaderImbalanceCheckIntervalSeconds int64
	// LeaderImbalancePerBrokerPercentage is
	// leader.imbalance.per.broker.percentage.
	LeaderImbalancePerBrokerPercentage int32
	// ControlledShutdownEnable is controlled.shutdown.enable.
	ControlledShutdownEnable bool

	// OffsetsTopicNumPartitions is offsets.topic.num.partitions.
	OffsetsTopicNumPartitions int32
	// OffsetsTopicReplicationFactor is offsets.topic.replication.factor.
	OffsetsTopicReplicationFactor int16
	// OffsetsTopicSegmentBytes is offsets.topic.segment.bytes.
	OffsetsTopicSegmentBytes int32
	// OffsetsRetentionMinutes is offsets.retention.minutes.
	OffsetsRetentionMinutes int32
	// OffsetsRetentionCheckIntervalMs is offsets.retention.check.interval.ms.
	OffsetsRetentionCheckIntervalMs int64
	// OffsetsCommitTimeoutMs is offsets.commit.timeout.ms.
	OffsetsCommitTimeoutMs int32
	// OffsetsLoadBufferSize is offsets.load.buffer.size.
	OffsetsLoadBufferSize int32
	// GroupInitialRebalanceDelayMs is group.initial.rebalance.delay.ms.
	GroupInitialRebalanceDelayMs int32
	// GroupMinSessionTimeoutMs is group.min.session.timeout.ms.
	GroupMinSessionTimeoutMs int32
	// GroupMaxSessionTimeoutMs is group.max.session.timeout.ms.
	GroupMaxSessionTimeoutMs int32
	// GroupMaxSize is group.max.size.
	GroupMaxSize int32

	// TransactionStateLogNumPartitions is
	// transaction.state.log.num.partitions.
	TransactionStateLogNumPartitions int32
	// TransactionStateLogReplicationFactor is
	// transaction.state.log.replication.factor.
	TransactionStateLogReplicationFactor int16
	// TransactionStateLogMinISR is transaction.state.log.min.isr.
	TransactionStateLogMinISR int32
	// TransactionStateLogSegmentBytes is transaction.state.log.segment.bytes.
	TransactionStateLogSegmentBytes int32
	// TransactionMaxTimeoutMs is transaction.max.timeout.ms.
	TransactionMaxTimeoutMs int32
	// TransactionalIDExpirationMs is transactional.id.expiration.ms.
	TransactionalIDExpirationMs int32
	// TransactionAbortTimedOutCleanupIntervalMs is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms.
	TransactionAbortTimedOutCleanupIntervalMs int32
	// TransactionRemoveExpiredCleanupIntervalMs is
	// transaction.remove.expired.transaction.cleanup.interval.ms.
	TransactionRemoveExpiredCleanupIntervalMs int32
	// ProducerIDExpirationMs is producer.id.expiration.ms.
	ProducerIDExpirationMs int32
	// ProducerIDExpirationCheckIntervalMs is
	// producer.id.expiration.check.interval.ms.
	ProducerIDExpirationCheckIntervalMs int32

	// SuperUsers are the principals of super.users.
	SuperUsers []string
	// AllowEveryoneIfNoACLFound is allow.everyone.if.no.acl.found.
	AllowEveryoneIfNoACLFound bool
	// AuthorizerClassName is authorizer.class.name ("" disables ACLs).
	AuthorizerClassName string
	// SASLEnabledMechanisms is sasl.enabled.mechanisms.
	SASLEnabledMechanisms []string
	// SASLMechanismInterBrokerProtocol is
	// sasl.mechanism.inter.broker.protocol.
	SASLMechanismInterBrokerProtocol string

	// MetricsListener is metrics.listener ("" disables metrics).
	MetricsListener string
	// MirrorStateTopicNumPartitions is mirror.state.topic.num.partitions.
	MirrorStateTopicNumPartitions int32
	// MirrorStateTopicReplicationFactor is
	// mirror.state.topic.replication.factor.
	MirrorStateTopicReplicationFactor int16
	// MirrorMetadataRefreshIntervalMs is mirror.metadata.refresh.interval.ms.
	MirrorMetadataRefreshIntervalMs int64
	// MirrorStallTimeoutMs is mirror.stall.timeout.ms.
	MirrorStallTimeoutMs int64
	// MirrorSupportUncleanLeaderElection is
	// mirror.support.unclean.leader.election.
	MirrorSupportUncleanLeaderElection bool
	// MirrorReplicationThrottledRate is mirror.replication.throttled.rate
	// (-1: unlimited).
	MirrorReplicationThrottledRate int64
	// LeaderReplicationThrottledRate is leader.replication.throttled.rate.
	LeaderReplicationThrottledRate int64
	// ReplicationQuotaWindowNum and ReplicationQuotaWindowSizeSeconds are
	// replication.quota.window.num and .size.seconds.
	ReplicationQuotaWindowNum         int32
	ReplicationQuotaWindowSizeSeconds int32
	// QuotaWindowNum and QuotaWindowSizeSeconds are quota.window.num and
	// .size.seconds (client quotas).
	QuotaWindowNum         int32
	QuotaWindowSizeSeconds int32

	// Layers, most specific last; every map is owned by this Config.
	profile    map[string]string // kmirror's defaults when no file is given
	static     map[string]string // file, environment and overrides
	origins    map[string]string // where each static value was set
	dynDefault map[string]string // cluster-wide dynamic configs
	dynBroker  map[string]string // this broker's dynamic configs
	values     map[string]Value  // resolved broker configs and listener overrides
	sources    map[string]ConfigSource
}

// singleNodeProfile holds the values kmirror uses instead of Kafka's
// defaults when it runs without a config file: a single node cannot host
// internal topics with three replicas (Kafka's sample single-node file sets
// the same values).
var singleNodeProfile = map[string]string{
	"offsets.topic.replication.factor":         "1",
	"transaction.state.log.replication.factor": "1",
	"transaction.state.log.min.isr":            "1",
	"mirror.state.topic.replication.factor":    "1",
}

// build resolves and validates the layers into a Config. Unknown keys in
// static are reported as warnings and dropped.
func build(profile, static, origins, dynDefault, dynBroker map[string]string) (*Config, []string, error) {
	c := &Config{
		profile: maps.Clone(profile), static: map[string]string{}, origins: map[string]string{},
		dynDefault: maps.Clone(dynDefault), dynBroker: maps.Clone(dynBroker),
		values: map[string]Value{}, sources: map[string]ConfigSource{},
	}
	var warnings []string
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(static)) {
		raw := static[name]
		def := brokerDef(name)
		if def == nil {
			if _, base, ok := BaseName(name); ok {
				def = &base
			}
		}
		if def == nil {
			warnings = append(warnings, unknownWarning(name, origins[name]))
			continue
		}
		c.static[name] = raw
		c.origins[name] = origins[name]
		if _, err := def.Parse(raw); err != nil {
			var ve *ValueError
			if errors.As(err, &ve) {
				ve.Name = name
				if o := origins[name]; o != "" && !strings.HasPrefix(o, "file ") {
					ve.Origin = o
				}
			}
			errs = append(errs, err)
		}
	}
	for _, layer := range []map[string]string{c.dynDefault, c.dynBroker} {
		for _, name := range slices.Sorted(maps.Keys(layer)) {
			def := brokerDef(name)
			if def == nil {
				errs = append(errs, &ValueError{Name: name, Reason: "unknown broker config"})
				continue
			}
			if _, err := def.Parse(layer[name]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return nil, warnings, errors.Join(errs...)
	}
	// Resolve every broker definition and every listener override.
	loadTables()
	for name, def := range brokerIndex {
		raw, src, ok := c.layerValue(name)
		if !ok {
			c.values[name], c.sources[name] = Null(def.Type), SourceDefault
			continue
		}
		v, _ := def.Parse(raw) // validated above, or a table default
		c.values[name], c.sources[name] = v, src
	}
	for name, raw := range c.static {
		if brokerIndex[name] != nil {
			continue
		}
		_, base, _ := BaseName(name)
		v, _ := base.Parse(raw)
		c.values[name], c.sources[name] = v, SourceStaticBroker
	}
	if err := c.fill(); err != nil {
		return nil, warnings, err
	}
	return c, warnings, nil
}

// layerValue returns the raw value of a broker config from the most specific
// layer that has it, and that layer's source. A config with neither a value
// nor a default returns ok false.
func (c *Config) layerValue(name string) (string, ConfigSource, bool) {
	if v, ok := c.dynBroker[name]; ok {
		return v, SourceDynamicBroker, true
	}
	if v, ok := c.dynDefault[name]; ok {
		return v, SourceDynamicDefaultBroker, true
	}
	if v, ok := c.static[name]; ok {
		return v, SourceStaticBroker, true
	}
	if v, ok := c.profile[name]; ok {
		return v, SourceDefault, true
	}
	if d := brokerDef(name); d != nil && d.Default != nil {
		return *d.Default, SourceDefault, true
	}
	return "", SourceDefault, false
}

func unknownWarning(name, origin string) string {
	w := fmt.Sprintf("unknown config %q ignored", name)
	if origin != "" {
		w = fmt.Sprintf("unknown config %q (%s) ignored", name, origin)
	}
	if td := topicDef(name); td != nil && len(td.Synonyms) > 0 {
		w += fmt.Sprintf(": it is a topic config; the broker-wide default is %s", td.Synonyms[0])
	} else if strings.HasPrefix(name, listenerPrefix) {
		w += ": listener overrides take listener.name.<listener>.<broker config>"
	}
	return w
}

// v returns the resolved value of a broker definition.
func (c *Config) v(name string) Value { return c.values[name] }

// fill sets the typed fields and checks the rules that span several configs.
func (c *Config) fill() error {
	var errs []error
	fail := func(format string, args ...any) {
		name, reason, _ := strings.Cut(fmt.Sprintf(format, args...), ": ")
		errs = append(errs, &ValueError{Name: name, Reason: reason})
	}

	c.NodeID = c.v("node.id").Int()
	c.ProcessRoles = c.v("process.roles").List()
	isBroker := slices.Contains(c.ProcessRoles, "broker")
	isController := slices.Contains(c.ProcessRoles, "controller")

	c.ControllerListenerNames = splitUpper(c.v("controller.listener.names").Str())
	if len(c.ControllerListenerNames) == 0 {
		fail("controller.listener.names: must name the controller listener(s)")
	}
	isControllerListener := func(name string) bool { return slices.Contains(c.ControllerListenerNames, name) }

	protoMap, _ := ParseSecurityProtocolMap(c.v("listener.security.protocol.map").Str())
	mapIsDefault := c.sources["listener.security.protocol.map"] == SourceDefault
	protocolOf := func(name string) (string, bool) {
		if p, ok := protoMap[name]; ok {
			return p, true
		}
		if mapIsDefault && isControllerListener(name) {
			return "PLAINTEXT", true
		}
		return "", false
	}

	c.Listeners, _ = ParseListeners(c.v("listeners").Str())
	if len(c.Listeners) == 0 {
		fail("listeners: at least one listener is required")
	}
	for i := range c.Listeners {
		p, ok := protocolOf(c.Listeners[i].Name)
		if !ok {
			fail("listener.security.protocol.map: no security protocol for listener %s", c.Listeners[i].Name)
		}
		c.Listeners[i].SecurityProtocol = p
	}
	listenerNamed := func(ls []Listener, name string) (Listener, bool) {
		i := slices.IndexFunc(ls, func(l Listener) bool { return l.Name == name })
		if i < 0 {
			return Listener{}, false
		}
		return ls[i], true
	}
	switch {
	case isController && len(c.ControllerListenerNames) > 0:
		if _, ok := listenerNamed(c.Listeners, c.ControllerListenerNames[0]); !ok {
			fail("controller.listener.names: listener %s is not in listeners", c.ControllerListenerNames[0])
		}
		if !isBroker {
			for _, l := range c.Listeners {
				if !isControllerListener(l.Name) {
					fail("listeners: a controller-only node may only have controller listeners, not %s", l.Name)
				}
			}
		}
	case isBroker:
		for _, l := range c.Listeners {
			if isControllerListener(l.Name) {
				fail("listeners: a broker-only node must not listen on controller listener %s", l.Name)
			}
		}
	}

	if adv := c.v("advertised.listeners"); !adv.IsNull() {
		c.AdvertisedListeners, _ = ParseListeners(adv.Str())
		for i, a := range c.AdvertisedListeners {
			l, ok := listenerNamed(c.Listeners, a.Name)
			if !ok {
				fail("advertised.listeners: %s is not in listeners", a.Name)
				continue
			}
			c.AdvertisedListeners[i].SecurityProtocol = l.SecurityProtocol
			if isUnspecifiedHost(a.Host) {
				fail("advertised.listeners: %s cannot advertise the non-routable address %q", a.Name, a.Host)
			}
		}
	} else {
		for _, l := range c.Listeners {
			if isBroker && isControllerListener(l.Name) {
				continue
			}
			if isUnspecifiedHost(l.Host) {
				fail("advertised.listeners: listener %s binds %q, which cannot be advertised; set advertised.listeners", l.Name, l.Host)
				continue
			}
			if l.Host == "" {
				if h, err := os.Hostname(); err == nil {
					l.Host = h
				}
			}
			c.AdvertisedListeners = append(c.AdvertisedListeners, l)
		}
	}

	ibl := c.v("inter.broker.listener.name")
	if !ibl.IsNull() {
		if c.sources["security.inter.broker.protocol"] != SourceDefault {
			fail("inter.broker.listener.name: set either it or security.inter.broker.protocol, not both")
		}
		c.InterBrokerListenerName = strings.ToUpper(ibl.Str())
	} else {
		c.InterBrokerListenerName = c.v("security.inter.broker.protocol").Str()
	}
	if isBroker {
		if isControllerListener(c.InterBrokerListenerName) {
			fail("inter.broker.listener.name: %s is a controller listener", c.InterBrokerListenerName)
		} else if _, ok := listenerNamed(c.AdvertisedListeners, c.InterBrokerListenerName); !ok {
			fail("inter.broker.listener.name: no advertised listener named %s (set inter.broker.listener.name to one of the listeners)", c.InterBrokerListenerName)
		}
	}

	c.QuorumVoters, _ = ParseVoters(c.v("controller.quorum.voters").List())
	c.QuorumBootstrapServers = c.v("controller.quorum.bootstrap.servers").List()
	if len(c.QuorumVoters) == 0 && len(c.QuorumBootstrapServers) == 0 {
		fail("controller.quorum.voters: must list the quorum's voters (or set controller.quorum.bootstrap.servers)")
	}
	if isController && len(c.QuorumVoters) > 0 && !slices.ContainsFunc(c.QuorumVoters, func(v Voter) bool { return v.ID == c.NodeID }) {
		fail("controller.quorum.voters: node.id %d has the controller role but is not a voter", c.NodeID)
	}

	if dirs := c.v("log.dirs"); !dirs.IsNull() {
		c.LogDirs = splitTrim(dirs.Str())
	} else {
		c.LogDirs = splitTrim(c.v("log.dir").Str())
	}
	if len(c.LogDirs) == 0 {
		fail("log.dirs: at least one data directory is required")
	}
	c.MetadataLogDir = c.v("metadata.log.dir").Str()
	if c.MetadataLogDir == "" && len(c.LogDirs) > 0 {
		c.MetadataLogDir = c.LogDirs[0]
	}
	c.BrokerRack = c.v("broker.rack").Str()

	c.NumPartitions = c.v("num.partitions").Int()
	c.DefaultReplicationFactor = int16(c.v("default.replication.factor").Int())
	c.AutoCreateTopicsEnable = c.v("auto.create.topics.enable").Bool()
	c.DeleteTopicEnable = c.v("delete.topic.enable").Bool()

	c.MessageMaxBytes = c.v("message.max.bytes").Int()
	c.SocketRequestMaxBytes = c.v("socket.request.max.bytes").Int()
	c.SocketSendBufferBytes = c.v("socket.send.buffer.bytes").Int()
	c.SocketReceiveBufferBytes = c.v("socket.receive.buffer.bytes").Int()
	c.ConnectionsMaxIdleMs = c.v("connections.max.idle.ms").Long()
	c.NumNetworkThreads = c.v("num.network.threads").Int()
	c.NumIOThreads = c.v("num.io.threads").Int()
	c.FetchMaxBytes = c.v("fetch.max.bytes").Int()
	c.MaxIncrementalFetchSessionCacheSlots = c.v("max.incremental.fetch.session.cache.slots").Int()

	c.LogRetentionCheckIntervalMs = c.v("log.retention.check.interval.ms").Long()
	c.LogFlushSchedulerIntervalMs = c.v("log.flush.scheduler.interval.ms").Long()
	c.LogFlushOffsetCheckpointIntervalMs = c.v("log.flush.offset.checkpoint.interval.ms").Int()
	c.LogFlushStartOffsetCheckpointIntervalMs = c.v("log.flush.start.offset.checkpoint.interval.ms").Int()
	c.ReplicaHighWatermarkCheckpointIntervalMs = c.v("replica.high.watermark.checkpoint.interval.ms").Long()
	c.NumRecoveryThreadsPerDataDir = c.v("num.recovery.threads.per.data.dir").Int()
	c.LogCleanerEnable = c.v("log.cleaner.enable").Bool()
	c.LogCleanerThreads = c.v("log.cleaner.threads").Int()

	c.MinInsyncReplicas = c.v("min.insync.replicas").Int()
	c.UncleanLeaderElectionEnable = c.v("unclean.leader.election.enable").Bool()
	c.ReplicaLagTimeMaxMs = c.v("replica.lag.time.max.ms").Long()
	c.ReplicaFetchMaxBytes = c.v("replica.fetch.max.bytes").Int()
	c.ReplicaFetchWaitMaxMs = c.v("replica.fetch.wait.max.ms").Int()
	c.ReplicaFetchMinBytes = c.v("replica.fetch.min.bytes").Int()
	c.ReplicaFetchResponseMaxBytes = c.v("replica.fetch.response.max.bytes").Int()
	c.ReplicaFetchBackoffMs = c.v("replica.fetch.backoff.ms").Int()
	c.ReplicaSocketTimeoutMs = c.v("replica.socket.timeout.ms").Int()
	c.NumReplicaFetchers = c.v("num.replica.fetchers").Int()
	if c.ReplicaFetchWaitMaxMs > c.ReplicaSocketTimeoutMs {
		fail("replica.fetch.wait.max.ms: %d is above replica.socket.timeout.ms %d, so fetches would time out while waiting", c.ReplicaFetchWaitMaxMs, c.ReplicaSocketTimeoutMs)
	}
	if int64(c.ReplicaFetchWaitMaxMs) > c.ReplicaLagTimeMaxMs {
		fail("replica.fetch.wait.max.ms: %d is above replica.lag.time.max.ms %d, so waiting followers would drop out of the ISR", c.ReplicaFetchWaitMaxMs, c.ReplicaLagTimeMaxMs)
	}

	c.BrokerSessionTimeoutMs = c.v("broker.session.timeout.ms").Int()
	c.BrokerHeartbeatIntervalMs = c.v("broker.heartbeat.interval.ms").Int()
	c.ControllerQuorumElectionTimeoutMs = c.v("controller.quorum.election.timeout.ms").Int()
	c.ControllerQuorumFetchTimeoutMs = c.v("controller.quorum.fetch.timeout.ms").Int()
	c.ControllerQuorumRequestTimeoutMs = c.v("controller.quorum.request.timeout.ms").Int()
	c.AutoLeaderRebalanceEnable = c.v("auto.leader.rebalance.enable").Bool()
	c.LeaderImbalanceCheckIntervalSeconds = c.v("leader.imbalance.check.interval.seconds").Long()
	c.LeaderImbalancePerBrokerPercentage = c.v("leader.imbalance.per.broker.percentage").Int()
	c.ControlledShutdownEnable = c.v("controlled.shutdown.enable").Bool()

	c.OffsetsTopicNumPartitions = c.v("offsets.topic.num.partitions").Int()
	c.OffsetsTopicReplicationFactor = c.v("offsets.topic.replication.factor").Short()
	c.OffsetsTopicSegmentBytes = c.v("offsets.topic.segment.bytes").Int()
	c.OffsetsRetentionMinutes = c.v("offsets.retention.minutes").Int()
	c.OffsetsRetentionCheckIntervalMs = c.v("offsets.retention.check.interval.ms").Long()
	c.OffsetsCommitTimeoutMs = c.v("offsets.commit.timeout.ms").Int()
	c.OffsetsLoadBufferSize = c.v("offsets.load.buffer.size").Int()
	c.GroupInitialRebalanceDelayMs = c.v("group.initial.rebalance.delay.ms").Int()
	c.GroupMinSessionTimeoutMs = c.v("group.min.session.timeout.ms").Int()
	c.GroupMaxSessionTimeoutMs = c.v("group.max.session.timeout.ms").Int()
	c.GroupMaxSize = c.v("group.max.size").Int()

	c.TransactionStateLogNumPartitions = c.v("transaction.state.log.num.partitions").Int()
	c.TransactionStateLogReplicationFactor = c.v("transaction.state.log.replication.factor").Short()
	c.TransactionStateLogMinISR = c.v("transaction.state.log.min.isr").Int()
	c.TransactionStateLogSegmentBytes = c.v("transaction.state.log.segment.bytes").Int()
	c.TransactionMaxTimeoutMs = c.v("transaction.max.timeout.ms").Int()
	c.TransactionalIDExpirationMs = c.v("transactional.id.expiration.ms").Int()
	c.TransactionAbortTimedOutCleanupIntervalMs = c.v("transaction.abort.timed.out.transaction.cleanup.interval.ms").Int()
	c.TransactionRemoveExpiredCleanupIntervalMs = c.v("transaction.remove.expired.transaction.cleanup.interval.ms").Int()
	c.ProducerIDExpirationMs = c.v("producer.id.expiration.ms").Int()
	c.ProducerIDExpirationCheckIntervalMs = c.v("producer.id.expiration.check.interval.ms").Int()

	c.SuperUsers = nil
	for _, u := range strings.Split(c.v("super.users").Str(), ";") {
		if u = strings.TrimSpace(u); u != "" {
			c.SuperUsers = append(c.SuperUsers, u)
		}
	}
	c.AllowEveryoneIfNoACLFound = c.v("allow.everyone.if.no.acl.found").Bool()
	c.AuthorizerClassName = c.v("authorizer.class.name").Str()
	c.SASLEnabledMechanisms = c.v("sasl.enabled.mechanisms").List()
	c.SASLMechanismInterBrokerProtocol = c.v("sasl.mechanism.inter.broker.protocol").Str()

	c.MetricsListener = c.v("metrics.listener").Str()
	c.MirrorStateTopicNumPartitions = c.v("mirror.state.topic.num.partitions").Int()
	c.MirrorStateTopicReplicationFactor = c.v("mirror.state.topic.replication.factor").Short()
	c.MirrorMetadataRefreshIntervalMs = c.v("mirror.metadata.refresh.interval.ms").Long()
	c.MirrorStallTimeoutMs = c.v("mirror.stall.timeout.ms").Long()
	c.MirrorSupportUncleanLeaderElection = c.v("mirror.support.unclean.leader.election").Bool()
	c.MirrorReplicationThrottledRate = c.v("mirror.replication.throttled.rate").Long()
	c.LeaderReplicationThrottledRate = c.v("leader.replication.throttled.rate").Long()
	c.ReplicationQuotaWindowNum = c.v("replication.quota.window.num").Int()
	c.ReplicationQuotaWindowSizeSeconds = c.v("replication.quota.window.size.seconds").Int()
	c.QuotaWindowNum = c.v("quota.window.num").Int()
	c.QuotaWindowSizeSeconds = c.v("quota.window.size.seconds").Int()

	return errors.Join(errs...)
}

func isUnspecifiedHost(h string) bool { return h == "0.0.0.0" || h == "::" }

func splitTrim(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func splitUpper(s string) []string {
	out := splitTrim(s)
	for i := range out {
		out[i] = strings.ToUpper(out[i])
	}
	return out
}

// Get returns the resolved value of any defined config: a broker config, a
// listener override that is set (listener.name.<listener>.<config>), or a
// topic config, whose value is then the broker-wide default a topic without
// overrides gets (e.g. retention.ms from log.retention.hours).
func (c *Config) Get(name string) (Value, bool) {
	if v, ok := c.values[name]; ok {
		return v, true
	}
	if td := topicDef(name); td != nil {
		v, _, _ := c.topicValue(td, nil)
		return v, true
	}
	return Value{}, false
}

// Source returns where Get's value comes from; SourceUnknown for names Get
// does not know.
func (c *Config) Source(name string) ConfigSource {
	if s, ok := c.sources[name]; ok {
		return s
	}
	if td := topicDef(name); td != nil {
		_, s, _ := c.topicValue(td, nil)
		return s
	}
	return SourceUnknown
}

// Origin says where a static value was set: "file <path>:<line>",
// "environment <VAR>" or "override"; "" for defaults and dynamic values.
func (c *Config) Origin(name string) string {
	if _, ok := c.static[name]; !ok {
		return ""
	}
	return c.origins[name]
}

// ListenerValue returns the value of a broker config for one listener: the
// listener override listener.name.<listener>.<name> if set (also looked up
// with a SASL mechanism prefix by the caller when needed), else the value of
// name.
func (c *Config) ListenerValue(listener, name string) (Value, bool) {
	if v, ok := c.values[listenerPrefix+strings.ToLower(listener)+"."+name]; ok {
		return v, true
	}
	if brokerDef(name) == nil {
		return Value{}, false
	}
	return c.values[name], true
}

// WithDynamic returns a copy of c with dynamic broker configs applied: a
// cluster-wide default layer and this broker's own layer (both as stored in
// the metadata log; either may be nil). It fails, wrapping
// kerr.InvalidConfig, on unknown names, values that do not validate, configs
// that cannot be updated at that level, and combinations that break a
// cross-config rule.
func (c *Config) WithDynamic(clusterDefault, perBroker map[string]string) (*Config, error) {
	if err := ValidateBrokerConfigs(clusterDefault, false); err != nil {
		return nil, err
	}
	if err := ValidateBrokerConfigs(perBroker, true); err != nil {
		return nil, err
	}
	nc, _, err := build(c.profile, c.static, c.origins, clusterDefault, perBroker)
	return nc, err
}

// ValidateBrokerConfigs checks configs an AlterConfigs or
// IncrementalAlterConfigs request sets on a broker (perBroker) or as the
// cluster-wide default. Errors wrap kerr.InvalidConfig and name the config.
func ValidateBrokerConfigs(cfgs map[string]string, perBroker bool) error {
	for _, name := range slices.Sorted(maps.Keys(cfgs)) {
		def := brokerDef(name)
		if def == nil {
			if _, base, ok := BaseName(name); ok {
				def = &base
			}
		}
		if def == nil {
			return &ValueError{Name: name, Reason: "unknown broker config"}
		}
		switch {
		case def.Update == ReadOnly:
			return &ValueError{Name: name, Reason: "cannot be updated dynamically (it is read at start-up)"}
		case def.Update == PerBroker && !perBroker:
			return &ValueError{Name: name, Reason: "can be updated only per broker, not as a cluster-wide default"}
		}
		if _, err := def.Parse(cfgs[name]); err != nil {
			var ve *ValueError
			if errors.As(err, &ve) {
				ve.Name = name
			}
			return err
		}
	}
	return nil
}
