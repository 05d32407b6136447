package storage

import (
	"encoding/binary"
	"fmt"
	"math"
)

// offsetIndexEntrySize is the size of an .index entry: relative offset
// (int32) and file position (int32), big-endian.
const offsetIndexEntrySize = 8

// offsetIndex is a segment's sparse .index: entries map the last offset of a
// batch (relative to the segment's base offset) to the batch's position in
// the .log file. An entry is added for a batch when more than
// index.interval.bytes were appended since the previous entry, so a lookup
// ends with a scan of at most about that many bytes.
//
// Invariants: offsets and positions strictly increase; every position is the
// start of a batch below the segment's size (entries never point past the
// segment end).
type offsetIndex struct {
	base int64
	f    *indexFile
}

func openOffsetIndex(path string, base, capacity int64) (*offsetIndex, error) {
	f, err := openIndexFile(path, offsetIndexEntrySize, capacity)
	if err != nil {
		return nil, err
	}
	return &offsetIndex{base: base, f: f}, nil
}

func (ix *offsetIndex) parse(i int64) (offset, pos int64) {
	e := ix.f.entry(i)
	return ix.base + int64(int32(binary.BigEndian.Uint32(e))), int64(int32(binary.BigEndian.Uint32(e[4:])))
}

// lookup returns the entry with the largest offset <= target whose position
// is below end, or (-1, 0) if there is none: a scan from the returned
// position finds target. The end bound lets a reader ignore entries added by
// appends it does not see yet. A scan from an entry should check that the
// batch there ends at the entry's offset (headerScanner.expect): entries of
// a file loaded from disk are hints, not facts.
func (ix *offsetIndex) lookup(target, end int64) (offset, pos int64) {
	ix.f.mu.RLock()
	defer ix.f.mu.RUnlock()
	n := ix.f.entries()
	lo, hi := int64(0), n-1 // find the last entry with offset <= target
	found := int64(-1)
	for lo <= hi {
		mid := lo + (hi-lo)/2
		o, _ := ix.parse(mid)
		if o <= target {
			found = mid
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	for ; found >= 0; found-- {
		if o, p := ix.parse(found); p < end {
			return o, p
		}
	}
	return -1, 0
}

// lookupPosition returns the entry with the largest position < pos, or
// (-1, 0) if there is none.
func (ix *offsetIndex) lookupPosition(pos int64) (offset, position int64) {
	ix.f.mu.RLock()
	defer ix.f.mu.RUnlock()
	n := ix.f.entries()
	lo, hi := int64(0), n-1
	found := int64(-1)
	for lo <= hi {
		mid := lo + (hi-lo)/2
		_, p := ix.parse(mid)
		if p < pos {
			found = mid
			lo = mid + 1
		} else {
			hi = mid - 1
		}
	}
	if found < 0 {
		return -1, 0
	}
	return ix.parse(found)
}

// last returns the last entry; ok is false when the index is empty.
func (ix *offsetIndex) last() (offset, pos int64, ok bool) {
	ix.f.mu.RLock()
	defer ix.f.mu.RUnlock()
	n := ix.f.entries()
	if n == 0 {
		return ix.base, 0, false
	}
	offset, pos = ix.parse(n - 1)
	return offset, pos, true
}

// canAppendOffset reports whether offset is representable relative to the
// base (0 <= offset-base <= MaxInt32).
func (ix *offsetIndex) canAppendOffset(offset int64) bool {
	return canRelativize(ix.base, offset)
}

func canRelativize(base, offset int64) bool {
	return offset >= base && offset-base <= math.MaxInt32
}

// append adds an entry; offset must exceed the last entry's and pos must
// exceed its position. It reports false (adding nothing) when the index is
// full, which is harmless: the index just stays sparser.
func (ix *offsetIndex) append(offset, pos int64) (bool, error) {
	if !ix.canAppendOffset(offset) || pos < 0 || pos > math.MaxInt32 {
		return false, fmt.Errorf("offset index %s: entry (%d, %d) is not representable from base %d", ix.f.filePath(), offset, pos, ix.base)
	}
	if lo, lp, ok := ix.last(); ok && (offset <= lo || pos <= lp) {
		return false, fmt.Errorf("offset index %s: entry (%d, %d) does not follow (%d, %d)", ix.f.filePath(), offset, pos, lo, lp)
	}
	var e [offsetIndexEntrySize]byte
	binary.BigEndian.PutUint32(e[:], uint32(offset-ix.base))
	binary.BigEndian.PutUint32(e[4:], uint32(pos))
	return ix.f.appendEntry(e[:]), nil
}

// truncateToPosition removes the entries whose position is >= pos.
func (ix *offsetIndex) truncateToPosition(pos int64) {
	ix.f.mu.RLock()
	n := ix.f.entries()
	keep := n
	for keep > 0 {
		_, p := ix.parse(keep - 1)
		if p < pos {
			break
		}
		keep--
	}
	ix.f.mu.RUnlock()
	ix.f.truncateEntries(keep)
}

// isFull reports whether no entry can be appended.
func (ix *offsetIndex) isFull() bool { return ix.f.entries() >= ix.f.maxEntries() }

// sanityCheck verifies an index loaded from disk: every entry in range of
// the segment, offsets and positions strictly increasing. (Whether each
// position is a batch start is checked when a lookup scans from it.)
func (ix *offsetIndex) sanityCheck(logSize int64) error {
	ix.f.mu.RLock()
	defer ix.f.mu.RUnlock()
	n := ix.f.entries()
	prevOff, prevPos := ix.base-1, int64(-1)
	for i := int64(0); i < n; i++ {
		o, p := ix.parse(i)
		if o <= prevOff || p <= prevPos || p >= logSize {
			return fmt.Errorf("offset index %s: entry %d (%d, %d) impossible after (%d, %d) for base %d and log size %d: %w",
				ix.f.path, i, o, p, prevOff, prevPos, ix.base, logSize, ErrCorruptIndex)
		}
		prevOff, prevPos = o, p
	}
	return nil
}
