package storage

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestOffsetIndex(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.index")
	ix, err := openOffsetIndex(p, 100, 8*4)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.f.close()
	if o, pos := ix.lookup(150, 1<<30); o != -1 || pos != 0 {
		t.Fatalf("empty lookup %d %d", o, pos)
	}
	for i, e := range [][2]int64{{110, 100}, {120, 200}, {130, 300}} {
		if ok, err := ix.append(e[0], e[1]); !ok || err != nil {
			t.Fatalf("append %d: %v %v", i, ok, err)
		}
	}
	if _, err := ix.append(125, 400); err == nil {
		t.Fatal("non-increasing offset accepted")
	}
	cases := []struct{ target, end, wantOff, wantPos int64 }{
		{105, 1 << 30, -1, 0},
		{110, 1 << 30, 110, 100},
		{125, 1 << 30, 120, 200},
		{999, 1 << 30, 130, 300},
		{999, 250, 120, 200}, // entries at or past a reader's end are ignored
	}
	for _, c := range cases {
		if o, pos := ix.lookup(c.target, c.end); o != c.wantOff || pos != c.wantPos {
			t.Errorf("lookup(%d,%d) = %d,%d", c.target, c.end, o, pos)
		}
	}
	if o, pos := ix.lookupPosition(250); o != 120 || pos != 200 {
		t.Fatalf("lookupPosition %d %d", o, pos)
	}
	ix.append(140, 500)
	if !ix.isFull() {
		t.Fatal("index of 4 entries not full")
	}
	if ok, _ := ix.append(150, 600); ok {
		t.Fatal("append to a full index")
	}
	ix.truncateToPosition(300)
	if o, _, _ := ix.last(); o != 120 {
		t.Fatalf("after truncate last %d", o)
	}
	if err := ix.f.trim(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Size() != 16 {
		t.Fatalf("trimmed size %d", st.Size())
	}
	if err := ix.sanityCheck(1000); err != nil {
		t.Fatal(err)
	}
	if err := ix.sanityCheck(150); !errors.Is(err, ErrCorruptIndex) {
		t.Fatalf("entry past the log accepted: %v", err)
	}
	if !ix.canAppendOffset(100+1<<31-1) || ix.canAppendOffset(100+1<<31) || ix.canAppendOffset(99) {
		t.Fatal("canAppendOffset")
	}
}

func TestTimeIndex(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.timeindex")
	ix, err := openTimeIndex(p, 0, 12*2)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.f.close()
	ix.maybeAppend(1000, 5, false)
	ix.maybeAppend(1000, 9, false) // not larger: skipped
	ix.maybeAppend(900, 9, false)  // smaller: skipped
	ix.maybeAppend(2000, 20, false)
	if ix.f.entries() != 2 {
		t.Fatalf("%d entries", ix.f.entries())
	}
	ix.maybeAppend(3000, 30, true) // full, forced: grows
	if ts, o, _ := ix.last(); ts != 3000 || o != 30 {
		t.Fatalf("last %d %d", ts, o)
	}
	for _, c := range []struct{ ts, wantTs, wantOff int64 }{{500, -1, 0}, {1000, -1, 0}, {1001, 1000, 5}, {2500, 2000, 20}, {9999, 3000, 30}} {
		if ts, o := ix.lookup(c.ts); ts != c.wantTs || o != c.wantOff {
			t.Errorf("lookup(%d) = %d,%d", c.ts, ts, o)
		}
	}
	ix.truncateTo(20)
	if ts, _, _ := ix.last(); ts != 1000 {
		t.Fatalf("after truncate %d", ts)
	}
}

func TestIndexFileWithBadSizeIsCorrupt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.index")
	os.WriteFile(p, make([]byte, 13), 0o644)
	if _, err := openOffsetIndex(p, 0, 0); !errors.Is(err, ErrCorruptIndex) {
		t.Fatalf("%v", err)
	}
}

// Appending to a fresh active index must bring only the pages it writes
// into memory, not a read-ahead window of the sparse preallocated file (the
// cost that dominated appends to new segments).
func TestActiveIndexAppendTouchesOnlyItsPages(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.index")
	const capacity = 10 << 20 // segment.index.bytes' default
	ix, err := openOffsetIndex(p, 0, capacity)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.f.close()
	page := os.Getpagesize()
	perPage := int64(page / offsetIndexEntrySize)
	// Fill two pages and start a third.
	for i := int64(0); i <= 2*perPage; i++ {
		if ok, err := ix.append(i+1, (i+1)*4096); !ok || err != nil {
			t.Fatalf("append %d: %v %v", i, ok, err)
		}
	}
	vec := make([]byte, (capacity+page-1)/page)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&ix.f.data[0])), uintptr(len(ix.f.data)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	resident := 0
	for _, v := range vec {
		resident += int(v & 1)
	}
	if resident > 8 {
		t.Errorf("%d pages of the index are in memory after writing 3", resident)
	}
}
