package storage

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestOffsetMapAgainstMap checks puts and gets against a Go map, including
// overwrites, missing keys and the refusal of new keys when full.
func TestOffsetMapAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, memory := range []int64{0, 10 * offsetSlotSize, 1000 * offsetSlotSize, 1 << 20} {
		m := newOffsetMap(memory, 0.9)
		for round := 0; round < 3; round++ {
			m.reset(500)
			if len(m.slots)*offsetSlotSize > max(int(memory), minOffsetMapSlots*offsetSlotSize) {
				t.Fatalf("memory %d: %d slots exceed the bound", memory, len(m.slots))
			}
			if m.capacity() < 1 || m.capacity() >= int(m.n) {
				t.Fatalf("memory %d: capacity %d of %d slots", memory, m.capacity(), m.n)
			}
			model := make(map[string]int64)
			full := false
			for off := int64(0); off < 2000; off++ {
				k := fmt.Sprintf("key-%d", rng.IntN(600))
				_, known := model[k]
				ok := m.put([]byte(k), off)
				switch {
				case ok:
					model[k] = off
				case known:
					t.Fatalf("memory %d: overwrite of a known key refused", memory)
				case len(model) < m.capacity():
					t.Fatalf("memory %d: new key refused with %d of %d", memory, len(model), m.capacity())
				default:
					full = true
				}
				if m.size != len(model) {
					t.Fatalf("size %d, model %d", m.size, len(model))
				}
			}
			// Every configuration here holds fewer keys than the ~580
			// distinct ones drawn, so each filled up.
			if !full || len(model) != m.capacity() {
				t.Fatalf("memory %d: full=%v with %d keys, capacity %d", memory, full, len(model), m.capacity())
			}
			for k, off := range model {
				if got := m.get([]byte(k)); got != off {
					t.Fatalf("memory %d: get(%s) = %d, want %d", memory, k, got, off)
				}
			}
			if got := m.get([]byte("absent")); got != -1 {
				t.Fatalf("get of an absent key = %d", got)
			}
		}
	}
}

// TestOffsetMapSizing: the active table fits the expected keys, within the
// memory bound, and is prime.
func TestOffsetMapSizing(t *testing.T) {
	m := newOffsetMap(1<<20, 0.9)
	m.reset(10)
	if m.n < 12 || m.n > 20 || !isPrime(int(m.n)) {
		t.Fatalf("10 keys: %d slots", m.n)
	}
	if m.capacity() < 10 {
		t.Fatalf("10 keys: capacity %d", m.capacity())
	}
	m.reset(1 << 30)
	if int(m.n) > (1<<20)/offsetSlotSize || !isPrime(int(m.n)) {
		t.Fatalf("huge: %d slots", m.n)
	}
	// Shrinking reuses the allocation.
	before := &m.slots[0]
	m.reset(5)
	if &m.slots[0] != before {
		t.Fatal("reset reallocated")
	}
	if m.get([]byte("x")) != -1 {
		t.Fatal("reset left entries")
	}
	for _, c := range []struct{ n, largest, smallest int }{{2, 2, 2}, {3, 3, 3}, {4, 3, 5}, {100, 97, 101}} {
		if got := largestPrimeAtMost(c.n); got != c.largest {
			t.Fatalf("largestPrimeAtMost(%d) = %d", c.n, got)
		}
		if got := smallestPrimeAtLeast(c.n); got != c.smallest {
			t.Fatalf("smallestPrimeAtLeast(%d) = %d", c.n, got)
		}
	}
}

func BenchmarkOffsetMapPut(b *testing.B) {
	m := newOffsetMap(64<<20, 0.9)
	keys := make([][]byte, 1<<16)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user-%08d", i))
	}
	m.reset(len(keys))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.put(keys[i&(len(keys)-1)], int64(i))
	}
}
