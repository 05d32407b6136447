package storage

import (
	"crypto/md5"
	"encoding/binary"
)

// offsetMap is the cleaner's key → latest offset table (Kafka's
// SkimpyOffsetMap): a fixed-size open-addressing hash table that stores, per
// key, only a 16-byte digest of the key and the offset, so its memory is
// bounded by log.cleaner.dedupe.buffer.size whatever the keys are.
//
// Invariants:
//   - len(slots) <= maxSlots, fixed at construction: the table never grows.
//     The active part, slots[:n], is sized per cleaning to the number of keys
//     the dirty section can hold at most (so a small log does not touch the
//     whole budget), and n is prime so that double hashing visits every slot.
//   - size <= limit = floor(n * loadFactor): put refuses a new key once the
//     table holds limit keys, which bounds probe sequences (about
//     1/(1-loadFactor) probes per lookup).
//   - A slot is empty iff its off field is 0; a used slot stores offset+1
//     (offsets are never negative).
//
// Two keys with the same MD5 digest are the same key to the map, as in
// Kafka; with 128-bit digests that is not a practical concern. MD5 serves
// only as a well-mixed fingerprint here, not for security.
type offsetMap struct {
	slots      []offsetSlot
	n          uint64 // active slots, prime; slots[:n] are in use
	size       int    // keys stored
	limit      int    // keys the active table may hold
	maxSlots   int
	loadFactor float64
}

// offsetSlot is one table entry: a key digest and offset+1.
type offsetSlot struct {
	h1, h2 uint64
	off    int64
}

// offsetSlotSize is the memory one slot takes, what the dedupe buffer size
// is divided by.
const offsetSlotSize = 24

// minOffsetMapSlots keeps the table useful (limit >= 1) whatever the
// configured memory: every cleaning must be able to map at least one key to
// make progress.
const minOffsetMapSlots = 3

// newOffsetMap makes a map that uses at most memory bytes of slots and holds
// at most loadFactor of them (log.cleaner.io.buffer.load.factor). Memory is
// allocated lazily by reset, up to the bound.
func newOffsetMap(memory int64, loadFactor float64) *offsetMap {
	if loadFactor <= 0 || loadFactor > 1 {
		loadFactor = 0.9
	}
	maxSlots := max(int(min(memory/offsetSlotSize, int64(^uint(0)>>1))), minOffsetMapSlots)
	return &offsetMap{maxSlots: maxSlots, loadFactor: loadFactor}
}

// capacity returns how many keys a table sized for expected keys holds.
func (m *offsetMap) capacity() int { return m.limit }

// reset empties the map and sizes its active table for up to expectedKeys
// keys (the record count of the dirty section bounds it), within the memory
// bound.
func (m *offsetMap) reset(expectedKeys int) {
	want := int(float64(expectedKeys)/m.loadFactor) + 2
	n := largestPrimeAtMost(m.maxSlots)
	if want < n {
		n = smallestPrimeAtLeast(max(want, minOffsetMapSlots))
	}
	if n > len(m.slots) {
		m.slots = make([]offsetSlot, n)
	} else {
		clear(m.slots[:n])
	}
	m.n = uint64(n)
	m.size = 0
	// At least one slot stays empty, so probe always terminates.
	m.limit = min(max(int(float64(n)*m.loadFactor), 1), n-1)
}

// keyDigest returns the key's fingerprint as two words.
func keyDigest(key []byte) (uint64, uint64) {
	d := md5.Sum(key)
	return binary.LittleEndian.Uint64(d[:8]), binary.LittleEndian.Uint64(d[8:])
}

// probe returns the slot index holding the key with digest (h1, h2), or the
// empty slot where it would go. Double hashing: start at h1 mod n, step by
// 1 + h2 mod (n-1), which is coprime with the prime n, so the sequence visits
// every slot; the load limit guarantees an empty one exists.
func (m *offsetMap) probe(h1, h2 uint64) uint64 {
	i := h1 % m.n
	step := 1 + h2%(m.n-1)
	for {
		s := &m.slots[i]
		if s.off == 0 || (s.h1 == h1 && s.h2 == h2) {
			return i
		}
		i += step
		if i >= m.n {
			i -= m.n
		}
	}
}

// put records offset as the latest offset of key. It returns false, and
// changes nothing, when key is new and the map is full.
func (m *offsetMap) put(key []byte, offset int64) bool {
	h1, h2 := keyDigest(key)
	i := m.probe(h1, h2)
	s := &m.slots[i]
	if s.off == 0 {
		if m.size >= m.limit {
			return false
		}
		m.size++
		s.h1, s.h2 = h1, h2
	}
	s.off = offset + 1
	return true
}

// get returns the latest offset recorded for key, or -1.
func (m *offsetMap) get(key []byte) int64 {
	if m.n == 0 {
		return -1
	}
	h1, h2 := keyDigest(key)
	return m.slots[m.probe(h1, h2)].off - 1
}

// utilization is the share of the active table in use, for the cleaner's
// statistics.
func (m *offsetMap) utilization() float64 {
	if m.n == 0 {
		return 0
	}
	return float64(m.size) / float64(m.n)
}

// isPrime reports whether n is prime (trial division; n is at most the
// number of slots a dedupe buffer holds).
func isPrime(n int) bool {
	if n < 2 {
		return false
	}
	if n%2 == 0 {
		return n == 2
	}
	for d := 3; d*d <= n; d += 2 {
		if n%d == 0 {
			return false
		}
	}
	return true
}

// largestPrimeAtMost returns the largest prime <= n (n >= 2).
func largestPrimeAtMost(n int) int {
	for ; n > 2; n-- {
		if isPrime(n) {
			return n
		}
	}
	return 2
}

// smallestPrimeAtLeast returns the smallest prime >= n.
func smallestPrimeAtLeast(n int) int {
	for !isPrime(n) {
		n++
	}
	return n
}
