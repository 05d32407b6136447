package producerstate

import (
	"log/slog"
	"sort"
	"time"

	"github.com/kmirror/kmirror/internal/record"
)

// DefaultProducerIDExpiration is Kafka's default producer.id.expiration.ms.
const DefaultProducerIDExpiration = 24 * time.Hour

// Options configure a Manager.
type Options struct {
	// ProducerIDExpiration is producer.id.expiration.ms: a producer idle this
	// long, with no ongoing transaction, is forgotten. Zero means the default
	// of one day.
	ProducerIDExpiration time.Duration
	// Now is the clock used for expiry when loading snapshots; nil means
	// time.Now.
	Now func() time.Time
	// Logger receives snapshot and validation warnings; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Manager is the ProducerStateManager of one partition. Not safe for
// concurrent use: the Log calls it under its own append lock.
//
// Invariants: ongoing[pid] == producers[pid].CurrentTxnFirstOffset for every
// producer with an ongoing transaction, and ongoing has no other keys;
// unreplicated holds completed transactions in marker order whose marker is
// not yet known to be below the high watermark.
type Manager struct {
	dir        string
	expiration time.Duration
	now        func() time.Time
	log        *slog.Logger

	producers    map[int64]*Entry
	ongoing      map[int64]int64 // producer id → first offset of its ongoing transaction
	unreplicated []CompletedTxn  // in marker order
	mapEnd       int64

	snapshots []int64 // offsets of the snapshot files in dir, ascending
}

// NewManager creates the manager of the partition in partitionDir. It lists
// the snapshot files there (and removes leftovers of interrupted snapshot
// writes) but loads no state: the Log calls TruncateAndReload and replays
// the log, as Kafka's log loader does. A missing directory has no snapshots.
func NewManager(partitionDir string, opts Options) (*Manager, error) {
	m := &Manager{
		dir:        partitionDir,
		expiration: opts.ProducerIDExpiration,
		now:        opts.Now,
		log:        opts.Logger,
		producers:  make(map[int64]*Entry),
		ongoing:    make(map[int64]int64),
	}
	if m.expiration <= 0 {
		m.expiration = DefaultProducerIDExpiration
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	m.log = m.log.With("dir", partitionDir)
	if err := m.loadSnapshotList(); err != nil {
		return nil, err
	}
	return m, nil
}

// FindDuplicate reports whether a producer batch (leader path, before offsets
// are assigned) is a retry of one of the producer's last five batches: same
// producer epoch and exactly the same sequence range. If so the leader answers
// with the original offsets and appends nothing. Only committed state is
// consulted, as Kafka does.
func (m *Manager) FindDuplicate(h record.Header) (BatchMetadata, bool) {
	if !h.HasProducerID() {
		return BatchMetadata{}, false
	}
	e, ok := m.producers[h.ProducerID]
	if !ok || e.ProducerEpoch != h.ProducerEpoch {
		return BatchMetadata{}, false
	}
	return e.findBatch(h.BaseSequence, h.LastSequence())
}

// MapEndOffset is the offset below which every batch of the log has been
// applied to the state.
func (m *Manager) MapEndOffset() int64 { return m.mapEnd }

// UpdateMapEndOffset sets MapEndOffset, for the Log to record that batches
// up to offset (exclusive) are reflected, e.g. after appending batches that
// carry no producer state or after the log start moved forward.
func (m *Manager) UpdateMapEndOffset(offset int64) { m.mapEnd = offset }

// RemoveExpiredProducers forgets producers whose last timestamp is at least
// producer.id.expiration.ms older than now and that have no ongoing
// transaction; their retries can no longer be recognised.
func (m *Manager) RemoveExpiredProducers(now time.Time) {
	nowMs := now.UnixMilli()
	for pid, e := range m.producers {
		if m.expired(e, nowMs) {
			delete(m.producers, pid)
		}
	}
}

// expired is Kafka's isProducerExpired.
func (m *Manager) expired(e *Entry, nowMs int64) bool {
	return e.CurrentTxnFirstOffset < 0 && nowMs-e.LastTimestamp >= m.expiration.Milliseconds()
}

// ActiveProducers returns a copy of every producer entry, sorted by producer
// id (for DescribeProducers).
func (m *Manager) ActiveProducers() []Entry {
	out := make([]Entry, 0, len(m.producers))
	for _, e := range m.producers {
		out = append(out, *e.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// Producer returns a copy of one producer's entry.
func (m *Manager) Producer(pid int64) (Entry, bool) {
	e, ok := m.producers[pid]
	if !ok {
		return Entry{}, false
	}
	return *e.clone(), true
}

// clearState forgets every producer and transaction (not the snapshots).
func (m *Manager) clearState() {
	clear(m.producers)
	clear(m.ongoing)
	m.unreplicated = nil
}

// loadEntry installs an entry read from a snapshot, keeping the ongoing index.
func (m *Manager) loadEntry(e *Entry) {
	m.producers[e.ProducerID] = e
	if e.CurrentTxnFirstOffset >= 0 {
		m.ongoing[e.ProducerID] = e.CurrentTxnFirstOffset
	} else {
		delete(m.ongoing, e.ProducerID)
	}
}
