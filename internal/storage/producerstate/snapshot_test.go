package producerstate

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestSnapshotEntryByteLayout checks one encoded snapshot against Kafka's
// documented producer snapshot format, written out field by field. The CRC
// was computed independently (bitwise CRC-32C, polynomial 0x82F63B78).
func TestSnapshotEntryByteLayout(t *testing.T) {
	want := mustHex(t, ""+
		"0001"+ // version int16 = 1
		"d2ff317a"+ // crc uint32: CRC-32C of everything after this field
		"00000001"+ // count int32
		"00000000000003e8"+ // producerId int64 = 1000
		"0003"+ // epoch int16 = 3
		"00000009"+ // lastSequence int32 = 9
		"0000000000000063"+ // lastOffset int64 = 99
		"00000004"+ // offsetDelta int32 = 4 (batch 95..99)
		"0000018bcfe56800"+ // timestamp int64 = 1700000000000
		"00000007"+ // coordinatorEpoch int32 = 7
		"000000000000005a") // currentTxnFirstOffset int64 = 90
	e := &Entry{
		ProducerID:    1000,
		ProducerEpoch: 3,
		Batches: []BatchMetadata{
			{FirstSeq: 0, LastSeq: 4, FirstOffset: 90, LastOffset: 94, Timestamp: 1},
			{FirstSeq: 5, LastSeq: 9, FirstOffset: 95, LastOffset: 99, Timestamp: 1700000000000},
		},
		CoordinatorEpoch:      7,
		LastTimestamp:         1700000000000,
		CurrentTxnFirstOffset: 90,
	}
	got := encodeSnapshot(map[int64]*Entry{1000: e})
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded snapshot\n got  %x\n want %x", got, want)
	}
	dec, err := decodeSnapshot(want)
	if err != nil {
		t.Fatal(err)
	}
	wantEntry := *e
	wantEntry.Batches = e.Batches[1:] // like Kafka, only the last batch is kept
	if len(dec) != 1 || !reflect.DeepEqual(*dec[0], wantEntry) {
		t.Fatalf("decoded %+v, want %+v", dec, wantEntry)
	}
}

// TestSnapshotEntryWithoutBatch checks the "absent" values Kafka writes for a
// producer known only from a marker: lastSequence -1, lastOffset -1, delta 0.
func TestSnapshotEntryWithoutBatch(t *testing.T) {
	e := newEntry(5)
	e.ProducerEpoch, e.CoordinatorEpoch, e.LastTimestamp = 2, 1, 42
	b := encodeSnapshot(map[int64]*Entry{5: e})
	entry := b[snapshotHeaderSize:]
	want := mustHex(t, "0000000000000005"+"0002"+"ffffffff"+"ffffffffffffffff"+"00000000"+
		"000000000000002a"+"00000001"+"ffffffffffffffff")
	if !bytes.Equal(entry, want) {
		t.Fatalf("entry\n got  %x\n want %x", entry, want)
	}
	dec, err := decodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(dec) != 1 || !reflect.DeepEqual(dec[0], e) {
		t.Fatalf("decoded %+v, want %+v", dec[0], e)
	}
}

func TestDecodeSnapshotRejectsCorruption(t *testing.T) {
	good := encodeSnapshot(map[int64]*Entry{
		1: {ProducerID: 1, Batches: []BatchMetadata{{0, 0, 3, 3, 7}}, CoordinatorEpoch: -1, LastTimestamp: 7, CurrentTxnFirstOffset: -1},
		2: {ProducerID: 2, CoordinatorEpoch: 3, LastTimestamp: 9, CurrentTxnFirstOffset: 4},
	})
	if _, err := decodeSnapshot(good); err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"empty":            {},
		"short header":     good[:9],
		"truncated entry":  good[:len(good)-1],
		"flipped bit":      flip(good, 20),
		"bad version":      withVersion(good, 2),
		"extra entry data": appendCRC(good, 3),
	}
	for name, b := range cases {
		if _, err := decodeSnapshot(b); !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("%s: error %v, want ErrCorruptSnapshot", name, err)
		}
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir, Options{})
	l.mustAppend(C, data(1, 0, 0, 2), data(1, 0, 2, 3)) // 0-1, 2-4
	l.mustAppend(C, data(1, 0, 5, 1))                   // 5
	l.mustAppend(C, txn(2, 4, 0, 2))                    // 6-7 ongoing
	l.mustAppend(Co, commit(3, 1, 9))                   // 8: marker-only producer
	l.mustAppend(C, txn(4, 2, 0, 1))                    // 9
	l.mustAppend(Co, abort(4, 2, 7))                    // 10
	if err := l.m.TakeSnapshot(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "00000000000000000011.snapshot")); err != nil {
		t.Fatalf("snapshot file: %v", err)
	}
	if off, ok := l.m.LatestSnapshotOffset(); !ok || off != 11 {
		t.Fatalf("LatestSnapshotOffset = %d, %v", off, ok)
	}

	m2 := reload(t, dir, 0, 11)
	if got := m2.MapEndOffset(); got != 11 {
		t.Fatalf("MapEndOffset after reload %d, want 11", got)
	}
	want := l.m.ActiveProducers()
	for i := range want {
		if n := len(want[i].Batches); n > 1 {
			want[i].Batches = want[i].Batches[n-1:]
		}
	}
	if got := m2.ActiveProducers(); !reflect.DeepEqual(got, want) {
		t.Fatalf("reloaded producers\n got  %+v\n want %+v", got, want)
	}
	if off, ok := m2.FirstUnstableOffset(); !ok || off != 6 {
		t.Fatalf("FirstUnstableOffset after reload = %d, %v; want 6 (producer 2's transaction)", off, ok)
	}
	// The last batch is still answered as a retry with its offsets; the
	// sequence continues from it.
	if d, ok := m2.FindDuplicate(mustHeader(data(1, 0, 5, 1))); !ok || d.FirstOffset != 5 || d.LastOffset != 5 {
		t.Fatalf("retry after reload: %+v %v", d, ok)
	}
	if d, ok := m2.FindDuplicate(mustHeader(data(1, 0, 2, 3))); ok {
		t.Fatalf("older batch survived the snapshot: %+v", d)
	}
	l2 := &testLog{t: t, m: m2, end: 11}
	l2.mustAppend(C, data(1, 0, 6, 1))
	if r := l2.append(C, txn(2, 4, 5, 1)); !errors.Is(r.err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("gap after reload: %+v", r)
	}
}

func TestCorruptSnapshotFallsBackToOlder(t *testing.T) {
	corruptions := map[string]func([]byte) []byte{
		"bad crc":   func(b []byte) []byte { return flip(b, len(b)-3) },
		"truncated": func(b []byte) []byte { return b[:len(b)-10] },
		"empty":     func([]byte) []byte { return nil },
		"version 9": func(b []byte) []byte { return withVersion(b, 9) },
	}
	for name, corrupt := range corruptions {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := newTestLog(t, dir, Options{})
			l.mustAppend(C, data(1, 0, 0, 5)) // 0-4
			l.mustAppend(C, txn(2, 0, 0, 5))  // 5-9
			if err := l.m.TakeSnapshot(); err != nil {
				t.Fatal(err)
			}
			atTen := l.m.ActiveProducers()
			l.mustAppend(C, data(3, 0, 0, 10)) // 10-19
			if err := l.m.TakeSnapshot(); err != nil {
				t.Fatal(err)
			}
			newest := filepath.Join(dir, SnapshotFileName(20))
			b, err := os.ReadFile(newest)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(newest, corrupt(b), 0o644); err != nil {
				t.Fatal(err)
			}

			logger, logs := captureLogger()
			m, err := NewManager(dir, Options{Logger: logger, Now: testNow})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.TruncateAndReload(0, 20); err != nil {
				t.Fatalf("a corrupt snapshot must not fail the reload: %v", err)
			}
			if got := m.MapEndOffset(); got != 10 {
				t.Fatalf("MapEndOffset %d, want 10 (the older snapshot)", got)
			}
			if got := m.ActiveProducers(); !reflect.DeepEqual(got, atTen) {
				t.Fatalf("state\n got  %+v\n want %+v", got, atTen)
			}
			if _, err := os.Stat(newest); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("corrupt snapshot not deleted: %v", err)
			}
			if !strings.Contains(logs.String(), SnapshotFileName(20)) {
				t.Fatalf("no log line naming the corrupt file; logs:\n%s", logs.String())
			}
		})
	}
}

func TestTruncateAndReloadKeepsSnapshotsInRange(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir, Options{})
	for _, n := range []int32{5, 5, 10} { // snapshots at 5, 10, 20
		l.mustAppend(R, data(int64(n), 0, 0, n))
		if err := l.m.TakeSnapshot(); err != nil {
			t.Fatal(err)
		}
	}
	m := reload(t, dir, 6, 15)
	if got := snapshotFiles(t, dir); !slices.Equal(got, []string{SnapshotFileName(10)}) {
		t.Fatalf("snapshot files %v, want only the one at 10", got)
	}
	if lo, _ := m.OldestSnapshotOffset(); lo != 10 {
		t.Fatalf("OldestSnapshotOffset %d", lo)
	}
	if m.MapEndOffset() != 10 {
		t.Fatalf("MapEndOffset %d, want 10", m.MapEndOffset())
	}

	// Nothing usable: empty state starting at the log start.
	m = reload(t, dir, 11, 30)
	if m.MapEndOffset() != 11 || len(m.ActiveProducers()) != 0 {
		t.Fatalf("MapEndOffset %d, producers %d; want 11 and none", m.MapEndOffset(), len(m.ActiveProducers()))
	}
	if _, ok := m.LatestSnapshotOffset(); ok {
		t.Fatal("snapshot left behind")
	}
}

func TestReloadSkipsExpiredProducers(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir, Options{})
	l.mustAppend(C, bt{kind: "data", pid: 1, ts: 1_000})
	l.mustAppend(C, bt{kind: "txn", pid: 2, ts: 1_000})
	l.mustAppend(C, bt{kind: "data", pid: 3, ts: 5_000_000})
	if err := l.m.TakeSnapshot(); err != nil {
		t.Fatal(err)
	}
	clock := &fixedClock{t: time.UnixMilli(1_000 + time.Hour.Milliseconds())}
	m, err := NewManager(dir, Options{ProducerIDExpiration: time.Hour, Now: clock.Now, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.TruncateAndReload(0, 3); err != nil {
		t.Fatal(err)
	}
	checkState(t, m, map[int64]ps{2: {0, [][2]int32{{0, 0}}, 1, -1}, 3: {0, [][2]int32{{0, 0}}, -1, -1}})
}

func TestTakeSnapshotIsAtomicAndIdempotent(t *testing.T) {
	dir := t.TempDir()
	stray := filepath.Join(dir, SnapshotFileName(42)+".tmp")
	if err := os.WriteFile(stray, []byte("half a snapshot"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l := newTestLog(t, dir, Options{})
	if _, err := os.Stat(stray); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stray temporary snapshot not removed: %v", err)
	}
	if _, ok := l.m.LatestSnapshotOffset(); ok {
		t.Fatal("a temporary file was listed as a snapshot")
	}
	l.mustAppend(C, data(1, 0, 0, 1))
	if err := l.m.TakeSnapshot(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, SnapshotFileName(1))
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l.mustAppend(C, data(2, 0, 0, 1))
	l.m.UpdateMapEndOffset(1)
	if err := l.m.TakeSnapshot(); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("TakeSnapshot rewrote an existing snapshot")
	}
	if got := snapshotFiles(t, dir); !slices.Equal(got, []string{SnapshotFileName(1)}) {
		t.Fatalf("files %v", got)
	}
}

func TestDeleteSnapshotsAndTruncateFully(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir, Options{})
	for i := 0; i < 3; i++ { // snapshots at 1, 2, 3
		l.mustAppend(C, data(1, 0, int32(i), 1))
		if err := l.m.TakeSnapshot(); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.m.DeleteSnapshotsBefore(3); err != nil {
		t.Fatal(err)
	}
	if got := snapshotFiles(t, dir); !slices.Equal(got, []string{SnapshotFileName(3)}) {
		t.Fatalf("after DeleteSnapshotsBefore(3): %v", got)
	}
	if err := l.m.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if got := snapshotFiles(t, dir); len(got) != 0 {
		t.Fatalf("after TruncateFullyAndStartAt: %v", got)
	}
	if l.m.MapEndOffset() != 100 || len(l.m.ActiveProducers()) != 0 {
		t.Fatal("TruncateFullyAndStartAt kept state")
	}
	if _, ok := l.m.FirstUnstableOffset(); ok {
		t.Fatal("TruncateFullyAndStartAt kept transactions")
	}
}

// TestResetSurvivesSnapshotAndReplay: a snapshot taken before a
// MIRROR_PID_RESET, reloaded and replayed through the reset, yields the same
// (empty-then-rebuilt) state as the live manager.
func TestResetSurvivesSnapshotAndReplay(t *testing.T) {
	dir := t.TempDir()
	l := newTestLog(t, dir, Options{})
	l.mustAppend(C, data(1, 0, 0, 3))
	l.mustAppend(C, txn(2, 0, 0, 1))
	if err := l.m.TakeSnapshot(); err != nil {
		t.Fatal(err)
	}
	l.mustAppend(R, reset())
	if n := len(l.m.ActiveProducers()); n != 0 {
		t.Fatalf("%d producers after reset", n)
	}

	m := reload(t, dir, 0, l.end)
	if m.MapEndOffset() != 4 || len(m.ActiveProducers()) != 2 {
		t.Fatalf("snapshot before the reset not loaded: end %d, %d producers", m.MapEndOffset(), len(m.ActiveProducers()))
	}
	l.replayInto(m, m.MapEndOffset())
	if n := len(m.ActiveProducers()); n != 0 {
		t.Fatalf("replay through MIRROR_PID_RESET left %d producers", n)
	}
	if _, ok := m.FirstUnstableOffset(); ok {
		t.Fatal("replay through MIRROR_PID_RESET left a transaction")
	}
	if m.MapEndOffset() != l.end {
		t.Fatalf("MapEndOffset %d, want %d", m.MapEndOffset(), l.end)
	}
}

func TestNewManagerWithoutDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	m, err := NewManager(dir, Options{})
	if err != nil {
		t.Fatalf("missing directory: %v", err)
	}
	if _, ok := m.LatestSnapshotOffset(); ok {
		t.Fatal("snapshots in a missing directory")
	}
	if err := m.TruncateAndReload(0, 10); err != nil || m.MapEndOffset() != 0 {
		t.Fatalf("reload: %v, end %d", err, m.MapEndOffset())
	}
	if err := m.TakeSnapshot(); err == nil {
		t.Fatal("TakeSnapshot into a missing directory succeeded")
	}
}

func reload(t *testing.T, dir string, logStart, logEnd int64) *Manager {
	t.Helper()
	m, err := NewManager(dir, Options{Logger: discardLogger(), Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.TruncateAndReload(logStart, logEnd); err != nil {
		t.Fatal(err)
	}
	return m
}

func snapshotFiles(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		if strings.Contains(de.Name(), ".snapshot") {
			out = append(out, de.Name())
		}
	}
	return out
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func flip(b []byte, i int) []byte {
	c := slices.Clone(b)
	c[i] ^= 0x40
	return c
}

func withVersion(b []byte, v byte) []byte {
	c := slices.Clone(b)
	c[0], c[1] = 0, v
	return c
}

// appendCRC adds n bytes after the entries and fixes the CRC, so only the
// length check can notice.
func appendCRC(b []byte, n int) []byte {
	c := append(slices.Clone(b), make([]byte, n)...)
	putTestCRC(c)
	return c
}
