package storage

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"
)

// Flush makes every batch up to the log end offset durable (fsync of the
// segments, their indexes and the directory) and advances the recovery
// point. It does not block appends or reads while it syncs.
func (l *Log) Flush() error {
	return l.flushTo(l.LogEndOffset())
}

// flushTo syncs the segments holding offsets in [recoveryPoint, target) and
// then advances the recovery point to target, unless a truncation happened
// meanwhile (the bytes synced may no longer be the log's).
func (l *Log) flushTo(target int64) error {
	l.mu.Lock()
	rp := l.recoveryPoint.Load()
	if target <= rp {
		l.mu.Unlock()
		return nil
	}
	gen := l.truncGen
	segs := l.segments()
	type flushJob struct {
		s      *segment
		wholly bool // the segment ends at or below target
	}
	var todo []flushJob
	for i, s := range segs {
		nextBase := int64(math.MaxInt64)
		if i+1 < len(segs) {
			nextBase = segs[i+1].base
		}
		if nextBase <= rp {
			continue
		}
		if s.base >= target {
			break
		}
		if s.tryAcquire() {
			todo = append(todo, flushJob{s, nextBase <= target})
		}
	}
	dirty := l.dirDirty.Swap(false)
	dir := l.Dir()
	l.mu.Unlock()
	start := time.Now()

	var err error
	for _, j := range todo {
		if err == nil {
			// A segment's indexes must be durable once the recovery point
			// passes its end (recovery trusts them); the segment holding the
			// recovery point is always recovered, indexes rebuilt, so syncing
			// only its data is enough, which keeps flush.messages=1 cheap.
			if j.wholly {
				err = j.s.flush()
			} else {
				err = j.s.flushData()
			}
		}
		j.s.release()
	}
	if dirty && err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		if dirty {
			l.dirDirty.Store(true)
		}
		return fmt.Errorf("flush %s: %w", l.tp, err)
	}
	l.mu.Lock()
	if l.truncGen == gen && target > l.recoveryPoint.Load() {
		l.recoveryPoint.Store(min(target, l.LogEndOffset()))
	}
	l.lastFlushMs.Store(l.now().UnixMilli())
	l.mu.Unlock()
	if l.opts.OnFlush != nil && (len(todo) > 0 || dirty) {
		l.opts.OnFlush(time.Since(start))
	}
	return nil
}

// TimeSinceLastFlushMs returns how many milliseconds ago the log was last flushed, for the
// flush.ms scheduler.
func (l *Log) TimeSinceLastFlushMs() int64 {
	return l.now().UnixMilli() - l.lastFlushMs.Load()
}

// Close closes the log cleanly: it waits for background flushes, seals the
// active segment (final time index entry, indexes trimmed), takes a producer
// snapshot at the log end (so the next open need not replay), syncs
// everything and releases the files (a read result still holding a segment
// keeps it open until released). Pending deletions of removed segments are
// carried out.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	l.bg.Wait()

	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	l.mu.Lock()
	failed := l.failed
	active := l.active()
	if failed == nil {
		keep(active.seal())
		keep(l.psm.TakeSnapshot())
	}
	l.mu.Unlock()
	if failed == nil {
		keep(l.flushTo(l.LogEndOffset()))
		keep(active.flush())
		keep(syncDir(l.Dir()))
	}
	l.mu.Lock()
	for _, s := range l.segments() {
		s.release()
	}
	l.mu.Unlock()
	l.runPendingUnlinks()
	if firstErr != nil {
		return fmt.Errorf("close %s: %w", l.tp, firstErr)
	}
	return nil
}

// Delete closes the log without flushing and removes its directory.
func (l *Log) Delete() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.bg.Wait()
	l.mu.Lock()
	for _, s := range l.segments() {
		s.deleted.Store(true)
		s.release()
	}
	l.runPendingUnlinks()
	dir := l.Dir()
	l.mu.Unlock()
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("delete %s: %w", l.tp, err)
	}
	return nil
}

// closeAndRenameDir closes the log for writes and moves its directory to
// newDir (for deletion); files are released as readers finish with them.
func (l *Log) closeAndRenameDir(newDir string) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return fmt.Errorf("%s: %w", l.tp, ErrClosed)
	}
	l.closed = true
	l.mu.Unlock()
	l.bg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.Dir()
	if err := os.Rename(old, newDir); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(newDir)); err != nil {
		l.logger.Warn("sync parent of renamed log dir", "error", err)
	}
	l.dir.Store(&newDir)
	l.psm.UpdateDir(newDir)
	for _, s := range l.segments() {
		s.deleted.Store(true)
		s.release()
	}
	// Pending unlinks name files under the old path: the directory removal
	// takes them.
	l.delMu.Lock()
	for t := range l.pending {
		t.Stop()
	}
	l.pending = nil
	l.delMu.Unlock()
	return nil
}
