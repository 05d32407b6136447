package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/storage"
)

// Config configures a Manager. The replica settings carry Kafka's names.
type Config struct {
	// Name labels the manager's logs ("replica", "mirror <name>").
	Name string
	// ReplicaID is sent in Fetch requests: the node id for followers, -1
	// for consumer fetches (a mirror).
	ReplicaID int32
	// BrokerEpoch returns this broker's epoch, sent in Fetch v15+ so that
	// the leader can name it when it adds the follower to the ISR; nil or
	// -1 when unknown.
	BrokerEpoch func() int64
	// ClientID is the client id of the fetchers' connections.
	ClientID string
	// NumFetchers is num.replica.fetchers: fetchers per source broker.
	NumFetchers int
	// MaxBytes is replica.fetch.response.max.bytes.
	MaxBytes int32
	// PartitionMaxBytes is replica.fetch.max.bytes.
	PartitionMaxBytes int32
	// MinBytes is replica.fetch.min.bytes.
	MinBytes int32
	// MaxWait is replica.fetch.wait.max.ms.
	MaxWait time.Duration
	// Backoff is replica.fetch.backoff.ms: the pause after an error.
	Backoff time.Duration
	// RequestTimeout bounds a request beyond MaxWait
	// (replica.socket.timeout.ms).
	RequestTimeout time.Duration
	// FetchVersion is the Fetch version sent (12..17; 13+ use topic ids
	// when every partition has one, 15+ carry the broker epoch). 0 means
	// 16.
	FetchVersion int16
	// IsolationLevel of consumer fetches (0 READ_UNCOMMITTED).
	IsolationLevel int8
	// NoSessions turns incremental fetch sessions off.
	NoSessions bool
	// RackID is sent in Fetch v11+.
	RackID string
	// Pipeline keeps a fetch in flight while the previous response is
	// appended (consumer fetchers only, ReplicaID < 0: a follower's fetch
	// offset tells its leader what it holds, so it must not run ahead of
	// its log). The Endpoint must then allow a second call, and Close,
	// while a Fetch is in flight (a mirror's franz-go client does).
	Pipeline bool
	// NewEndpoint connects to a source. Required.
	NewEndpoint func(ctx context.Context, s Source) (Endpoint, error)
	// Limiter, when set, throttles the bytes every fetcher of the manager
	// fetches together.
	Limiter *RateLimiter
	// OnFenced, when set, is told (outside any lock, from the fetcher's
	// goroutine) that a partition stopped because its source answered
	// FENCED_LEADER_EPOCH: a mirror refreshes its source metadata then.
	OnFenced func(tp storage.TopicPartition, err error)
	// Logger receives the fetchers' logs; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of backoffs; nil means time.Now.
	Now func() time.Time
}

// defaultFetchVersion is the Fetch version used when Config.FetchVersion
// is 0: ReplicaState with the broker epoch, topic ids.
const defaultFetchVersion = 16

// AddPartition asks a Manager to fetch a partition.
type AddPartition struct {
	TopicPartition storage.TopicPartition
	// TopicID is the topic's id (zero if unknown: the fetcher then names
	// topics, Fetch v12).
	TopicID [16]byte
	// LeaderEpoch is the source's leader epoch as the caller's metadata
	// knows it, sent as CurrentLeaderEpoch; -1 for unchecked.
	LeaderEpoch int32
	// Source is where to fetch from.
	Source Source
	// Target receives the data.
	Target Target
	// FetchOffset is the first offset to fetch; < 0 means the target's log
	// end offset.
	FetchOffset int64
}

// State is a partition's fetch state.
type State int8

const (
	// StateFetching partitions are in the next request.
	StateFetching State = iota
	// StateDelayed partitions wait for a backoff to pass after an error.
	StateDelayed
	// StateResetting partitions wait for the source's log range after
	// OFFSET_OUT_OF_RANGE.
	StateResetting
	// StateFenced partitions were refused with FENCED_LEADER_EPOCH and wait
	// to be added again with newer metadata.
	StateFenced
)

// String names the state in logs and statuses.
func (s State) String() string {
	switch s {
	case StateFetching:
		return "fetching"
	case StateDelayed:
		return "delayed"
	case StateResetting:
		return "resetting"
	case StateFenced:
		return "fenced"
	}
	return "unknown"
}

// PartitionStatus is a snapshot of a partition's fetch state.
type PartitionStatus struct {
	Source           Source
	LeaderEpoch      int32
	State            State
	FetchOffset      int64
	LastFetchedEpoch int32
	// SourceHighWatermark and SourceLogStart are from the last response
	// that carried the partition (-1 before one did).
	SourceHighWatermark int64
	SourceLogStart      int64
	// LastError is the last error the partition met, nil after a success.
	LastError error
}

// fetcherKey identifies a fetcher: one per source broker and fetcher id.
type fetcherKey struct {
	cluster string
	broker  int32
	id      int
}

// Manager owns the fetchers of one kind (followers of this cluster, or one
// mirror's) and assigns partitions to them. Safe for concurrent use.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	closed   bool
	fetchers map[fetcherKey]*fetcher
	where    map[storage.TopicPartition]fetcherKey

	stats fetchCounters // metrics.go

	// wg counts running fetcher goroutines; stopping a fetcher only cancels
	// it (never waits under mu, so that a fetcher's OnFenced callback may
	// call back into the manager), and Close waits for all of them.
	wg sync.WaitGroup
}

// ErrClosed is returned by a closed Manager.
var ErrClosed = errors.New("replication: manager closed")

// NewManager returns a manager with no partitions; it starts fetchers as
// partitions are added.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.NewEndpoint == nil {
		return nil, errors.New("replication: Config.NewEndpoint is required")
	}
	if cfg.NumFetchers < 1 {
		cfg.NumFetchers = 1
	}
	if cfg.FetchVersion == 0 {
		cfg.FetchVersion = defaultFetchVersion
	}
	if cfg.FetchVersion < 12 || cfg.FetchVersion > 17 {
		return nil, fmt.Errorf("replication: Fetch version %d is not in 12..17", cfg.FetchVersion)
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 10 << 20
	}
	if cfg.PartitionMaxBytes <= 0 {
		cfg.PartitionMaxBytes = 1 << 20
	}
	if cfg.MinBytes <= 0 {
		cfg.MinBytes = 1
	}
	if cfg.MaxWait < 0 {
		cfg.MaxWait = 0
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Name == "" {
		cfg.Name = "replica"
	}
	return &Manager{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "fetcher-manager", "fetchers", cfg.Name),
		fetchers: make(map[fetcherKey]*fetcher),
		where:    make(map[storage.TopicPartition]fetcherKey),
	}, nil
}

// fetcherID spreads a source's partitions over its fetchers as Kafka does
// (abs(31 * topic.hashCode + partition) % num.replica.fetchers).
func fetcherID(tp storage.TopicPartition, n int) int {
	h := int32(0)
	for _, r := range tp.Topic {
		// Java's String.hashCode over UTF-16 code units.
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	v := 31*h + tp.Partition
	if v < 0 {
		if v == -v { // math.MinInt32: Kafka's Utils.abs maps it to 0
			v = 0
		} else {
			v = -v
		}
	}
	return int(v) % n
}

// AddPartitions starts fetching the partitions. A partition already
// fetched from the same source in the same leader epoch into the same
// target keeps its fetch state; otherwise its old state (possibly in
// another fetcher) is replaced.
func (m *Manager) AddPartitions(parts ...AddPartition) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	for _, p := range parts {
		if p.Target == nil {
			return fmt.Errorf("replication: add %s: no target", p.TopicPartition)
		}
		key := fetcherKey{cluster: p.Source.Cluster, broker: p.Source.BrokerID, id: fetcherID(p.TopicPartition, m.cfg.NumFetchers)}
		if old, ok := m.where[p.TopicPartition]; ok && old != key {
			m.removeLocked(p.TopicPartition)
		}
		f := m.fetchers[key]
		if f == nil {
			f = newFetcher(m, key, p.Source)
			m.fetchers[key] = f
			f.start()
		}
		f.add(p)
		m.where[p.TopicPartition] = key
	}
	return nil
}

// RemovePartitions stops fetching the partitions. When it returns, no
// fetcher calls their targets any more. Fetchers left without partitions
// stop (in the background; Close waits for them).
func (m *Manager) RemovePartitions(tps ...storage.TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, tp := range tps {
		m.removeLocked(tp)
	}
}

// removeLocked removes one partition; caller holds mu.
func (m *Manager) removeLocked(tp storage.TopicPartition) {
	key, ok := m.where[tp]
	if !ok {
		return
	}
	delete(m.where, tp)
	f := m.fetchers[key]
	if f == nil {
		return
	}
	if f.remove(tp) == 0 {
		delete(m.fetchers, key)
		f.stop()
	}
}

// Partitions returns the partitions the manager fetches.
func (m *Manager) Partitions() []storage.TopicPartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]storage.TopicPartition, 0, len(m.where))
	for tp := range m.where {
		out = append(out, tp)
	}
	return out
}

// Status returns the fetch state of a partition, false if it is not
// fetched.
func (m *Manager) Status(tp storage.TopicPartition) (PartitionStatus, bool) {
	m.mu.Lock()
	key, ok := m.where[tp]
	f := m.fetchers[key]
	m.mu.Unlock()
	if !ok || f == nil {
		return PartitionStatus{}, false
	}
	return f.status(tp)
}

// NumFetchers returns the number of running fetchers.
func (m *Manager) NumFetchers() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.fetchers)
}

// Close stops every fetcher and waits for them. Later additions fail.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	fs := m.fetchers
	m.fetchers = make(map[fetcherKey]*fetcher)
	m.where = make(map[storage.TopicPartition]fetcherKey)
	m.mu.Unlock()
	for _, f := range fs {
		f.stop()
	}
	m.wg.Wait()
	return nil
}
