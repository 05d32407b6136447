package storage

import (
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
)

// EpochEntry says that leader epoch Epoch wrote its first batch at
// StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// epochCache is the leader epoch cache of a partition, persisted in
// leader-epoch-checkpoint ("0\n<count>\n<epoch> <startOffset>\n..."). It
// follows Kafka's LeaderEpochFileCache rule by rule.
//
// Invariants: epochs and start offsets strictly increase; no entry starts
// beyond the log end offset (the Log truncates the cache with the log and
// assigns entries only for data it has written, or at its end offset).
//
// Concurrency: mutations run under the Log's lock; lookups (EndOffsetForEpoch
// serves OffsetForLeaderEpoch requests) may run concurrently, hence mu.
type epochCache struct {
	path string
	mu   sync.RWMutex
	ents []EpochEntry
}

func loadEpochCache(dir string) (*epochCache, error) {
	c := &epochCache{path: filepath.Join(dir, LeaderEpochCheckpointFileName)}
	lines, err := readCheckpointLines(c.path, 2)
	if err != nil {
		return nil, err
	}
	for _, f := range lines {
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 {
			return nil, fmt.Errorf("leader epoch checkpoint %s: malformed entry %v: %w", c.path, f, ErrCorruptCheckpoint)
		}
		c.ents = append(c.ents, EpochEntry{Epoch: int32(e), StartOffset: o})
	}
	for i := 1; i < len(c.ents); i++ {
		if c.ents[i].Epoch <= c.ents[i-1].Epoch || c.ents[i].StartOffset < c.ents[i-1].StartOffset {
			return nil, fmt.Errorf("leader epoch checkpoint %s: entries out of order: %w", c.path, ErrCorruptCheckpoint)
		}
	}
	return c, nil
}

// write persists the cache atomically. Caller holds mu (read or write).
func (c *epochCache) write() error {
	lines := make([]string, len(c.ents))
	for i, e := range c.ents {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	if err := writeFileAtomic(c.path, formatCheckpoint(lines)); err != nil {
		return fmt.Errorf("write leader epoch checkpoint: %w", err)
	}
	return nil
}

// entries returns a copy of the entries.
func (c *epochCache) entries() []EpochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]EpochEntry(nil), c.ents...)
}

// latest returns the latest entry.
func (c *epochCache) latest() (EpochEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.ents) == 0 {
		return EpochEntry{}, false
	}
	return c.ents[len(c.ents)-1], true
}

// assign records that epoch starts at offset, unless the latest entry is
// already that epoch at an offset <= offset. Entries that would break
// monotonicity (an epoch >= epoch, or a start >= offset) are removed first,
// as Kafka does. It reports whether the cache changed.
func (c *epochCache) assign(epoch int32, offset int64) (bool, error) {
	if epoch < 0 || offset < 0 {
		return false, fmt.Errorf("leader epoch entry (%d, %d) is invalid", epoch, offset)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.ents); n > 0 {
		last := c.ents[n-1]
		if last.Epoch == epoch && offset >= last.StartOffset {
			return false, nil
		}
	}
	for len(c.ents) > 0 {
		last := c.ents[len(c.ents)-1]
		if last.Epoch < epoch && last.StartOffset < offset {
			break
		}
		c.ents = c.ents[:len(c.ents)-1]
	}
	c.ents = append(c.ents, EpochEntry{Epoch: epoch, StartOffset: offset})
	return true, c.write()
}

// truncateFromEnd removes the entries starting at or after endOffset.
func (c *epochCache) truncateFromEnd(endOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.ents)
	for len(c.ents) > 0 && c.ents[len(c.ents)-1].StartOffset >= endOffset {
		c.ents = c.ents[:len(c.ents)-1]
	}
	if len(c.ents) == n {
		return nil
	}
	return c.write()
}

// truncateFromStart removes the entries starting at or before startOffset,
// keeping the last of them with its start moved to startOffset.
func (c *epochCache) truncateFromStart(startOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := 0
	for i < len(c.ents) && c.ents[i].StartOffset <= startOffset {
		i++
	}
	if i == 0 {
		return nil
	}
	kept := EpochEntry{Epoch: c.ents[i-1].Epoch, StartOffset: startOffset}
	if i == 1 && c.ents[0] == kept {
		return nil
	}
	c.ents = append([]EpochEntry{kept}, c.ents[i:]...)
	return c.write()
}

// clear removes every entry.
func (c *epochCache) clear() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ents = nil
	return c.write()
}

// endOffsetFor is Kafka's LeaderEpochFileCache.endOffsetFor: the largest
// epoch <= requested that the cache knows and the start offset of the next
// higher epoch (logEnd for the latest epoch). A requested epoch of -1, or
// one above every known epoch, yields (-1, -1); one below the earliest known
// epoch yields (requested, earliest start offset).
func (c *epochCache) endOffsetFor(requested int32, logEnd int64) (int32, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if requested == -1 || len(c.ents) == 0 {
		return -1, -1
	}
	if c.ents[len(c.ents)-1].Epoch == requested {
		return requested, logEnd
	}
	// higher: first entry with epoch > requested.
	h := 0
	for h < len(c.ents) && c.ents[h].Epoch <= requested {
		h++
	}
	if h == len(c.ents) {
		return -1, -1
	}
	if h == 0 {
		return requested, c.ents[0].StartOffset
	}
	return c.ents[h-1].Epoch, c.ents[h].StartOffset
}

// epochForOffset returns the epoch whose range holds offset (the latest entry
// starting at or before it).
func (c *epochCache) epochForOffset(offset int64) (int32, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	found, ok := int32(-1), false
	for _, e := range c.ents {
		if e.StartOffset > offset {
			break
		}
		found, ok = e.Epoch, true
	}
	return found, ok
}
