package mirror

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/broker"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
	"github.com/kmirror/kmirror/internal/replication"
	"github.com/kmirror/kmirror/internal/storage"
)

// ManagerConfig configures the mirror manager of a broker.
type ManagerConfig struct {
	// NodeID is this broker's id.
	NodeID int32
	// ClusterID is this cluster's id: the LME questions to a source name it.
	ClusterID string
	// SupportUncleanLeaderElection is
	// mirror.support.unclean.leader.election: PREPARING waits for every
	// replica, not only the in-sync ones.
	SupportUncleanLeaderElection bool
	// MetadataRefreshInterval is mirror.metadata.refresh.interval.ms: how
	// often a source's metadata is refreshed without a reason to.
	MetadataRefreshInterval time.Duration
	// HealthInterval is how often fetch states are checked for errors that
	// call for new source metadata (and recorded for DescribeMirrors).
	HealthInterval time.Duration
	// StallTimeout is mirror.stall.timeout.ms: a MIRRORING partition that
	// got no fetch response for this long while the source is ahead of it
	// is stalled (stall.go).
	StallTimeout time.Duration
	// LagRefreshInterval is the age past which a partition's source high
	// watermark, when no fetch response brought a newer one, is asked for
	// with ListOffsets (lag.go); default the smaller of 5 s and
	// MetadataRefreshInterval.
	LagRefreshInterval time.Duration
	// Fetcher settings (Kafka's replica.fetch.* names).
	NumFetchers            int
	FetchMaxBytes          int32
	FetchPartitionMaxBytes int32
	FetchMaxWait           time.Duration
	FetchBackoff           time.Duration
	// RequestTimeout bounds one request to the source or to another
	// broker, and one state write.
	RequestTimeout time.Duration
	// RetryBackoff is the first pause of a FAILED partition before it tries
	// again; it doubles up to MaxRetryBackoff.
	RetryBackoff, MaxRetryBackoff time.Duration
	// Logger and Now default to slog.Default() and time.Now.
	Logger *slog.Logger
	Now    func() time.Time
}

func (c *ManagerConfig) defaults() {
	if c.MetadataRefreshInterval <= 0 {
		c.MetadataRefreshInterval = 30 * time.Second
	}
	if c.HealthInterval <= 0 {
		c.HealthInterval = 500 * time.Millisecond
	}
	if c.StallTimeout <= 0 {
		c.StallTimeout = time.Minute
	}
	if c.LagRefreshInterval <= 0 {
		c.LagRefreshInterval = min(5*time.Second, c.MetadataRefreshInterval)
	}
	if c.NumFetchers <= 0 {
		c.NumFetchers = 1
	}
	if c.FetchMaxBytes <= 0 {
		c.FetchMaxBytes = 50 << 20
	}
	if c.FetchPartitionMaxBytes <= 0 {
		c.FetchPartitionMaxBytes = 10 << 20
	}
	if c.FetchMaxWait <= 0 {
		c.FetchMaxWait = 500 * time.Millisecond
	}
	if c.FetchBackoff <= 0 {
		c.FetchBackoff = time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = time.Second
	}
	if c.MaxRetryBackoff <= 0 {
		c.MaxRetryBackoff = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// PartitionSource gives the broker's local partitions
// (*broker.ReplicaManager).
type PartitionSource interface {
	Partition(tp storage.TopicPartition) (*broker.Partition, bool)
}

// MirrorController is what the partition drivers ask of the active
// controller (controller.Channel).
type MirrorController interface {
	// BumpLeaderEpoch raises a partition's leader epoch to at least
	// minEpoch; the leader and ISR stay.
	BumpLeaderEpoch(ctx context.Context, topicID metadata.Uuid, partition int32, minEpoch int32) (int32, error)
	// CompleteFailover reports that a REMOVED topic's partitions may all
	// be STOPPED; nil once the topic is recorded as STOPPED, an error
	// wrapping INVALID_REQUEST while a partition still fails over.
	CompleteFailover(ctx context.Context, topic string, topicID metadata.Uuid, mirror string) error
}

// ManagerDeps are what the manager needs from the node.
type ManagerDeps struct {
	// Partitions are the broker's partitions (required).
	Partitions PartitionSource
	// Store persists the partition states (required).
	Store StateStore
	// Controller bumps leader epochs at failover (required for STOPPING)
	// and records complete failovers.
	Controller MirrorController
	// ClientOpts builds a source client's options from a mirror's configs
	// (required; mirrorconfig.SourceClientOpts).
	ClientOpts ClientOpts
	// Secrets decrypts the mirrors' stored secrets before ClientOpts and
	// the sync see them (nil: no password.encoder.secret).
	Secrets *mirrorconfig.SecretCodec
	// ThrottleRate returns mirror.replication.throttled.rate (bytes per
	// second for all mirror fetchers of the broker, <= 0 unlimited); read
	// at every metadata update. Nil: unlimited.
	ThrottleRate func() int64
	// Sync is what the periodic sync of configs, partitions, group
	// offsets and ACLs needs (sync_*.go); without Sync.Controller it does
	// not run.
	Sync SyncDeps
}

// Manager is the mirror metadata manager of a broker: a metadata.Publisher
// that drives the state machine of every mirrored partition the broker
// leads (one driver goroutine each), and keeps one source link per mirror
// that has such partitions.
//
// Invariants:
//   - at most one driver per partition acts at a time: a driver replacing
//     another (new leader epoch, another mirror) starts only once the old
//     one has stopped its work and its fetching;
//   - drivers exist only for partitions this broker leads, whose topic's
//     mirror.name names an existing mirror.
type Manager struct {
	cfg     ManagerConfig
	deps    ManagerDeps
	log     *slog.Logger
	limiter *replication.RateLimiter

	mu      sync.Mutex
	closed  bool
	img     *metadata.Image
	sources map[string]*source
	drivers map[storage.TopicPartition]*driver
	syncs   *syncRunner // nil without SyncDeps.Controller
	// failovers reports the topics whose partitions this broker STOPPED
	// (failover_complete.go).
	failovers *failoverReporter

	stats *managerStats // metrics.go

	wg sync.WaitGroup
}

// NewManager returns a manager; add it to the metadata publishers to start
// it.
func NewManager(cfg ManagerConfig, deps ManagerDeps) (*Manager, error) {
	if deps.Partitions == nil || deps.Store == nil || deps.ClientOpts == nil {
		return nil, errors.New("mirror: ManagerDeps.Partitions, Store and ClientOpts are required")
	}
	cfg.defaults()
	rate := int64(-1)
	if deps.ThrottleRate != nil {
		rate = deps.ThrottleRate()
	}
	m := &Manager{
		cfg: cfg, deps: deps,
		log:     cfg.Logger.With("component", "mirror-manager"),
		limiter: replication.NewRateLimiter(rate),
		img:     metadata.EmptyImage(),
		sources: map[string]*source{},
		drivers: map[storage.TopicPartition]*driver{},
		stats:   newManagerStats(),
	}
	m.syncs = newSyncRunner(m)
	m.failovers = newFailoverReporter(m)
	return m, nil
}

// Name implements metadata.Publisher.
func (m *Manager) Name() string { return "mirror-manager" }

// Close stops every driver and source and waits for them.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	for tp, d := range m.drivers {
		d.stop()
		delete(m.drivers, tp)
	}
	srcs := m.sources
	m.sources = map[string]*source{}
	m.mu.Unlock()
	m.syncs.close()
	m.failovers.close()
	for _, d := range srcs {
		d.close()
	}
	m.wg.Wait()
}

// OnMetadataUpdate implements metadata.Publisher.
func (m *Manager) OnMetadataUpdate(delta *metadata.Delta, img *metadata.Image) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.img = img
	if m.deps.ThrottleRate != nil {
		if r := m.deps.ThrottleRate(); r != m.limiter.Rate() {
			m.limiter.SetRate(r)
		}
	}
	mirrors := img.Mirrors()
	// A source whose mirror was deleted or reconfigured is dropped; its
	// partitions' drivers are re-evaluated below and get a new source.
	changedMirrors := delta.ChangedMirrors()
	for _, name := range changedMirrors {
		if s, ok := m.sources[name]; ok {
			delete(m.sources, name)
			m.closeSourceLater(s, name)
		}
	}
	todo := map[storage.TopicPartition]metadata.Uuid{}
	changes := delta.LocalChanges(m.cfg.NodeID)
	for _, lp := range append(changes.Followers, changes.Deletes...) {
		m.stopDriverLocked(storage.TopicPartition{Topic: lp.Topic, Partition: lp.Partition})
	}
	for _, lp := range changes.Leaders {
		todo[storage.TopicPartition{Topic: lp.Topic, Partition: lp.Partition}] = lp.TopicID
	}
	topics := map[string]bool{}
	for _, c := range delta.MirrorNameChanges() {
		topics[c.Topic] = true
	}
	for _, name := range changedMirrors {
		for _, t := range topicsOfMirror(img, name) {
			topics[t] = true
		}
	}
	for t := range topics {
		ti, ok := img.Topic(t)
		if !ok {
			continue
		}
		for p, ps := range ti.Partitions {
			if ps.Leader == m.cfg.NodeID {
				todo[storage.TopicPartition{Topic: t, Partition: p}] = ti.ID
			}
		}
	}
	for _, tp := range slices.SortedFunc(maps.Keys(todo), compareTP) {
		m.evaluateLocked(img, mirrors, tp, todo[tp])
	}
	m.syncs.update(delta, img)
}

// topicsOfMirror lists the topics whose mirror.name refers to the mirror,
// in any state.
func topicsOfMirror(img *metadata.Image, mirror string) []string {
	var out []string
	for _, res := range img.ConfigResources(metadata.ResourceTopic) {
		if m, _ := ParseMirrorName(img.Configs(res)[metadata.MirrorNameConfig]); m == mirror {
			out = append(out, res.Name)
		}
	}
	return out
}

func compareTP(a, b storage.TopicPartition) int {
	if a.Topic != b.Topic {
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	return int(a.Partition - b.Partition)
}

// evaluateLocked makes the driver of a partition this broker leads match the
// image: none for a topic in no (existing) mirror, one for its mirror and
// leader epoch otherwise.
func (m *Manager) evaluateLocked(img *metadata.Image, mirrors []string, tp storage.TopicPartition, topicID metadata.Uuid) {
	ti, ok := img.Topic(tp.Topic)
	if !ok {
		m.stopDriverLocked(tp)
		return
	}
	ps, ok := ti.Partition(tp.Partition)
	if !ok || ps.Leader != m.cfg.NodeID {
		m.stopDriverLocked(tp)
		return
	}
	raw, _ := img.Config(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: tp.Topic}, metadata.MirrorNameConfig)
	mirror, desired := ParseMirrorName(raw)
	old := m.drivers[tp]
	if desired == DesiredNone || !slices.Contains(mirrors, mirror) {
		if old != nil {
			// Release: the driver makes the partition writable, stops and
			// forgets itself; until then a successor would wait for it.
			old.setDesired(DesiredNone, raw)
		} else if desired == DesiredNone {
			if p, ok := m.deps.Partitions.Partition(tp); ok && p.ReadOnly() != nil && p.MirrorName() == "" {
				p.SetReadOnly(nil)
			}
		}
		return
	}
	if old != nil && old.key.Mirror == mirror && old.leaderEpoch == ps.LeaderEpoch && old.source == m.sources[mirror] {
		old.setDesired(desired, raw)
		return
	}
	part, ok := m.deps.Partitions.Partition(tp)
	if !ok {
		m.stopDriverLocked(tp)
		return
	}
	var prev *driver
	if old != nil {
		old.stop()
		prev = old
	}
	src := m.sources[mirror]
	if src == nil {
		cfgs := maps.Clone(img.Configs(metadata.ConfigResource{Type: metadata.ResourceMirror, Name: mirror}))
		src = newSource(m, mirror, cfgs)
		m.sources[mirror] = src
	}
	d := newDriver(m, src, driverSpec{
		key:         mirrorstate.PartitionKey{Mirror: mirror, TopicID: topicID, Partition: tp.Partition},
		tp:          tp,
		leaderEpoch: ps.LeaderEpoch,
		part:        part,
		desired:     desired,
		raw:         raw,
		prev:        prev,
	})
	m.drivers[tp] = d
	d.start()
}

// stopDriverLocked stops the driver of tp, if any (leadership lost).
func (m *Manager) stopDriverLocked(tp storage.TopicPartition) {
	if d, ok := m.drivers[tp]; ok {
		d.stop()
		delete(m.drivers, tp)
	}
}

// closeSourceLater closes a dropped source once the drivers using it have
// moved on (they stop fetching from it as they stop); its fetchers and
// client go with it.
func (m *Manager) closeSourceLater(s *source, name string) {
	var users []*driver
	for _, d := range m.drivers {
		if d.source == s {
			users = append(users, d)
		}
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for _, d := range users {
			<-d.done
		}
		s.close()
	}()
	m.log.Info("mirror source dropped", "mirror", name)
}

// forget removes d from the drivers if it is still there (a driver that
// released its partition).
func (m *Manager) forget(d *driver) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.drivers[d.tp] == d {
		delete(m.drivers, d.tp)
	}
}

// retryBackoff is FAILED's pause before attempt n+1.
func (m *Manager) retryBackoff(attempt int) time.Duration {
	d := m.cfg.RetryBackoff
	for range min(attempt, 16) {
		d *= 2
		if d >= m.cfg.MaxRetryBackoff {
			return m.cfg.MaxRetryBackoff
		}
	}
	return d
}
