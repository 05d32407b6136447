package producerstate

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecodeSnapshot feeds arbitrary bytes to the snapshot decoder: it must
// never panic, and what it accepts must be exactly count × 46 bytes of
// entries that encode back to the same bytes when the producer ids are
// distinct and sorted.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(encodeSnapshot(map[int64]*Entry{}))
	f.Add(encodeSnapshot(map[int64]*Entry{
		1: {ProducerID: 1, ProducerEpoch: 2, Batches: []BatchMetadata{{3, 7, 10, 14, 99}}, CoordinatorEpoch: -1, LastTimestamp: 99, CurrentTxnFirstOffset: -1},
		2: {ProducerID: 2, ProducerEpoch: 0, CoordinatorEpoch: 4, LastTimestamp: 5, CurrentTxnFirstOffset: 8},
	}))
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := decodeSnapshot(b)
		if err != nil {
			return
		}
		if len(b) != snapshotHeaderSize+len(entries)*snapshotEntrySize {
			t.Fatalf("accepted %d bytes for %d entries", len(b), len(entries))
		}
		m := map[int64]*Entry{}
		sorted := true
		for i, e := range entries {
			if len(e.Batches) > 1 {
				t.Fatalf("entry with %d batches", len(e.Batches))
			}
			if i > 0 && e.ProducerID <= entries[i-1].ProducerID {
				sorted = false
			}
			// Normalisations the decoder applies: a txn offset below -1
			// reads as -1; an entry without batch reads back as -1/-1/0.
			m[e.ProducerID] = e
		}
		if !sorted {
			return
		}
		again, err := decodeSnapshot(encodeSnapshot(m))
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if len(again) != len(entries) {
			t.Fatalf("round trip changed the entry count")
		}
	})
}

// FuzzTxnIndex opens arbitrary bytes as a .txnindex file and exercises every
// reader: no panic, and a file that passes SanityCheck yields one entry per
// 34 bytes.
func FuzzTxnIndex(f *testing.F) {
	f.Add(AbortedTxn{1, 0, 10, 11}.appendTo(AbortedTxn{2, 3, 4, 5}.appendTo(nil)), int64(5))
	f.Add(AbortedTxn{1, 0, 10, 11}.appendTo(nil)[:20], int64(0))
	f.Add(append([]byte{0, 9}, make([]byte, 32)...), int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, b []byte, off int64) {
		path := filepath.Join(t.TempDir(), "0.txnindex")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		ti, err := OpenTxnIndex(path)
		if err != nil {
			t.Fatal(err)
		}
		defer ti.Close()
		sane := ti.SanityCheck() == nil
		all, err := ti.All()
		if sane && (err != nil || len(all) != len(b)/AbortedTxnSize) {
			t.Fatalf("sane index read %d entries (%v) from %d bytes", len(all), err, len(b))
		}
		_, _, _ = ti.CollectAborted(off, off/2+1)
		_ = ti.TruncateTo(off)
		if sane {
			// A sane index stays sane through truncation and an append
			// above its last entry.
			last := int64(math.MinInt64)
			if rest, _ := ti.All(); len(rest) > 0 {
				last = rest[len(rest)-1].LastOffset
			}
			if last < math.MaxInt64 {
				if err := ti.Append(AbortedTxn{1, 2, last + 1, 4}); err != nil {
					t.Fatal(err)
				}
			}
			if err := ti.SanityCheck(); err != nil {
				t.Fatalf("index insane after truncate and append: %v", err)
			}
		}
	})
}
