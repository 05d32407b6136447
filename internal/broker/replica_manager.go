package broker

import (
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/replication"
	"github.com/kmirror/kmirror/internal/storage"
)

// LogManager is what the broker needs from the storage layer's log manager:
// *storage.Manager implements it. It is an interface so that the broker
// names exactly the operations it relies on.
type LogManager interface {
	// Log returns the partition's log if this node has one.
	Log(tp storage.TopicPartition) (*storage.Log, bool)
	// Logs returns every log the manager holds.
	Logs() []*storage.Log
	// GetOrCreateLog returns the partition's log, creating it (with the
	// topic id and configuration) if needed.
	GetOrCreateLog(tp storage.TopicPartition, topicID [16]byte, cfg storage.LogConfig) (*storage.Log, error)
	// AsyncDelete removes the partition's log from the manager at once and
	// its files in the background.
	AsyncDelete(tp storage.TopicPartition) error
	// UpdateConfig changes the configuration of the partition's log.
	UpdateConfig(tp storage.TopicPartition, cfg storage.LogConfig)
}

var _ LogManager = (*storage.Manager)(nil)

// ReplicaManager owns the Partitions of every replica this node hosts
// according to the metadata image. It is a metadata.Publisher: each delta's
// local replica changes create, promote, demote or remove partitions, and
// topic and broker config changes reach the logs.
//
// Invariants: a partition is in the map exactly while the last applied
// image assigns a replica of it to this node (or its log could not be
// opened, then it is offline); OnMetadataUpdate runs on the metadata
// publisher's single goroutine, so deltas apply in log order.
type ReplicaManager struct {
	nodeID  int32
	logs    LogManager
	log     *slog.Logger
	now     func() time.Time
	closing chan struct{}

	staticCfg *config.Config
	cfg       atomic.Pointer[config.Config] // static config with the dynamic broker configs of the image

	img        atomic.Pointer[metadata.Image]
	metaNotify notifier // signalled after every applied delta
	firstOnce  sync.Once
	first      chan struct{} // closed after the first applied update

	mu         sync.RWMutex
	partitions map[storage.TopicPartition]*Partition

	// fetchers replicate the partitions this node follows; alter sends
	// the ISR changes of the partitions it leads. Both are set before the
	// first metadata update and never change.
	fetchers *replication.Manager
	alter    *alterPartitionSender

	// watchMu serialises leadership watcher registration and notification,
	// so that a watcher sees its initial state and every later change once
	// and in order, and never after it was stopped. Watcher callbacks run
	// under it, so it is never taken while holding mu.
	watchMu  sync.Mutex
	watchers map[string]map[*leadershipWatcher]struct{}

	stats brokerStats // metrics.go
	// leaderQuota measures the throttled replication this broker leads
	// (replication_quota.go).
	leaderQuota *replicationQuota
	// incarnation is this process's registration (Deps.Incarnation);
	// strayChecked is set once the stray logs were deleted. Publisher
	// goroutine only.
	incarnation  metadata.Uuid
	strayChecked bool
}

func newReplicaManager(nodeID int32, logs LogManager, cfg *config.Config, logger *slog.Logger, now func() time.Time, closing chan struct{}) *ReplicaManager {
	rm := &ReplicaManager{
		nodeID: nodeID, logs: logs, log: logger, now: now, closing: closing,
		staticCfg:  cfg,
		first:      make(chan struct{}),
		partitions: make(map[storage.TopicPartition]*Partition),
		watchers:   make(map[string]map[*leadershipWatcher]struct{}),
	}
	rm.cfg.Store(cfg)
	rm.img.Store(metadata.EmptyImage())
	rm.leaderQuota = newReplicationQuota(cfg.ReplicationQuotaWindowNum, cfg.ReplicationQuotaWindowSizeSeconds)
	return rm
}

// Name implements metadata.Publisher.
func (rm *ReplicaManager) Name() string { return "broker-replica-manager" }

// Image returns the last metadata image the replica manager applied: the
// local partitions agree with it.
func (rm *ReplicaManager) Image() *metadata.Image { return rm.img.Load() }

// Config returns the broker configuration in effect: the static one with
// the dynamic broker configs of the image applied.
func (rm *ReplicaManager) Config() *config.Config { return rm.cfg.Load() }

// Partition returns the local partition, if this node hosts it.
func (rm *ReplicaManager) Partition(tp storage.TopicPartition) (*Partition, bool) {
	rm.mu.RLock()
	defer rm.mu.RUnlock()
	p, ok := rm.partitions[tp]
	return p, ok
}

// Partitions returns every local partition.
func (rm *ReplicaManager) Partitions() []*Partition {
	rm.mu.RLock()
	defer rm.mu.RUnlock()
	out := make([]*Partition, 0, len(rm.partitions))
	for _, p := range rm.partitions {
		out = append(out, p)
	}
	return out
}

// OnMetadataUpdate implements metadata.Publisher: it applies the delta's
// changes to the local replicas, deletions first. As in Kafka, replicas
// leave the fetchers before they change role (a new leader stops
// fetching before it serves; a follower of a new leader epoch restarts its
// fetch), and followers join the fetchers toward their leader after.
func (rm *ReplicaManager) OnMetadataUpdate(delta *metadata.Delta, img *metadata.Image) {
	brokerCfgChanged := rm.applyBrokerConfigs(delta, img)
	changes := delta.LocalChanges(rm.nodeID)
	var stop []storage.TopicPartition
	for _, lp := range changes.Deletes {
		stop = append(stop, storage.TopicPartition{Topic: lp.Topic, Partition: lp.Partition})
	}
	for _, lp := range changes.Leaders {
		stop = append(stop, storage.TopicPartition{Topic: lp.Topic, Partition: lp.Partition})
	}
	rm.stopFetching(stop...)
	for _, lp := range changes.Deletes {
		rm.removePartition(lp)
	}
	for _, lp := range changes.Leaders {
		rm.applyReplica(lp, img, true)
	}
	changedFollowers := map[storage.TopicPartition]bool{}
	for _, lp := range changes.Followers {
		tp := storage.TopicPartition{Topic: lp.Topic, Partition: lp.Partition}
		changedFollowers[tp] = true
		same := rm.fetchingInEpoch(tp, lp.State.Leader, lp.State.LeaderEpoch)
		if !same {
			rm.stopFetching(tp)
		}
		rm.applyReplica(lp, img, false)
		if p, ok := rm.Partition(tp); ok && p.Log() != nil && !same {
			rm.startFetching(p, img)
		}
	}
	rm.refreshLeaderAddresses(delta, img, changedFollowers)
	rm.applyTopicConfigs(delta, img, brokerCfgChanged)
	rm.deleteStrayLogs(img)
	rm.img.Store(img)
	rm.metaNotify.signal()
	rm.firstOnce.Do(func() { close(rm.first) })
}

// applyBrokerConfigs recomputes the effective broker configuration when
// the delta changed the cluster-wide or this broker's dynamic configs.
func (rm *ReplicaManager) applyBrokerConfigs(delta *metadata.Delta, img *metadata.Image) bool {
	self := strconv.Itoa(int(rm.nodeID))
	changed := false
	for _, r := range delta.ChangedConfigs() {
		if r.Type == metadata.ResourceBroker && (r.Name == "" || r.Name == self) {
			changed = true
		}
	}
	if !changed {
		return false
	}
	def := img.Configs(metadata.ConfigResource{Type: metadata.ResourceBroker, Name: ""})
	own := img.Configs(metadata.ConfigResource{Type: metadata.ResourceBroker, Name: self})
	c, err := rm.staticCfg.WithDynamic(def, own)
	if err != nil {
		rm.log.Warn("dynamic broker configs not applied", "error", err)
		return false
	}
	rm.cfg.Store(c)
	return true
}

// settingsFor resolves a topic's settings from the image.
func (rm *ReplicaManager) settingsFor(img *metadata.Image, topic string) topicSettings {
	overrides := img.Configs(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: topic})
	s, err := resolveTopicSettings(rm.Config(), overrides)
	if err != nil {
		rm.log.Warn("topic config does not resolve; using broker defaults", "topic", topic, "error", err)
	}
	return s
}

// applyReplica makes this node leader or follower of a partition, opening
// (or creating) its log. A log left over from an earlier topic of the same
// name (another topic id) is deleted first.
func (rm *ReplicaManager) applyReplica(lp metadata.LocalPartition, img *metadata.Image, leader bool) {
	tp := storage.TopicPartition{Topic: lp.Topic, Partition: lp.Partition}
	settings := rm.settingsFor(img, lp.Topic)
	rm.mu.Lock()
	p, ok := rm.partitions[tp]
	if !ok {
		p = newPartition(rm, tp)
		rm.partitions[tp] = p
	}
	rm.mu.Unlock()

	if l, ok := rm.logs.Log(tp); ok {
		if id, has := l.TopicID(); has && metadata.Uuid(id) != lp.TopicID {
			rm.log.Info("deleting the log of an earlier topic with the same name", "topic", tp.Topic, "partition", tp.Partition,
				"old_topic_id", metadata.Uuid(id), "topic_id", lp.TopicID)
			p.remove()
			if err := rm.logs.AsyncDelete(tp); err != nil {
				rm.log.Warn("delete stale log", "topic", tp.Topic, "partition", tp.Partition, "error", err)
			}
		}
	}
	log, err := rm.logs.GetOrCreateLog(tp, lp.TopicID, settings.log)
	if err != nil {
		rm.log.Error("open partition log", "topic", tp.Topic, "partition", tp.Partition, "error", err)
		p.markOffline(lp, err)
		rm.notifyWatchers(lp.Topic, lp.Partition, false, lp.State.LeaderEpoch)
		return
	}
	// A log loaded from disk at start-up has the manager's defaults, not
	// its topic's configuration.
	if log.Config() != settings.log {
		rm.logs.UpdateConfig(tp, settings.log)
	}
	if leader {
		p.makeLeader(lp, settings, log)
	} else {
		p.makeFollower(lp, settings, log)
	}
	rm.notifyWatchers(lp.Topic, lp.Partition, leader, lp.State.LeaderEpoch)
}

// deleteStrayLogs deletes, once, the logs of partitions this node does not
// host: those it stopped hosting, or whose topic was deleted, while it was
// down, so that it never saw the change (Kafka's stray replicas). It waits
// for the first image that holds this process's own registration: that
// image holds every change made before the node came back, so a log it
// does not assign here is not this node's any more.
func (rm *ReplicaManager) deleteStrayLogs(img *metadata.Image) {
	if rm.strayChecked || rm.incarnation.IsZero() {
		return
	}
	if reg, ok := img.Broker(rm.nodeID); !ok || reg.IncarnationID != rm.incarnation {
		return
	}
	rm.strayChecked = true
	for _, l := range rm.logs.Logs() {
		tp := l.TopicPartition()
		if _, hosted := rm.Partition(tp); hosted {
			continue
		}
		if err := rm.logs.AsyncDelete(tp); err != nil {
			rm.log.Warn("delete stray partition log", "topic", tp.Topic, "partition", tp.Partition, "error", err)
			continue
		}
		rm.log.Info("deleted stray partition log: the metadata assigns no replica of it to this node",
			"topic", tp.Topic, "partition", tp.Partition)
	}
}

// removePartition drops a replica this node no longer hosts and deletes
// its log.
func (rm *ReplicaManager) removePartition(lp metadata.LocalPartition) {
	tp := storage.TopicPartition{Topic: lp.Topic, Partition: lp.Partition}
	rm.mu.Lock()
	p, ok := rm.partitions[tp]
	delete(rm.partitions, tp)
	rm.mu.Unlock()
	if ok {
		p.remove()
	}
	rm.notifyWatchers(lp.Topic, lp.Partition, false, lp.State.LeaderEpoch)
	if _, has := rm.logs.Log(tp); !has {
		return
	}
	if err := rm.logs.AsyncDelete(tp); err != nil && !errors.Is(err, storage.ErrClosed) {
		rm.log.Warn("delete partition log", "topic", tp.Topic, "partition", tp.Partition, "error", err)
		return
	}
	rm.log.Info("deleted partition", "topic", tp.Topic, "partition", tp.Partition, "topic_deleted", lp.TopicDeleted)
}

// applyTopicConfigs pushes changed topic configs (or, after a broker config
// change, every topic's) to the local logs and partitions.
func (rm *ReplicaManager) applyTopicConfigs(delta *metadata.Delta, img *metadata.Image, all bool) {
	topics := map[string]bool{}
	if all {
		for _, p := range rm.Partitions() {
			topics[p.tp.Topic] = true
		}
	} else {
		for _, r := range delta.ChangedConfigs() {
			if r.Type == metadata.ResourceTopic {
				topics[r.Name] = true
			}
		}
	}
	if len(topics) == 0 {
		return
	}
	for _, p := range rm.Partitions() {
		if !topics[p.tp.Topic] {
			continue
		}
		if _, ok := img.Topic(p.tp.Topic); !ok {
			continue
		}
		s := rm.settingsFor(img, p.tp.Topic)
		rm.logs.UpdateConfig(p.tp, s.log)
		p.updateSettings(s)
	}
}

// refreshLeaderAddresses re-points the followers whose leader registered
// again (perhaps at another address) at the leader's current listener;
// the fetchers keep the fetch state of partitions whose source is
// unchanged.
func (rm *ReplicaManager) refreshLeaderAddresses(delta *metadata.Delta, img *metadata.Image, done map[storage.TopicPartition]bool) {
	changed := delta.ChangedBrokers()
	if len(changed) == 0 || rm.fetchers == nil {
		return
	}
	for _, p := range rm.Partitions() {
		if done[p.tp] || p.IsLeader() || p.Log() == nil {
			continue
		}
		if st := p.State(); st.Leader >= 0 && slices.Contains(changed, st.Leader) {
			rm.startFetching(p, img)
		}
	}
}
