package producerstate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SnapshotSuffix is the file name suffix of producer snapshots; the file name
// is the 20-digit MapEndOffset the snapshot was taken at (Kafka's naming).
const SnapshotSuffix = ".snapshot"

// snapshotTmpSuffix marks a snapshot being written; such files are removed
// at start-up because the rename that publishes a snapshot never happened.
const snapshotTmpSuffix = SnapshotSuffix + ".tmp"

// SnapshotFileName returns the file name of the snapshot taken at offset.
func SnapshotFileName(offset int64) string {
	return fmt.Sprintf("%020d%s", offset, SnapshotSuffix)
}

// parseSnapshotName returns the offset a snapshot file name stands for.
func parseSnapshotName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, SnapshotSuffix)
	if !ok || digits == "" {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	return off, err == nil
}

func (m *Manager) snapshotPath(offset int64) string {
	return filepath.Join(m.dir, SnapshotFileName(offset))
}

// loadSnapshotList lists the snapshot files in the directory.
func (m *Manager) loadSnapshotList() error {
	m.snapshots = m.snapshots[:0]
	des, err := os.ReadDir(m.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list producer snapshots in %s: %w", m.dir, err)
	}
	for _, de := range des {
		name := de.Name()
		if strings.HasSuffix(name, snapshotTmpSuffix) {
			if err := os.Remove(filepath.Join(m.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove unfinished producer snapshot: %w", err)
			}
			m.log.Info("removed unfinished producer snapshot", "file", name)
			continue
		}
		if !de.Type().IsRegular() {
			continue
		}
		if off, ok := parseSnapshotName(name); ok {
			m.snapshots = append(m.snapshots, off)
		}
	}
	slices.Sort(m.snapshots)
	return nil
}

// LatestSnapshotOffset returns the offset of the newest snapshot file.
func (m *Manager) LatestSnapshotOffset() (int64, bool) {
	if len(m.snapshots) == 0 {
		return 0, false
	}
	return m.snapshots[len(m.snapshots)-1], true
}

// OldestSnapshotOffset returns the offset of the oldest snapshot file.
func (m *Manager) OldestSnapshotOffset() (int64, bool) {
	if len(m.snapshots) == 0 {
		return 0, false
	}
	return m.snapshots[0], true
}

// TakeSnapshot writes the state to a snapshot file named by MapEndOffset,
// atomically (temporary file, fsync, rename, directory fsync), so a crash
// leaves either no snapshot or a complete one. It is a no-op if a snapshot
// already exists at MapEndOffset.
func (m *Manager) TakeSnapshot() error {
	off := m.mapEnd
	if _, found := slices.BinarySearch(m.snapshots, off); found {
		return nil
	}
	path := m.snapshotPath(off)
	if err := writeFileAtomic(path, encodeSnapshot(m.producers)); err != nil {
		return fmt.Errorf("write producer snapshot %s: %w", path, err)
	}
	i, _ := slices.BinarySearch(m.snapshots, off)
	m.snapshots = slices.Insert(m.snapshots, i, off)
	m.log.Debug("wrote producer snapshot", "file", filepath.Base(path), "producers", len(m.producers))
	return nil
}

// writeFileAtomic publishes data at path through a temporary file.
func writeFileAtomic(path string, data []byte) error {
	tmp := strings.TrimSuffix(path, SnapshotSuffix) + snapshotTmpSuffix
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return werr
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeSnapshot deletes the snapshot at offset and forgets it.
func (m *Manager) removeSnapshot(offset int64) error {
	if i, found := slices.BinarySearch(m.snapshots, offset); found {
		m.snapshots = slices.Delete(m.snapshots, i, i+1)
	}
	if err := os.Remove(m.snapshotPath(offset)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete producer snapshot: %w", err)
	}
	return nil
}

// DeleteSnapshotsBefore deletes the snapshot files taken at offsets below
// offset (e.g. those of segments removed by retention).
func (m *Manager) DeleteSnapshotsBefore(offset int64) error {
	for len(m.snapshots) > 0 && m.snapshots[0] < offset {
		if err := m.removeSnapshot(m.snapshots[0]); err != nil {
			return err
		}
	}
	return nil
}

// TruncateAndReload drops snapshots outside [logStart, logEnd], resets the
// state, and loads the latest remaining snapshot (a corrupt one is deleted
// with a log line and the next older is tried). Loaded producers that have
// expired are skipped. Without a usable snapshot the state is empty and
// MapEndOffset = logStart. The caller then replays the log from MapEndOffset
// to logEnd with NewAppend(OriginReplication).
func (m *Manager) TruncateAndReload(logStart, logEnd int64) error {
	for _, off := range slices.Clone(m.snapshots) {
		if off < logStart || off > logEnd {
			if err := m.removeSnapshot(off); err != nil {
				return err
			}
		}
	}
	m.clearState()
	nowMs := m.now().UnixMilli()
	for len(m.snapshots) > 0 {
		off := m.snapshots[len(m.snapshots)-1]
		path := m.snapshotPath(off)
		data, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("read producer snapshot %s: %w", path, err)
		}
		var entries []*Entry
		if err == nil {
			entries, err = decodeSnapshot(data)
		}
		if err != nil {
			m.log.Warn("producer snapshot is unusable; deleting it and trying an older one",
				"file", filepath.Base(path), "error", err)
			if rerr := m.removeSnapshot(off); rerr != nil {
				return rerr
			}
			continue
		}
		for _, e := range entries {
			if !m.expired(e, nowMs) {
				m.loadEntry(e)
			}
		}
		m.mapEnd = off
		m.log.Info("loaded producer snapshot", "file", filepath.Base(path), "producers", len(m.producers))
		return nil
	}
	m.mapEnd = logStart
	return nil
}

// TruncateFullyAndStartAt forgets everything (state and snapshots) and sets
// MapEndOffset = offset, for a log that restarts empty at offset.
func (m *Manager) TruncateFullyAndStartAt(offset int64) error {
	m.clearState()
	for len(m.snapshots) > 0 {
		if err := m.removeSnapshot(m.snapshots[0]); err != nil {
			return err
		}
	}
	m.mapEnd = offset
	return nil
}

// UpdateDir points the manager at a renamed partition directory (the Log
// renames it on deletion or future-replica promotion); the files moved with
// the directory, so only the path changes.
func (m *Manager) UpdateDir(dir string) {
	m.dir = dir
}
