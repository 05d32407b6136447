package storage

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// ManagerConfig configures a Manager. Zero durations and counts take Kafka's
// defaults (see withDefaults).
type ManagerConfig struct {
	// Dirs are the log directories (log.dirs).
	Dirs []string
	// Defaults is the log config of partitions created without one.
	Defaults LogConfig
	// RecoveryThreadsPerDir is num.recovery.threads.per.data.dir.
	RecoveryThreadsPerDir int

	FlushSchedulerIntervalMs             int64 // log.flush.scheduler.interval.ms
	FlushCheckpointIntervalMs            int64 // log.flush.offset.checkpoint.interval.ms
	FlushStartOffsetCheckpointIntervalMs int64 // log.flush.start.offset.checkpoint.interval.ms
	RetentionCheckIntervalMs             int64 // log.retention.check.interval.ms
	ProducerIDExpirationMs               int64 // producer.id.expiration.ms
	ProducerIDExpirationCheckIntervalMs  int64 // producer.id.expiration.check.interval.ms
	// HighWatermarkCheckpointIntervalMs is
	// replica.high.watermark.checkpoint.interval.ms.
	HighWatermarkCheckpointIntervalMs int64

	// ClusterID and NodeID are written to meta.properties of new
	// directories; a directory of another cluster or node is refused.
	ClusterID string
	NodeID    int32

	// MaxDecompressedBytes bounds leader-side batch validation (0: the
	// record package default).
	MaxDecompressedBytes int

	// Cleaner configures log compaction (log.cleaner.*); see cleaner_manager.go.
	Cleaner CleanerConfig

	Now    func() time.Time
	Logger *slog.Logger
}

func (c ManagerConfig) withDefaults() ManagerConfig {
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	if c.RecoveryThreadsPerDir <= 0 {
		c.RecoveryThreadsPerDir = 2
	}
	def(&c.FlushSchedulerIntervalMs, math.MaxInt64)
	def(&c.FlushCheckpointIntervalMs, 60_000)
	def(&c.FlushStartOffsetCheckpointIntervalMs, 60_000)
	def(&c.RetentionCheckIntervalMs, 300_000)
	def(&c.ProducerIDExpirationMs, 86_400_000)
	def(&c.ProducerIDExpirationCheckIntervalMs, 600_000)
	def(&c.HighWatermarkCheckpointIntervalMs, 5_000)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// logDir is one locked log directory.
type logDir struct {
	path             string
	lock             *os.File
	meta             MetaProperties
	hadCleanShutdown bool
	prevBrokerEpoch  int64
}

// Manager owns the log directories of a node (Kafka's LogManager): it locks
// them, loads every partition at start-up (in parallel), creates and deletes
// partitions, runs the background flush, checkpoint, retention and producer
// expiry tasks, and writes the per-directory checkpoint files,
// meta.properties and the clean-shutdown marker.
type Manager struct {
	cfg    ManagerConfig
	logger *slog.Logger
	dirs   []*logDir

	mu      sync.Mutex
	logs    map[TopicPartition]*Log
	logDir  map[TopicPartition]*logDir
	deletes []pendingDelete // guarded by mu
	started bool
	stopped bool

	brokerEpoch atomic.Int64
	cleaning    cleanerState // the cleaner threads' bookkeeping (cleaner_manager.go)
	flushes     flushMetric  // metrics.go
	stop        chan struct{}
	wake        chan struct{}
	wg          sync.WaitGroup
}

// pendingDelete is a renamed partition directory waiting for
// file.delete.delay.ms before removal.
type pendingDelete struct {
	path string
	due  time.Time
}

// NewManager locks each directory (flock on .lock), checks or writes its
// meta.properties, reads its checkpoints and clean-shutdown marker, and
// loads every partition in it with RecoveryThreadsPerDir goroutines.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Dirs) == 0 {
		return nil, errors.New("storage manager: no log directories")
	}
	if err := cfg.Defaults.Validate(); err != nil {
		return nil, fmt.Errorf("storage manager: default log config: %w", err)
	}
	m := &Manager{
		cfg:     cfg,
		logger:  cfg.Logger,
		logs:    make(map[TopicPartition]*Log),
		flushes: newFlushMetric(),
		logDir:  make(map[TopicPartition]*logDir),
		stop:    make(chan struct{}),
		wake:    make(chan struct{}, 1),
	}
	m.brokerEpoch.Store(-1)
	for _, path := range cfg.Dirs {
		d, err := m.openDir(path)
		if err != nil {
			m.unlockAll()
			return nil, err
		}
		m.dirs = append(m.dirs, d)
	}
	for _, d := range m.dirs {
		if err := m.loadDir(d); err != nil {
			m.closeLogsQuietly()
			m.unlockAll()
			return nil, err
		}
	}
	m.loadCleanerCheckpoints()
	return m, nil
}

// openDir creates, locks and identifies one log directory.
func (m *Manager) openDir(path string) (*logDir, error) {
	path = filepath.Clean(path)
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("log dir %s: %w", path, err)
	}
	lock, err := lockDir(path)
	if err != nil {
		return nil, err
	}
	d := &logDir{path: path, lock: lock}
	mp, err := ReadMetaProperties(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		mp = MetaProperties{Version: 1, ClusterID: m.cfg.ClusterID, NodeID: m.cfg.NodeID, DirectoryID: NewDirectoryID()}
		if mp.ClusterID == "" {
			unlockDir(lock)
			return nil, fmt.Errorf("log dir %s has no meta.properties and no cluster id is configured", path)
		}
		if err := WriteMetaProperties(path, mp); err != nil {
			unlockDir(lock)
			return nil, fmt.Errorf("log dir %s: %w", path, err)
		}
	case err != nil:
		unlockDir(lock)
		return nil, fmt.Errorf("log dir %s: %w", path, err)
	default:
		if m.cfg.ClusterID != "" && mp.ClusterID != m.cfg.ClusterID {
			unlockDir(lock)
			return nil, fmt.Errorf("log dir %s belongs to cluster %q, not %q", path, mp.ClusterID, m.cfg.ClusterID)
		}
		if mp.NodeID != m.cfg.NodeID {
			unlockDir(lock)
			return nil, fmt.Errorf("log dir %s belongs to node %d, not %d", path, mp.NodeID, m.cfg.NodeID)
		}
	}
	d.meta = mp
	if d.hadCleanShutdown, d.prevBrokerEpoch, err = readCleanShutdownMarker(path); err != nil {
		unlockDir(lock)
		return nil, fmt.Errorf("log dir %s: %w", path, err)
	}
	// A crash while loading must count as unclean next time.
	if err := removeCleanShutdownMarker(path); err != nil {
		unlockDir(lock)
		return nil, fmt.Errorf("log dir %s: %w", path, err)
	}
	return d, nil
}

// loadDir opens every partition directory of d.
func (m *Manager) loadDir(d *logDir) error {
	rps, err := ReadOffsetCheckpoint(filepath.Join(d.path, RecoveryPointCheckpointFileName))
	if err != nil {
		m.logger.Warn("ignoring unreadable recovery point checkpoint; recovering every log", "dir", d.path, "error", err)
		rps = nil
	}
	starts, err := ReadOffsetCheckpoint(filepath.Join(d.path, LogStartOffsetCheckpointFileName))
	if err != nil {
		m.logger.Warn("ignoring unreadable log start offset checkpoint", "dir", d.path, "error", err)
		starts = nil
	}
	hws, err := ReadOffsetCheckpoint(filepath.Join(d.path, ReplicationOffsetCheckpointFileName))
	if err != nil {
		m.logger.Warn("ignoring unreadable high watermark checkpoint", "dir", d.path, "error", err)
		hws = nil
	}
	des, err := os.ReadDir(d.path)
	if err != nil {
		return err
	}
	type job struct {
		tp   TopicPartition
		path string
	}
	var jobs []job
	for _, de := range des {
		if !de.IsDir() {
			continue
		}
		name := de.Name()
		if _, ok := ParseDeletedDir(name); ok {
			m.scheduleDelete(filepath.Join(d.path, name), 0)
			continue
		}
		tp, err := ParseTopicPartitionDir(name)
		if err != nil {
			m.logger.Info("skipping directory that is not a partition", "dir", d.path, "name", name)
			continue
		}
		if tp.Topic == MetadataTopic {
			continue // the quorum's
		}
		jobs = append(jobs, job{tp, filepath.Join(d.path, name)})
	}
	work := make(chan job)
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstErr error
	for range m.cfg.RecoveryThreadsPerDir {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				rp, ok := rps[j.tp]
				if !ok {
					rp = 0
				}
				l, err := Open(j.path, j.tp, m.cfg.Defaults, Options{
					Now:                  m.cfg.Now,
					Logger:               m.logger,
					RecoveryPoint:        rp,
					LogStartOffset:       starts[j.tp],
					HighWatermark:        hws[j.tp],
					HadCleanShutdown:     d.hadCleanShutdown,
					ProducerIDExpiration: time.Duration(m.cfg.ProducerIDExpirationMs) * time.Millisecond,
					MaxDecompressedBytes: m.cfg.MaxDecompressedBytes,
					OnTruncate:           m.cleanerTruncationHook(j.tp, d),
					OnFlush:              m.flushes.observe,
				})
				errMu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
					continue
				}
				errMu.Unlock()
				m.mu.Lock()
				if _, dup := m.logs[j.tp]; dup {
					m.mu.Unlock()
					l.Close()
					errMu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("partition %s is in two log dirs", j.tp)
					}
					errMu.Unlock()
					continue
				}
				m.logs[j.tp], m.logDir[j.tp] = l, d
				m.mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	m.logger.Info("loaded log dir", "dir", d.path, "partitions", len(jobs), "clean_shutdown", d.hadCleanShutdown)
	return m.checkpointDir(d)
}

// PreviousBrokerEpoch returns the broker epoch recorded in the clean-shutdown
// markers found at start-up, or -1 if any directory had none (an unclean
// shutdown, KIP-966).
func (m *Manager) PreviousBrokerEpoch() int64 {
	epoch := int64(-1)
	for i, d := range m.dirs {
		if !d.hadCleanShutdown || (i > 0 && d.prevBrokerEpoch != epoch) {
			return -1
		}
		epoch = d.prevBrokerEpoch
	}
	return epoch
}

// SetBrokerEpoch records the broker epoch written into the clean-shutdown
// markers at Shutdown.
func (m *Manager) SetBrokerEpoch(epoch int64) { m.brokerEpoch.Store(epoch) }

// DirectoryIDs returns the directory id of each log dir, by path.
func (m *Manager) DirectoryIDs() map[string]string {
	out := make(map[string]string, len(m.dirs))
	for _, d := range m.dirs {
		out[d.path] = d.meta.DirectoryID
	}
	return out
}

// Log returns the log of tp.
func (m *Manager) Log(tp TopicPartition) (*Log, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.logs[tp]
	return l, ok
}

// Logs returns every log, sorted by topic and partition.
func (m *Manager) Logs() []*Log {
	m.mu.Lock()
	out := make([]*Log, 0, len(m.logs))
	for _, l := range m.logs {
		out = append(out, l)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].tp, out[j].tp
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return out
}

// GetOrCreateLog returns the log of tp, creating it (in the directory with
// the fewest partitions) with cfg if it does not exist. A non-zero topicID
// is recorded in partition.metadata; an existing log with another topic id
// is an error (the directory belongs to a deleted topic of the same name).
func (m *Manager) GetOrCreateLog(tp TopicPartition, topicID [16]byte, cfg LogConfig) (*Log, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return nil, fmt.Errorf("create log %s: %w", tp, ErrClosed)
	}
	if l, ok := m.logs[tp]; ok {
		if topicID != ([16]byte{}) {
			if id, ok := l.TopicID(); ok && id != topicID {
				return nil, fmt.Errorf("log %s has topic id %s, not %s", tp, FormatUUID(id), FormatUUID(topicID))
			}
			if err := l.SetTopicID(topicID); err != nil {
				return nil, err
			}
		}
		return l, nil
	}
	counts := make(map[*logDir]int)
	for _, d := range m.logDir {
		counts[d]++
	}
	best := m.dirs[0]
	for _, d := range m.dirs[1:] {
		if counts[d] < counts[best] {
			best = d
		}
	}
	l, err := Open(filepath.Join(best.path, tp.String()), tp, cfg, Options{
		Now:                  m.cfg.Now,
		Logger:               m.logger,
		HadCleanShutdown:     true, // a new, empty log
		ProducerIDExpiration: time.Duration(m.cfg.ProducerIDExpirationMs) * time.Millisecond,
		MaxDecompressedBytes: m.cfg.MaxDecompressedBytes,
		OnTruncate:           m.cleanerTruncationHook(tp, best),
		OnFlush:              m.flushes.observe,
	})
	if err != nil {
		return nil, err
	}
	m.forgetCleanerCheckpoint(tp) // a stale entry of an earlier log of tp
	if topicID != ([16]byte{}) {
		if err := l.SetTopicID(topicID); err != nil {
			l.Close()
			return nil, err
		}
	}
	m.logs[tp], m.logDir[tp] = l, best
	m.logger.Info("created log", "topic", tp.Topic, "partition", tp.Partition, "dir", best.path)
	return l, nil
}

// UpdateConfig changes the config of tp's log, if it exists.
func (m *Manager) UpdateConfig(tp TopicPartition, cfg LogConfig) {
	if l, ok := m.Log(tp); ok {
		l.UpdateConfig(cfg)
	}
}

// AsyncDelete removes tp's log from service: the log is closed for writes,
// its directory renamed to <topic>-<partition>.<uuid>-delete at once, and
// removed after file.delete.delay.ms (at once if that is 0). Read results
// still holding its segments stay valid until released.
func (m *Manager) AsyncDelete(tp TopicPartition) error {
	m.mu.Lock()
	l, ok := m.logs[tp]
	d := m.logDir[tp]
	if ok {
		delete(m.logs, tp)
		delete(m.logDir, tp)
	}
	m.mu.Unlock()
	if !ok {
		return fmt.Errorf("delete log %s: no such log", tp)
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	newDir := filepath.Join(d.path, tp.String()+"."+hex.EncodeToString(id[:])+DeleteDirSuffix)
	if err := l.closeAndRenameDir(newDir); err != nil {
		return fmt.Errorf("delete log %s: %w", tp, err)
	}
	m.logger.Info("scheduled log for deletion", "topic", tp.Topic, "partition", tp.Partition, "dir", newDir)
	if err := m.checkpointDir(d); err != nil {
		m.logger.Warn("checkpoint after delete", "error", err)
	}
	m.forgetCleanerCheckpoint(tp)
	m.scheduleDelete(newDir, time.Duration(l.Config().FileDeleteDelayMs)*time.Millisecond)
	return nil
}

// scheduleDelete queues a renamed directory for removal after delay.
func (m *Manager) scheduleDelete(path string, delay time.Duration) {
	if delay <= 0 {
		if err := os.RemoveAll(path); err != nil {
			m.logger.Warn("removing deleted log dir", "dir", path, "error", err)
		}
		return
	}
	m.mu.Lock()
	m.deletes = append(m.deletes, pendingDelete{path: path, due: m.cfg.Now().Add(delay)})
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// runDueDeletes removes the queued directories that are due (all with
// force) and returns when the next is due.
func (m *Manager) runDueDeletes(force bool) (next time.Time, any bool) {
	now := m.cfg.Now()
	m.mu.Lock()
	var due []string
	rest := m.deletes[:0]
	for _, p := range m.deletes {
		if force || !now.Before(p.due) {
			due = append(due, p.path)
			continue
		}
		rest = append(rest, p)
		if !any || p.due.Before(next) {
			next, any = p.due, true
		}
	}
	m.deletes = rest
	m.mu.Unlock()
	for _, p := range due {
		if err := os.RemoveAll(p); err != nil {
			m.logger.Warn("removing deleted log dir", "dir", p, "error", err)
		}
	}
	return next, any
}

// CheckpointAll writes, in every directory, the recovery points, log start
// offsets and high watermarks of its logs.
func (m *Manager) CheckpointAll() error {
	var errs []error
	for _, d := range m.dirs {
		errs = append(errs, m.checkpointDir(d))
	}
	return errors.Join(errs...)
}

func (m *Manager) logsIn(d *logDir) []*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*Log
	for tp, ld := range m.logDir {
		if ld == d {
			out = append(out, m.logs[tp])
		}
	}
	return out
}

func (m *Manager) checkpointDir(d *logDir) error {
	return errors.Join(
		m.writeCheckpoint(d, RecoveryPointCheckpointFileName, (*Log).RecoveryPoint),
		m.writeCheckpoint(d, LogStartOffsetCheckpointFileName, (*Log).LogStartOffset),
		m.writeCheckpoint(d, ReplicationOffsetCheckpointFileName, (*Log).HighWatermark),
	)
}

func (m *Manager) writeCheckpoint(d *logDir, name string, get func(*Log) int64) error {
	offsets := make(map[TopicPartition]int64)
	for _, l := range m.logsIn(d) {
		offsets[l.tp] = get(l)
	}
	return WriteOffsetCheckpoint(filepath.Join(d.path, name), offsets)
}

// Shutdown stops the background tasks, closes every log cleanly (flush,
// producer snapshot), writes the checkpoints and the clean-shutdown markers,
// and unlocks the directories.
func (m *Manager) Shutdown() error {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return nil
	}
	m.stopped = true
	started := m.started
	m.mu.Unlock()
	if started {
		close(m.stop)
		m.wg.Wait()
	}
	var errs []error
	for _, d := range m.dirs {
		logs := m.logsIn(d)
		var dirErr error
		for _, l := range logs {
			if err := l.Close(); err != nil {
				dirErr = errors.Join(dirErr, err)
			}
		}
		if err := m.checkpointDir(d); err != nil {
			dirErr = errors.Join(dirErr, err)
		}
		if dirErr == nil {
			dirErr = writeCleanShutdownMarker(d.path, m.brokerEpoch.Load())
		}
		errs = append(errs, dirErr)
	}
	m.runDueDeletes(true)
	m.unlockAll()
	return errors.Join(errs...)
}

func (m *Manager) closeLogsQuietly() {
	for _, l := range m.Logs() {
		_ = l.Close()
	}
}

func (m *Manager) unlockAll() {
	for _, d := range m.dirs {
		if d.lock != nil {
			if err := unlockDir(d.lock); err != nil {
				m.logger.Warn("unlocking log dir", "dir", d.path, "error", err)
			}
			d.lock = nil
		}
	}
}
