package producerstate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
)

// AbortedTxnSize is the size of one .txnindex entry.
const AbortedTxnSize = 2 + 8 + 8 + 8 + 8 // 34

// abortedTxnVersion is the only entry version Kafka writes.
const abortedTxnVersion = 0

// AbortedTxn is one entry of a segment's .txnindex (Kafka's format, big-endian:
// version int16 = 0 | producerId int64 | firstOffset int64 | lastOffset int64 |
// lastStableOffset int64). LastOffset is the offset of the ABORT marker;
// LastStableOffset is the LSO when the marker was written.
type AbortedTxn struct {
	ProducerID, FirstOffset, LastOffset, LastStableOffset int64
}

// ErrCorruptTxnIndex is wrapped by errors about a .txnindex file that is not
// a whole number of valid entries.
var ErrCorruptTxnIndex = errors.New("corrupt transaction index")

// appendTo encodes the entry.
func (a AbortedTxn) appendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, abortedTxnVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
	b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(a.LastOffset))
	return binary.BigEndian.AppendUint64(b, uint64(a.LastStableOffset))
}

// decodeAbortedTxn parses one entry of exactly AbortedTxnSize bytes.
func decodeAbortedTxn(b []byte) (AbortedTxn, error) {
	if v := int16(binary.BigEndian.Uint16(b)); v != abortedTxnVersion {
		return AbortedTxn{}, fmt.Errorf("%w: entry version %d", ErrCorruptTxnIndex, v)
	}
	return AbortedTxn{
		ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
		FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
		LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
		LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
	}, nil
}

// TxnIndex is a segment's .txnindex file: appended on abort markers, read by
// READ_COMMITTED fetches. The file is created on the first Append. It is safe
// for concurrent use, so fetches can read while the log appends.
//
// Invariant: entries are in increasing LastOffset order, because markers are
// appended in log order.
type TxnIndex struct {
	mu   sync.Mutex
	path string
	f    *os.File // nil until the file exists and is opened
	size int64    // bytes in the file
	// lastOffset is the LastOffset of the last whole entry, valid if hasLast.
	lastOffset int64
	hasLast    bool
}

// OpenTxnIndex opens the index at path; a missing file is an empty index,
// created lazily on first Append.
func OpenTxnIndex(path string) (*TxnIndex, error) {
	t := &TxnIndex{path: path}
	if err := t.open(false); err != nil {
		return nil, err
	}
	return t, nil
}

// open opens the file if it is not open yet. Without create a missing file
// leaves the index closed and empty.
func (t *TxnIndex) open(create bool) error {
	if t.f != nil {
		return nil
	}
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(t.path, flags, 0o644)
	if !create && errors.Is(err, fs.ErrNotExist) {
		t.size, t.hasLast = 0, false
		return nil
	}
	if err != nil {
		return fmt.Errorf("open transaction index: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open transaction index: %w", err)
	}
	t.f, t.size = f, st.Size()
	if err := t.loadLast(); err != nil {
		t.f = nil
		f.Close()
		return err
	}
	return nil
}

// loadLast reads the last whole entry so Append keeps LastOffset increasing
// across restarts. A torn or corrupt tail is left for SanityCheck to report.
func (t *TxnIndex) loadLast() error {
	t.hasLast = false
	n := t.size / AbortedTxnSize
	if n == 0 {
		return nil
	}
	var buf [AbortedTxnSize]byte
	if _, err := t.f.ReadAt(buf[:], (n-1)*AbortedTxnSize); err != nil {
		return fmt.Errorf("read transaction index %s: %w", t.path, err)
	}
	if a, err := decodeAbortedTxn(buf[:]); err == nil {
		t.lastOffset, t.hasLast = a.LastOffset, true
	}
	return nil
}

// Path is the file's current path.
func (t *TxnIndex) Path() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.path
}

// Append adds an entry at the end. LastOffset must be greater than that of
// every entry already in the index.
func (t *TxnIndex) Append(a AbortedTxn) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.open(true); err != nil {
		return err
	}
	if t.hasLast && a.LastOffset <= t.lastOffset {
		return fmt.Errorf("append to transaction index %s: last offset %d is not above %d", t.path, a.LastOffset, t.lastOffset)
	}
	buf := a.appendTo(make([]byte, 0, AbortedTxnSize))
	if _, err := t.f.WriteAt(buf, t.size); err != nil {
		return fmt.Errorf("append to transaction index %s: %w", t.path, err)
	}
	t.size += AbortedTxnSize
	t.lastOffset, t.hasLast = a.LastOffset, true
	return nil
}

// forEach calls fn for every whole entry with its byte position, in file
// order, stopping when fn returns false. A bad entry version is an error.
func (t *TxnIndex) forEach(fn func(a AbortedTxn, pos int64) bool) error {
	if err := t.open(false); err != nil {
		return err
	}
	if t.f == nil {
		return nil
	}
	const chunkEntries = 256
	buf := make([]byte, chunkEntries*AbortedTxnSize)
	end := t.size - t.size%AbortedTxnSize
	for pos := int64(0); pos < end; {
		n := min(int64(len(buf)), end-pos)
		if _, err := t.f.ReadAt(buf[:n], pos); err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("%w: %s shrank while reading", ErrCorruptTxnIndex, t.path)
			}
			return fmt.Errorf("read transaction index %s: %w", t.path, err)
		}
		for p := int64(0); p < n; p += AbortedTxnSize {
			a, err := decodeAbortedTxn(buf[p : p+AbortedTxnSize])
			if err != nil {
				return fmt.Errorf("%s at byte %d: %w", t.path, pos+p, err)
			}
			if !fn(a, pos+p) {
				return nil
			}
		}
		pos += n
	}
	return nil
}

// CollectAborted returns the aborted transactions overlapping
// [fetchOffset, upperBound) and whether the search is complete: an entry with
// LastStableOffset >= upperBound was seen, so no transaction aborted later
// (in this or later segments) can start below upperBound.
func (t *TxnIndex) CollectAborted(fetchOffset, upperBound int64) (txns []AbortedTxn, complete bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	err = t.forEach(func(a AbortedTxn, _ int64) bool {
		if a.LastOffset >= fetchOffset && a.FirstOffset < upperBound {
			txns = append(txns, a)
		}
		if a.LastStableOffset >= upperBound {
			complete = true
			return false
		}
		return true
	})
	if err != nil {
		return nil, false, err
	}
	return txns, complete, nil
}

// All returns every entry of the index, in order.
func (t *TxnIndex) All() ([]AbortedTxn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var all []AbortedTxn
	err := t.forEach(func(a AbortedTxn, _ int64) bool {
		all = append(all, a)
		return true
	})
	return all, err
}

// TruncateTo drops the entries with LastOffset >= offset (their markers were
// truncated from the log).
func (t *TxnIndex) TruncateTo(offset int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	cut := int64(-1)
	var newLast int64
	hasNewLast := false
	err := t.forEach(func(a AbortedTxn, pos int64) bool {
		if a.LastOffset >= offset {
			cut = pos
			return false
		}
		newLast, hasNewLast = a.LastOffset, true
		return true
	})
	if err != nil {
		return fmt.Errorf("truncate transaction index: %w", err)
	}
	if cut < 0 {
		return nil
	}
	if err := t.f.Truncate(cut); err != nil {
		return fmt.Errorf("truncate transaction index %s: %w", t.path, err)
	}
	t.size = cut
	t.lastOffset, t.hasLast = newLast, hasNewLast
	return nil
}

// Reset removes every entry.
func (t *TxnIndex) Reset() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.open(false); err != nil {
		return err
	}
	if t.f != nil {
		if err := t.f.Truncate(0); err != nil {
			return fmt.Errorf("reset transaction index %s: %w", t.path, err)
		}
	}
	t.size, t.hasLast = 0, false
	return nil
}

// Flush makes appended entries durable.
func (t *TxnIndex) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.f == nil {
		return nil
	}
	if err := t.f.Sync(); err != nil {
		return fmt.Errorf("flush transaction index %s: %w", t.path, err)
	}
	return nil
}

// Close releases the file descriptor; a later call reopens the file.
func (t *TxnIndex) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closeLocked()
}

func (t *TxnIndex) closeLocked() error {
	if t.f == nil {
		return nil
	}
	err := t.f.Close()
	t.f = nil
	if err != nil {
		return fmt.Errorf("close transaction index %s: %w", t.path, err)
	}
	return nil
}

// Delete closes and removes the file, if it exists.
func (t *TxnIndex) Delete() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	cerr := t.closeLocked()
	if err := os.Remove(t.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete transaction index: %w", err)
	}
	t.size, t.hasLast = 0, false
	return cerr
}

// Rename moves the file (if it exists) to newPath; the index keeps working at
// the new path whether or not the file existed.
func (t *TxnIndex) Rename(newPath string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := os.Rename(t.path, newPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rename transaction index: %w", err)
	}
	t.path = newPath
	return nil
}

// SanityCheck reports an index whose size is not a whole number of entries,
// or that holds an entry of an unknown version or out of LastOffset order;
// the Log then rebuilds it from the segment.
func (t *TxnIndex) SanityCheck() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.open(false); err != nil {
		return err
	}
	if t.size%AbortedTxnSize != 0 {
		return fmt.Errorf("%w: %s has size %d, not a multiple of %d", ErrCorruptTxnIndex, t.path, t.size, AbortedTxnSize)
	}
	prev, first := int64(0), true
	var orderErr error
	err := t.forEach(func(a AbortedTxn, pos int64) bool {
		if !first && a.LastOffset <= prev {
			orderErr = fmt.Errorf("%w: %s at byte %d: last offset %d does not follow %d", ErrCorruptTxnIndex, t.path, pos, a.LastOffset, prev)
			return false
		}
		prev, first = a.LastOffset, false
		return true
	})
	if err != nil {
		return err
	}
	return orderErr
}
