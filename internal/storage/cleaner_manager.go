package storage

import (
	"errors"
	"path/filepath"
	"sync"
	"time"
)

// CleanerOffsetCheckpointFileName is the per-log-directory file holding,
// per compacted partition, the first offset the cleaner has not cleaned yet
// (same layout as the other offset checkpoints).
const CleanerOffsetCheckpointFileName = "cleaner-offset-checkpoint"

// CleanerConfig configures log compaction (Kafka's log.cleaner.* broker
// settings). Zero values take Kafka's defaults.
type CleanerConfig struct {
	// Disabled turns the cleaner off (log.cleaner.enable=false, or
	// log.cleaner.threads=0). Compacted topics then grow without bound.
	Disabled bool
	// Threads is log.cleaner.threads (default 1).
	Threads int
	// DedupeBufferSize is log.cleaner.dedupe.buffer.size, the memory of the
	// offset maps of all threads together (default 128 MiB). A map is
	// allocated on a thread's first cleaning and sized to what the logs
	// need, up to its share.
	DedupeBufferSize int64
	// LoadFactor is log.cleaner.io.buffer.load.factor, how full an offset
	// map may get (default 0.9).
	LoadFactor float64
	// BackoffMs is log.cleaner.backoff.ms, the pause of a thread that found
	// nothing to clean (default 15 s).
	BackoffMs int64
}

func (c CleanerConfig) withDefaults() CleanerConfig {
	if c.Threads <= 0 {
		c.Threads = 1
	}
	if c.DedupeBufferSize <= 0 {
		c.DedupeBufferSize = 128 << 20
	}
	if c.LoadFactor <= 0 || c.LoadFactor > 1 {
		c.LoadFactor = 0.9
	}
	if c.BackoffMs <= 0 {
		c.BackoffMs = 15_000
	}
	return c
}

// cleanerState is the Manager's bookkeeping for the cleaner threads (Kafka's
// LogCleanerManager).
//
// Invariants: checkpoints hold, per partition, an offset below which the
// log is clean — lowered by every truncation before anything can be appended
// again (the truncation hook runs under the log's lock); gen[tp] counts the
// truncations and deletions of tp, and a pass that started before one of
// them does not move the checkpoint (its result may describe records that
// are gone); a partition is inProgress for at most one thread; the
// cleaner-offset-checkpoint file of a directory is rewritten after every
// change of one of its partitions' checkpoints.
type cleanerState struct {
	mu          sync.Mutex
	checkpoints map[TopicPartition]int64
	dirOf       map[TopicPartition]*logDir
	gen         map[TopicPartition]uint64
	inProgress  map[TopicPartition]bool
	uncleanable map[TopicPartition]bool // failed with an unexpected error; skipped until restart
}

func (c *cleanerState) initLocked() {
	if c.checkpoints == nil {
		c.checkpoints = make(map[TopicPartition]int64)
		c.dirOf = make(map[TopicPartition]*logDir)
		c.gen = make(map[TopicPartition]uint64)
		c.inProgress = make(map[TopicPartition]bool)
		c.uncleanable = make(map[TopicPartition]bool)
	}
}

// loadCleanerCheckpoints reads every directory's cleaner-offset-checkpoint
// (an unreadable one is ignored: the logs are then cleaned from their start,
// which is always safe).
func (m *Manager) loadCleanerCheckpoints() {
	for _, d := range m.dirs {
		cps, err := ReadOffsetCheckpoint(filepath.Join(d.path, CleanerOffsetCheckpointFileName))
		if err != nil {
			m.logger.Warn("ignoring unreadable cleaner checkpoint; compacted logs are cleaned from their start", "dir", d.path, "error", err)
			continue
		}
		logs := m.logsIn(d) // before c.mu: the lock order is m.mu, then c.mu
		c := &m.cleaning
		c.mu.Lock()
		c.initLocked()
		for _, l := range logs {
			if cp, ok := cps[l.tp]; ok {
				c.checkpoints[l.tp] = cp
				c.dirOf[l.tp] = d
			}
		}
		c.mu.Unlock()
	}
}

// writeCleanerCheckpointLocked rewrites d's cleaner-offset-checkpoint.
// Caller holds m.cleaning.mu.
func (m *Manager) writeCleanerCheckpointLocked(d *logDir) {
	c := &m.cleaning
	cps := make(map[TopicPartition]int64)
	for tp, cp := range c.checkpoints {
		if c.dirOf[tp] == d {
			cps[tp] = cp
		}
	}
	if err := WriteOffsetCheckpoint(filepath.Join(d.path, CleanerOffsetCheckpointFileName), cps); err != nil {
		m.logger.Warn("writing cleaner checkpoint", "dir", d.path, "error", err)
	}
}

// cleanerTruncationHook returns the Options.OnTruncate of tp's log in d: it
// moves tp's cleaner checkpoint back to the new log end and writes it at
// once, so that a crash right after the truncation cannot leave a checkpoint
// above records appended later (they would never be mapped, and a tombstone
// among them could be dropped while older values of its key stay).
func (m *Manager) cleanerTruncationHook(tp TopicPartition, d *logDir) func(int64) {
	return func(newEnd int64) {
		c := &m.cleaning
		c.mu.Lock()
		defer c.mu.Unlock()
		c.initLocked()
		c.gen[tp]++
		if cp, ok := c.checkpoints[tp]; ok && cp > newEnd {
			c.checkpoints[tp] = newEnd
			c.dirOf[tp] = d
			m.writeCleanerCheckpointLocked(d)
		}
	}
}

// forgetCleanerCheckpoint drops tp's cleaner state (its log was deleted, or
// is created anew).
func (m *Manager) forgetCleanerCheckpoint(tp TopicPartition) {
	c := &m.cleaning
	c.mu.Lock()
	defer c.mu.Unlock()
	c.initLocked()
	c.gen[tp]++
	delete(c.uncleanable, tp)
	d, ok := c.dirOf[tp]
	delete(c.dirOf, tp)
	if _, had := c.checkpoints[tp]; had {
		delete(c.checkpoints, tp)
		if ok {
			m.writeCleanerCheckpointLocked(d)
		}
	}
}

// CleanerCheckpoint returns the first offset the cleaner has not cleaned in
// tp's log, if it has cleaned it.
func (m *Manager) CleanerCheckpoint(tp TopicPartition) (int64, bool) {
	c := &m.cleaning
	c.mu.Lock()
	defer c.mu.Unlock()
	cp, ok := c.checkpoints[tp]
	return cp, ok
}

// startCleaners launches the cleaner threads, stopped by Shutdown.
func (m *Manager) startCleaners() {
	cc := m.cfg.Cleaner.withDefaults()
	if m.cfg.Cleaner.Disabled {
		return
	}
	memory := cc.DedupeBufferSize / int64(cc.Threads)
	for i := range cc.Threads {
		m.wg.Add(1)
		go m.runCleaner(newCleaner(memory, cc.LoadFactor, m.stop, m.logger.With("cleaner", i)),
			time.Duration(cc.BackoffMs)*time.Millisecond)
	}
}

// runCleaner is one cleaner thread (Kafka's CleanerThread): it cleans the
// dirtiest log, at once at start and again at once while there was one,
// else after backoff.
func (m *Manager) runCleaner(c *cleaner, backoff time.Duration) {
	defer m.wg.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-timer.C:
		}
		wait := backoff
		if m.cleanFilthiestLog(c) {
			wait = 0
		}
		timer.Reset(wait)
	}
}

// cleanFilthiestLog cleans the dirtiest log that needs it, if any, and
// reports whether a pass made progress.
func (m *Manager) cleanFilthiestLog(c *cleaner) bool {
	now := m.cfg.Now()
	l, cp, gen, ok := m.grabFilthiestLog(now.UnixMilli())
	if !ok {
		return false
	}
	defer m.doneCleaning(l.tp)
	start := time.Now()
	newCp, st, err := c.clean(l, cp, now)
	log := m.logger.With("topic", l.tp.Topic, "partition", l.tp.Partition)
	switch {
	case err == nil:
	case errors.Is(err, errCleaningAborted), errors.Is(err, ErrClosed):
		log.Info("log cleaning abandoned; it will be redone", "reason", err)
		return false
	default:
		log.Error("log cleaning failed; the partition is not cleaned again until restart", "error", err)
		m.cleaning.mu.Lock()
		m.cleaning.uncleanable[l.tp] = true
		m.cleaning.mu.Unlock()
		return false
	}
	m.setCleanerCheckpoint(l, newCp, gen)
	if st.groups > 0 {
		log.Info("cleaned log",
			"first_dirty_offset", max(cp, l.LogStartOffset()), "cleaned_to", newCp,
			"segments", st.segments, "bytes_read", st.bytesRead, "bytes_kept", st.bytesKept,
			"records_read", st.recordsRead, "records_kept", st.recordsKept,
			"map_records", st.mapRecords, "map_utilization", st.mapUtilization,
			"duration", time.Since(start))
	}
	return newCp > cp
}

// grabFilthiestLog picks the compacted log with the highest dirty ratio
// among those above their min.cleanable.dirty.ratio or holding a dirty
// record older than max.compaction.lag.ms (Kafka's
// grabFilthiestCompactedLog), marks it in progress, and returns it with its
// checkpoint (-1 if none) and the generation the pass must match to record
// its result.
func (m *Manager) grabFilthiestLog(nowMs int64) (l *Log, cp int64, gen uint64, ok bool) {
	type candidate struct {
		l     *Log
		cp    int64
		gen   uint64
		ratio float64
	}
	var best *candidate
	c := &m.cleaning
	for _, lg := range m.Logs() {
		cfg := lg.Config()
		if !cfg.CleanupPolicy.Compact {
			continue
		}
		c.mu.Lock()
		c.initLocked()
		skip := c.inProgress[lg.tp] || c.uncleanable[lg.tp]
		cp, has := c.checkpoints[lg.tp]
		g := c.gen[lg.tp]
		c.mu.Unlock()
		if skip {
			continue
		}
		if !has {
			cp = -1
		}
		o, err := lg.cleanOffsets(cp, nowMs)
		if err != nil {
			continue // closed or failed
		}
		if o.checkpointReset {
			// Expected when retention also applies (compact,delete) and
			// deleted the segments below the checkpoint; Kafka does not warn
			// then either.
			if !cfg.CleanupPolicy.Delete {
				m.logger.Warn("cleaner checkpoint outside the log; cleaning from the log start",
					"topic", lg.tp.Topic, "partition", lg.tp.Partition, "checkpoint", cp, "log_start_offset", o.firstDirty)
			}
			m.setCleanerCheckpoint(lg, o.firstDirty, g)
		}
		if o.cleanableBytes == 0 {
			continue
		}
		r := o.ratio()
		if !o.needNow && r <= cfg.MinCleanableDirtyRatio {
			continue
		}
		if best == nil || r > best.ratio {
			best = &candidate{l: lg, cp: cp, gen: g, ratio: r}
		}
	}
	if best == nil {
		return nil, 0, 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inProgress[best.l.tp] {
		return nil, 0, 0, false // another thread took it meanwhile
	}
	c.inProgress[best.l.tp] = true
	return best.l, best.cp, best.gen, true
}

func (m *Manager) doneCleaning(tp TopicPartition) {
	m.cleaning.mu.Lock()
	delete(m.cleaning.inProgress, tp)
	m.cleaning.mu.Unlock()
}

// setCleanerCheckpoint records cp for l's partition and writes its
// directory's file, unless the partition was truncated or deleted since gen
// was read, or l is no longer the partition's log.
func (m *Manager) setCleanerCheckpoint(l *Log, cp int64, gen uint64) {
	d := m.dirOfLog(l)
	c := &m.cleaning
	c.mu.Lock()
	defer c.mu.Unlock()
	c.initLocked()
	if d == nil || c.gen[l.tp] != gen {
		return
	}
	if old, ok := c.checkpoints[l.tp]; ok && old == cp {
		return
	}
	c.checkpoints[l.tp] = cp
	c.dirOf[l.tp] = d
	m.writeCleanerCheckpointLocked(d)
}

// dirOfLog returns the directory of l, nil if l is not (any more) the
// Manager's log of its partition.
func (m *Manager) dirOfLog(l *Log) *logDir {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.logs[l.tp] != l {
		return nil
	}
	return m.logDir[l.tp]
}
