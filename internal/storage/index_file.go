package storage

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// indexFile is a memory-mapped file of fixed-size entries: the common part
// of the offset index and the time index. Entries live in the page cache,
// not in the Go heap, so thousands of segments cost no heap memory.
//
// Concurrency: lookups hold mu for reading while they touch the mapping;
// remapping (resize, close) holds it for writing, so a lookup never touches
// an unmapped region. Appends, truncation and resizing are made by the
// Log's appender only (under the Log's lock). An append writes the entry
// bytes first and then publishes the new count with an atomic store, so a
// concurrent lookup that loads the count sees complete entries.
type indexFile struct {
	entrySize int64

	mu   sync.RWMutex
	path string // guarded by mu
	f    *os.File
	data []byte // the mapping; its length is the capacity in bytes
	n    atomic.Int64
}

// openIndexFile opens (creating if needed) the index at path. The file's
// size must be a whole number of entries; all of them are taken as valid
// (a preallocated index of a crashed log is rebuilt by recovery before use).
// If capacity exceeds the file size, the file is grown to it (rounded down
// to whole entries), as for the active segment's index.
func openIndexFile(path string, entrySize, capacity int64) (*indexFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	ix := &indexFile{entrySize: entrySize, path: path, f: f}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	size := st.Size()
	if size%entrySize != 0 {
		f.Close()
		return nil, fmt.Errorf("index %s: size %d is not a multiple of the entry size %d: %w", path, size, entrySize, ErrCorruptIndex)
	}
	ix.n.Store(size / entrySize)
	capacity -= capacity % entrySize
	if capacity < size {
		capacity = size
	}
	if err := ix.remap(capacity); err != nil {
		f.Close()
		return nil, err
	}
	return ix, nil
}

// remap sets the file size to capacity bytes and maps it. Caller holds mu for
// writing or is the only user.
func (ix *indexFile) remap(capacity int64) error {
	if ix.data != nil {
		if err := unix.Munmap(ix.data); err != nil {
			return fmt.Errorf("unmap index %s: %w", ix.path, err)
		}
		ix.data = nil
	}
	if err := ix.f.Truncate(capacity); err != nil {
		return fmt.Errorf("resize index %s: %w", ix.path, err)
	}
	if capacity == 0 {
		return nil
	}
	data, err := unix.Mmap(int(ix.f.Fd()), 0, int(capacity), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("map index %s: %w", ix.path, err)
	}
	ix.data = data
	ix.adviseSpare()
	return nil
}

// adviseSpare turns off read-ahead for the pages past the valid entries:
// the sparse, preallocated tail of an active segment's index. Appends touch
// those pages one at a time, and with read-ahead the first touch of each
// would make the kernel allocate and zero a whole window of pages (up to
// megabytes) that the index may never use: that cost dominated the append
// path of short-lived segments. The valid entries keep the default (a
// lookup in a cold index reads it in efficiently). The advice is only a
// hint, so failing to give it changes nothing else.
func (ix *indexFile) adviseSpare() {
	page := int64(os.Getpagesize())
	from := ix.n.Load() * ix.entrySize / page * page
	if from >= int64(len(ix.data)) {
		return
	}
	_ = unix.Madvise(ix.data[from:], unix.MADV_RANDOM)
}

// resize changes the capacity to capacity bytes (rounded down to whole
// entries, never below the valid entries).
func (ix *indexFile) resize(capacity int64) error {
	capacity -= capacity % ix.entrySize
	if min := ix.n.Load() * ix.entrySize; capacity < min {
		capacity = min
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if int64(len(ix.data)) == capacity {
		return nil
	}
	return ix.remap(capacity)
}

// trim shrinks the file to its valid entries, as Kafka does when a segment
// stops being active and on close, so that the file size says how many
// entries there are.
func (ix *indexFile) trim() error { return ix.resize(0) }

// entries returns the number of valid entries.
func (ix *indexFile) entries() int64 { return ix.n.Load() }

// maxEntries returns how many entries the current capacity holds.
func (ix *indexFile) maxEntries() int64 { return int64(len(ix.data)) / ix.entrySize }

// appendEntry copies e (entrySize bytes) after the last entry. It reports
// false if the index is full.
func (ix *indexFile) appendEntry(e []byte) bool {
	n := ix.n.Load()
	off := n * ix.entrySize
	if off+ix.entrySize > int64(len(ix.data)) {
		return false
	}
	copy(ix.data[off:off+ix.entrySize], e)
	ix.n.Store(n + 1)
	return true
}

// truncateEntries keeps the first n entries.
func (ix *indexFile) truncateEntries(n int64) {
	if n < ix.n.Load() {
		ix.n.Store(n)
	}
}

// entry returns entry i; the caller holds mu for reading and i < entries().
func (ix *indexFile) entry(i int64) []byte {
	return ix.data[i*ix.entrySize : (i+1)*ix.entrySize]
}

// flush makes the entries (written through the shared mapping, so they are
// in the page cache) and the file size durable.
func (ix *indexFile) flush() error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.f == nil {
		return nil
	}
	if err := ix.f.Sync(); err != nil {
		return fmt.Errorf("sync index %s: %w", ix.path, err)
	}
	return nil
}

// close trims the file to its valid entries and releases the mapping and
// the descriptor.
func (ix *indexFile) close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.f == nil {
		return nil
	}
	err := ix.remap(ix.n.Load() * ix.entrySize)
	if ix.data != nil {
		if uerr := unix.Munmap(ix.data); err == nil {
			err = uerr
		}
		ix.data = nil
	}
	if cerr := ix.f.Close(); err == nil {
		err = cerr
	}
	ix.f = nil
	ix.n.Store(0) // a lookup through a stale reference finds no entries
	return err
}

// closeNoTrim releases the mapping and descriptor without touching the file
// (for files that were renamed for deletion).
func (ix *indexFile) closeNoTrim() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.f == nil {
		return nil
	}
	var err error
	if ix.data != nil {
		err = unix.Munmap(ix.data)
		ix.data = nil
	}
	if cerr := ix.f.Close(); err == nil {
		err = cerr
	}
	ix.f = nil
	ix.n.Store(0)
	return err
}

// rename moves the file; the mapping is unaffected.
func (ix *indexFile) rename(newPath string) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := os.Rename(ix.path, newPath); err != nil {
		return err
	}
	ix.path = newPath
	return nil
}

// filePath returns the current path.
func (ix *indexFile) filePath() string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.path
}
