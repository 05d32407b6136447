package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage/producerstate"
)

// testClock is a settable clock for deterministic tests.
type testClock struct{ ms atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ms.Store(1_700_000_000_000)
	return c
}

func (c *testClock) Now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *testClock) Advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }
func (c *testClock) Ms() int64               { return c.ms.Load() }

// quietLogger drops log output unless KMIRROR_TEST_LOG is set.
func quietLogger() *slog.Logger {
	if os.Getenv("KMIRROR_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// smallConfig is a config with tiny segments and indexes so that tests roll
// and index often.
func smallConfig() LogConfig {
	c := DefaultLogConfig()
	c.SegmentBytes = 4096
	c.SegmentIndexBytes = 1024
	c.IndexIntervalBytes = 256
	c.FileDeleteDelayMs = 0
	c.MessageTimestampAfterMaxMs = math.MaxInt64
	return c
}

func openLog(t testing.TB, dir string, cfg LogConfig, opts Options) *Log {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	l, err := Open(dir, TopicPartition{Topic: "t", Partition: 0}, cfg, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return l
}

// batchSpec describes a test batch.
type batchSpec struct {
	records    int
	valueSize  int
	ts         int64
	pid        int64
	epoch      int16
	seq        int32
	txn        bool
	codec      record.Codec
	keyPrefix  string
	nullValue  bool
	baseOffset int64
	leaderEp   int32
}

func plain(n int, ts int64) batchSpec {
	return batchSpec{records: n, valueSize: 64, ts: ts, pid: -1, epoch: -1, seq: -1, leaderEp: -1}
}

func mkBatch(t testing.TB, s batchSpec) []byte {
	t.Helper()
	recs := make([]record.Record, s.records)
	for i := range recs {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, s.valueSize)
		if s.nullValue {
			v = nil
		}
		recs[i] = record.Record{
			TimestampDelta: int64(i),
			Key:            []byte(fmt.Sprintf("%sk%d", s.keyPrefix, i)),
			Value:          v,
		}
	}
	record.NumberRecords(recs)
	b, err := record.Build(record.BatchSpec{
		BaseOffset:           s.baseOffset,
		PartitionLeaderEpoch: s.leaderEp,
		ProducerID:           s.pid,
		ProducerEpoch:        s.epoch,
		BaseSequence:         s.seq,
		Transactional:        s.txn,
		Codec:                s.codec,
		BaseTimestamp:        s.ts,
	}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// followerBatch builds a batch as a leader would have written it.
func followerBatch(t testing.TB, base int64, n int, leaderEpoch int32, ts int64) []byte {
	s := plain(n, ts)
	s.baseOffset = base
	s.leaderEp = leaderEpoch
	return mkBatch(t, s)
}

// logBatches reads every batch of the log (from its start, up to its end).
func logBatches(t testing.TB, l *Log) [][]byte {
	t.Helper()
	var out [][]byte
	off := l.LogStartOffset()
	for off < l.LogEndOffset() {
		res, err := l.Read(off, 1<<20, FetchLogEnd, true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		b, err := res.Bytes()
		res.Release()
		if err != nil {
			t.Fatalf("read bytes at %d: %v", off, err)
		}
		if len(b) == 0 {
			break
		}
		for len(b) > 0 {
			batch, rest, err := record.NextBatch(b)
			if err != nil {
				t.Fatalf("read at %d: %v", off, err)
			}
			out = append(out, batch)
			h, _ := record.ParseHeader(batch)
			off = h.NextOffset()
			b = rest
		}
	}
	return out
}

func headerOf(t testing.TB, b []byte) record.Header {
	t.Helper()
	h, err := record.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// replayProducers computes the producer state of a sequence of batches the
// way a fresh replica would (OriginReplication from an empty state).
func replayProducers(t testing.TB, batches [][]byte) []producerstate.Entry {
	t.Helper()
	m, err := producerstate.NewManager(filepath.Join(t.TempDir(), "replay"), producerstate.Options{
		ProducerIDExpiration: 1000 * 24 * time.Hour, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		h := headerOf(t, b)
		ctl, ce := controlInfo(h, b, quietLogger())
		a := m.NewAppend(producerstate.OriginReplication)
		if err := a.Add(h, ctl, ce); err != nil {
			t.Fatalf("replay: %v", err)
		}
		m.Commit(a)
	}
	return m.ActiveProducers()
}

// checkInvariants verifies the invariants listed in log.go.
func checkInvariants(t testing.TB, l *Log) {
	t.Helper()
	if err := verifyInvariants(l); err != nil {
		t.Fatal(err)
	}
}

func verifyInvariants(l *Log) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	segs := l.segments()
	if len(segs) == 0 {
		return errors.New("no segments")
	}
	leo := l.LogEndOffset()
	prevNext := int64(-1)
	for i, s := range segs {
		if i > 0 && s.base < segs[i-1].base {
			return fmt.Errorf("segments out of order")
		}
		size := s.size.Load()
		sc := newHeaderScanner(s.log, 0, size)
		next := s.base
		for sc.next() {
			h := sc.h
			if h.BaseOffset < s.base || h.BaseOffset <= prevNext-1 && prevNext >= 0 && h.BaseOffset < prevNext {
				sc.release()
				return fmt.Errorf("segment %d: batch at %d does not follow %d", s.base, h.BaseOffset, prevNext)
			}
			if i+1 < len(segs) && h.LastOffset() >= segs[i+1].base {
				sc.release()
				return fmt.Errorf("segment %d: batch %d..%d reaches the next segment %d", s.base, h.BaseOffset, h.LastOffset(), segs[i+1].base)
			}
			prevNext = h.NextOffset()
			next = prevNext
		}
		err := sc.Err()
		sc.release()
		if err != nil {
			return fmt.Errorf("segment %d: %v", s.base, err)
		}
		if st, err := s.log.Stat(); err != nil || (st.Size() != size && !s.preallocated) {
			return fmt.Errorf("segment %d: file size differs from published size %d", s.base, size)
		}
		if ix := s.idx.Load(); ix != nil {
			if _, p, ok := ix.off.last(); ok && p >= size {
				return fmt.Errorf("segment %d: index entry at %d past the end %d", s.base, p, size)
			}
			// Every index entry must point at a batch start whose last
			// offset is the entry's offset.
			ix.off.f.mu.RLock()
			n := ix.off.f.entries()
			for j := int64(0); j < n; j++ {
				o, p := ix.off.parse(j)
				var hb [record.HeaderSize]byte
				if _, err := s.log.ReadAt(hb[:], p); err != nil {
					ix.off.f.mu.RUnlock()
					return fmt.Errorf("segment %d: index entry %d: %v", s.base, j, err)
				}
				h, err := record.ParseHeader(hb[:])
				if err != nil || h.LastOffset() != o {
					ix.off.f.mu.RUnlock()
					return fmt.Errorf("segment %d: index entry (%d,%d) does not match batch %+v (%v)", s.base, o, p, h, err)
				}
			}
			ix.off.f.mu.RUnlock()
		}
		if i == len(segs)-1 && next != leo {
			return fmt.Errorf("log end offset %d, last segment ends at %d", leo, next)
		}
	}
	ents := l.epochs.entries()
	for i, e := range ents {
		if e.StartOffset > leo {
			return fmt.Errorf("epoch entry %+v beyond the log end %d", e, leo)
		}
		if i > 0 && (e.Epoch <= ents[i-1].Epoch || e.StartOffset < ents[i-1].StartOffset) {
			return fmt.Errorf("epoch entries out of order: %+v", ents)
		}
	}
	ls, hw, lso := l.logStart.Load(), l.hw.Load(), l.LastStableOffset()
	if !(ls <= hw && hw <= leo) {
		return fmt.Errorf("offsets: logStart %d, hw %d, leo %d", ls, hw, leo)
	}
	if !(ls <= lso && lso <= hw) {
		return fmt.Errorf("offsets: logStart %d, lso %d, hw %d", ls, lso, hw)
	}
	if rp := l.recoveryPoint.Load(); rp > leo {
		return fmt.Errorf("recovery point %d beyond leo %d", rp, leo)
	}
	if ls < segs[0].base {
		return fmt.Errorf("log start %d below the first segment %d", ls, segs[0].base)
	}
	return nil
}

// crash drops a log's process state without any of Close's work (no flush,
// no snapshot, no index trimming): what a killed process leaves behind,
// minus the page cache loss, which the torn-tail tests simulate.
func crash(l *Log) {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.bg.Wait()
	l.delMu.Lock()
	for t := range l.pending {
		t.Stop()
	}
	l.pending = nil
	l.delMu.Unlock()
	for _, s := range l.segments() {
		s.deleted.Store(true) // close without trimming, as a crash would
		s.release()
	}
}
