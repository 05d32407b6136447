package producerstate

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/record"
)

// Attribute bits of Kafka's record batch v2 (bit 4 transactional, bit 5 control).
const (
	attrTransactional = 0x10
	attrControl       = 0x20
)

// bt describes one batch of a test log; offsets are assigned by the harness.
type bt struct {
	kind  string // "data", "txn", "commit", "abort", "reset", "leader", "plain", "emptyctl", "ctl9"
	pid   int64
	epoch int16
	seq   int32
	n     int32 // records; 0 means 1
	coord int32 // coordinator epoch of a marker
	ts    int64 // max timestamp; 0 means 1000
}

func data(pid int64, epoch int16, seq, n int32) bt {
	return bt{kind: "data", pid: pid, epoch: epoch, seq: seq, n: n}
}

func txn(pid int64, epoch int16, seq, n int32) bt {
	return bt{kind: "txn", pid: pid, epoch: epoch, seq: seq, n: n}
}

func commit(pid int64, epoch int16, coord int32) bt {
	return bt{kind: "commit", pid: pid, epoch: epoch, coord: coord}
}

func abort(pid int64, epoch int16, coord int32) bt {
	return bt{kind: "abort", pid: pid, epoch: epoch, coord: coord}
}

func reset() bt { return bt{kind: "reset"} }

// header builds the batch header at offset off, and the control type and
// coordinator epoch the Log would pass to Add.
func (b bt) header(off int64) (record.Header, record.ControlType, int32) {
	n := b.n
	if n == 0 {
		n = 1
	}
	ts := b.ts
	if ts == 0 {
		ts = 1000
	}
	h := record.Header{
		BaseOffset:      off,
		LastOffsetDelta: n - 1,
		Magic:           2,
		MaxTimestamp:    ts,
		BaseTimestamp:   ts,
		ProducerID:      b.pid,
		ProducerEpoch:   b.epoch,
		BaseSequence:    b.seq,
		NumRecords:      n,
	}
	ctl := record.ControlType(-1)
	switch b.kind {
	case "data":
	case "txn":
		h.Attributes = attrTransactional
	case "commit", "abort":
		h.Attributes = attrTransactional | attrControl
		h.BaseSequence, h.LastOffsetDelta, h.NumRecords = -1, 0, 1
		ctl = record.ControlCommit
		if b.kind == "abort" {
			ctl = record.ControlAbort
		}
	case "reset":
		h.Attributes = attrControl
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = -1, -1, -1
		h.LastOffsetDelta, h.NumRecords = 0, 1
		ctl = record.ControlMirrorPIDReset
	case "leader":
		h.Attributes = attrControl
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = -1, -1, -1
		h.LastOffsetDelta, h.NumRecords = 0, 1
		ctl = record.ControlLeaderChange
	case "plain":
		h.ProducerID, h.ProducerEpoch, h.BaseSequence = -1, -1, -1
	case "emptyctl":
		h.Attributes = attrTransactional | attrControl
		h.BaseSequence, h.NumRecords = -1, 0
	case "ctl9":
		h.Attributes = attrTransactional | attrControl
		h.BaseSequence, h.LastOffsetDelta, h.NumRecords = -1, 0, 1
		ctl = record.ControlType(9)
	default:
		panic("unknown test batch kind " + b.kind)
	}
	return h, ctl, b.coord
}

// testLog drives a Manager the way the partition Log does: it assigns
// offsets, answers client retries through FindDuplicate, validates with Add,
// "writes" the batches (advancing its end offset) and commits, then records
// the .txnindex entries of aborted transactions.
type testLog struct {
	t       testing.TB
	m       *Manager
	end     int64
	aborted []AbortedTxn
	hist    []bt // every batch written, in log order (for replay tests)
}

func newTestLog(t testing.TB, dir string, opts Options) *testLog {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = discardLogger()
	}
	m, err := NewManager(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &testLog{t: t, m: m}
}

// appendResult is what one append did.
type appendResult struct {
	err       error
	dup       *BatchMetadata
	completed []CompletedTxn
	lsos      []int64 // LastStableOffsetAfter of each completed txn
}

func (l *testLog) append(origin Origin, batches ...bt) appendResult {
	var r appendResult
	if origin == OriginClient && len(batches) > 0 {
		h, _, _ := batches[0].header(0)
		if d, ok := l.m.FindDuplicate(h); ok {
			r.dup = &d
			return r
		}
	}
	a := l.m.NewAppend(origin)
	off := l.end
	for _, b := range batches {
		h, ctl, ce := b.header(off)
		if err := a.Add(h, ctl, ce); err != nil {
			r.err = err
			l.m.Commit(a) // must be ignored
			return r
		}
		off = h.NextOffset()
	}
	l.end = off
	l.hist = append(l.hist, batches...)
	l.m.Commit(a)
	r.completed = a.CompletedTxns()
	for _, ct := range r.completed {
		lso := l.m.LastStableOffsetAfter(ct)
		r.lsos = append(r.lsos, lso)
		if ct.Aborted {
			l.aborted = append(l.aborted, AbortedTxn{ct.ProducerID, ct.FirstOffset, ct.MarkerOffset, lso})
		}
	}
	return r
}

// mustAppend appends and fails the test on a validation error.
func (l *testLog) mustAppend(origin Origin, batches ...bt) appendResult {
	l.t.Helper()
	r := l.append(origin, batches...)
	if r.err != nil {
		l.t.Fatalf("append %v: %v", batches, r.err)
	}
	if r.dup != nil {
		l.t.Fatalf("append %v: unexpected duplicate %+v", batches, *r.dup)
	}
	return r
}

// replay applies the whole history to a fresh manager of dir from offset 0 as
// recovery would (OriginReplication, one batch per append).
func (l *testLog) replayInto(m *Manager, from int64) {
	l.t.Helper()
	off := int64(0)
	for _, b := range l.hist {
		h, ctl, ce := b.header(off)
		off = h.NextOffset()
		if h.BaseOffset < from {
			continue
		}
		a := m.NewAppend(OriginReplication)
		if err := a.Add(h, ctl, ce); err != nil {
			l.t.Fatalf("replay at %d: %v", h.BaseOffset, err)
		}
		m.Commit(a)
	}
}

// testNow is a clock shortly after the default batch timestamp (1000 ms), so
// reloaded test producers are not expired.
func testNow() time.Time { return time.UnixMilli(1000 + 60_000) }

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// putTestCRC recomputes a snapshot's CRC field (test corpora and corruptions).
func putTestCRC(b []byte) {
	binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], crc32.MakeTable(crc32.Castagnoli)))
}

// fixedClock is a settable clock for expiry tests.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// captureLogger returns a logger whose output accumulates in the returned buffer.
func captureLogger() (*slog.Logger, *lockedBuffer) {
	var b lockedBuffer
	return slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})), &b
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
