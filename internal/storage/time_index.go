package storage

import (
	"encoding/binary"
	"fmt"
)

// timeIndexEntrySize is the size of a .timeindex entry: timestamp (int64)
// and relative offset (int32), big-endian.
const timeIndexEntrySize = 12

// timeIndex is a segment's .timeindex: each entry (t, o) says that the
// largest timestamp of the batches up to and including the one ending at
// offset o is t. An entry is added alongside an offset index entry, and only
// when the largest timestamp grew; a final entry is added when the segment
// stops being active, so the last entry holds the segment's largest
// timestamp (which time-based retention uses).
//
// Invariants: timestamps and offsets strictly increase.
type timeIndex struct {
	base int64
	f    *indexFile
}

func openTimeIndex(path string, base, capacity int64) (*timeIndex, error) {
	f, err := openIndexFile(path, timeIndexEntrySize, capacity)
	if err != nil {
		return nil, err
	}
	return &timeIndex{base: base, f: f}, nil
}

func (ix *timeIndex) parse(i int64) (ts, offset int64) {
	e := ix.f.entry(i)
	return int64(binary.BigEndian.Uint64(e)), ix.base + int64(int32(binary.BigEndian.Uint32(e[8:])))
}

// lookup returns the entry with the largest timestamp < ts, or (-1, base)
// when there is none. Every batch up to the returned offset has timestamps
// below ts, so a search for the first record with timestamp >= ts may start
// at the batch holding that offset.
func (ix *timeIndex) lookup(ts int64) (timestamp, offset int64) {
	ix.f.mu.RLock()
	defer ix.f.mu.RUnlock()
	n := ix.f.entries()
	lo, hi := int64(0), n-1
	found := int64(-1)
	for lo <= hi {
		mid := lo + (hi-lo)/2
		t, _ := ix.parse(mid)
		if t < ts {
			found = mid
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	if found < 0 {
		return -1, ix.base
	}
	return ix.parse(found)
}

// last returns the last entry, or (-1, base) if the index is empty (Kafka's
// lastEntry).
func (ix *timeIndex) last() (ts, offset int64, ok bool) {
	ix.f.mu.RLock()
	defer ix.f.mu.RUnlock()
	n := ix.f.entries()
	if n == 0 {
		return -1, ix.base, false
	}
	ts, offset = ix.parse(n - 1)
	return ts, offset, true
}

// maybeAppend adds (ts, offset) if ts exceeds the last entry's timestamp.
// With force the index grows by one entry if it is full (the final entry a
// segment gets when it stops being active must not be lost).
func (ix *timeIndex) maybeAppend(ts, offset int64, force bool) error {
	lt, lo, ok := ix.last()
	if ok && ts <= lt {
		return nil
	}
	if ts < 0 {
		return nil // no timestamps (never for v2 batches written by Kafka clients)
	}
	if ok && offset < lo {
		return fmt.Errorf("time index %s: entry (%d, %d) goes back from offset %d", ix.f.filePath(), ts, offset, lo)
	}
	if !canRelativize(ix.base, offset) {
		return fmt.Errorf("time index %s: offset %d not representable from base %d", ix.f.filePath(), offset, ix.base)
	}
	if ok && offset == lo {
		// A larger timestamp at the same offset: Kafka keeps the first entry
		// (entries must have strictly increasing offsets).
		return nil
	}
	var e [timeIndexEntrySize]byte
	binary.BigEndian.PutUint64(e[:], uint64(ts))
	binary.BigEndian.PutUint32(e[8:], uint32(offset-ix.base))
	if ix.f.appendEntry(e[:]) || !force {
		return nil
	}
	if err := ix.f.resize(int64(len(ix.f.data)) + timeIndexEntrySize); err != nil {
		return err
	}
	ix.f.appendEntry(e[:])
	return nil
}

// truncateTo removes the entries with offset >= offset.
func (ix *timeIndex) truncateTo(offset int64) {
	ix.f.mu.RLock()
	n := ix.f.entries()
	keep := n
	for keep > 0 {
		_, o := ix.parse(keep - 1)
		if o < offset {
			break
		}
		keep--
	}
	ix.f.mu.RUnlock()
	ix.f.truncateEntries(keep)
}

// isFull reports whether no entry can be appended.
func (ix *timeIndex) isFull() bool { return ix.f.entries() >= ix.f.maxEntries() }

// sanityCheck verifies an index loaded from disk: offsets in range of the
// segment, timestamps and offsets strictly increasing.
func (ix *timeIndex) sanityCheck(nextOffset int64) error {
	ix.f.mu.RLock()
	defer ix.f.mu.RUnlock()
	n := ix.f.entries()
	prevTs, prevOff := int64(-1), ix.base-1
	for i := int64(0); i < n; i++ {
		t, o := ix.parse(i)
		if t <= prevTs || o <= prevOff || o >= nextOffset {
			return fmt.Errorf("time index %s: entry %d (%d, %d) impossible after (%d, %d) for base %d: %w",
				ix.f.path, i, t, o, prevTs, prevOff, ix.base, ErrCorruptIndex)
		}
		prevTs, prevOff = t, o
	}
	return nil
}
