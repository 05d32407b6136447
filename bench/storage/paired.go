package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
)

// The command measures each scenario in paired runs: within one run, every
// log operation is timed right next to the raw operation on the same bytes
// (their order alternating), and each side's time is summed. On a machine
// shared with other jobs the load changes from second to second; pairing
// the operations makes both sides see the same load, so their ratio is far
// steadier than that of separate raw and log runs (what the Go benchmarks
// in storage_test.go do).

// sides is the time each side of a paired run spent and the bytes it moved:
// plain pwrite/pread (raw), the same with the log's warm-ahead (warm, see
// raw_warm.go) and the log.
type sides struct {
	raw, warm, log time.Duration
	bytes          int64
}

func (s sides) rawMBps() float64  { return float64(s.bytes) / s.raw.Seconds() / 1e6 }
func (s sides) warmMBps() float64 { return float64(s.bytes) / s.warm.Seconds() / 1e6 }
func (s sides) logMBps() float64  { return float64(s.bytes) / s.log.Seconds() / 1e6 }

// timed runs f and adds its duration to *d.
func timed(d *time.Duration, f func() error) error {
	start := time.Now()
	err := f()
	*d += time.Since(start)
	return err
}

// rawFiles creates the files of the two raw sides, name and name+"warm",
// in dir; done closes and removes them.
func rawFiles(dir, name string) (raw, warm *os.File, done func(), err error) {
	var fs []*os.File
	done = func() {
		for _, f := range fs {
			f.Close()
			os.Remove(f.Name())
		}
	}
	for _, n := range []string{name, name + "warm"} {
		f, err := os.OpenFile(filepath.Join(dir, n), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			done()
			return nil, nil, nil, err
		}
		fs = append(fs, f)
	}
	return fs[0], fs[1], done, nil
}

// pairedAppend appends sc.appends batches to a fresh log and pwrites the
// same bytes to a fresh raw file in the same directory (with an fdatasync
// per write when sc.sync, like flush.messages=1), one of each in turn.
func pairedAppend(sc scenario, dir string) (sides, error) {
	batch := makeBatch(sc.batchRecs)
	logDir := filepath.Join(dir, "log")
	l, err := openLog(logDir, sc.sync)
	if err != nil {
		return sides{}, err
	}
	defer l.Delete()
	f, wf, done, err := rawFiles(dir, "raw")
	if err != nil {
		return sides{}, err
	}
	defer done()

	var s sides
	var pos, next int64
	rawOp := func() error {
		if _, err := f.WriteAt(batch, pos); err != nil {
			return err
		}
		pos += int64(len(batch))
		if sc.sync {
			return unix.Fdatasync(int(f.Fd()))
		}
		return nil
	}
	ww := &warmWriter{f: wf, warm: !sc.sync}
	warmOp := func() error {
		if err := ww.write(batch); err != nil {
			return err
		}
		if sc.sync {
			return unix.Fdatasync(int(wf.Fd()))
		}
		return nil
	}
	logOp := func() error {
		if sc.follower {
			// The batch as a leader wrote it: offsets set, appended as is.
			record.SetBaseOffset(batch, next)
			next += int64(sc.batchRecs)
			_, err := l.AppendAsFollower(batch)
			return err
		}
		_, err := l.AppendAsLeader(batch, 0, storage.OriginClient)
		return err
	}
	settle()
	for i := range sc.appends {
		if err := pairedStep(i, &s, rawOp, warmOp, logOp); err != nil {
			return s, err
		}
		s.bytes += int64(len(batch))
	}
	return s, nil
}

// pairedRead reads readBytes of data sequentially, reads of readFetch bytes
// (whole batches, at least one) from a log and the same byte ranges with
// pread from a raw file holding the same batches, one of each in turn, with
// both in the page cache.
func pairedRead(sc scenario, dir string) (sides, error) {
	batch := makeBatch(sc.batchRecs)
	l, err := openLog(filepath.Join(dir, "readlog"), false)
	if err != nil {
		return sides{}, err
	}
	defer l.Delete()
	f, wf, done, err := rawFiles(dir, "readraw")
	if err != nil {
		return sides{}, err
	}
	defer done()
	ww := &warmWriter{f: wf, warm: true}
	var size int64
	for l.Size() < readBytes {
		if _, err := l.AppendAsLeader(batch, 0, storage.OriginClient); err != nil {
			return sides{}, err
		}
		if _, err := f.WriteAt(batch, size); err != nil {
			return sides{}, err
		}
		if err := ww.write(batch); err != nil {
			return sides{}, err
		}
		size += int64(len(batch))
	}
	// One pass over the data warms the page cache of both files the same
	// way and records the ranges the log returns (whole batches), which the
	// measured reads then cycle through, log and raw alike.
	type fetch struct {
		offset, pos int64
		n           int
	}
	var fetches []fetch
	logBuf := make([]byte, 0, 2*len(batch)+readFetch)
	rawBuf := make([]byte, 2*len(batch)+readFetch)
	var cur fetch
	logOp := func() error {
		res, err := l.Read(cur.offset, readFetch, storage.FetchLogEnd, true)
		if err != nil {
			return err
		}
		logBuf, err = res.AppendTo(logBuf[:0])
		res.Release()
		if err == nil && len(logBuf) != cur.n {
			err = fmt.Errorf("read at offset %d returned %d bytes, want %d", cur.offset, len(logBuf), cur.n)
		}
		return err
	}
	rawOp := func() error {
		_, err := f.ReadAt(rawBuf[:cur.n], cur.pos)
		return err
	}
	warmOp := func() error {
		_, err := wf.ReadAt(rawBuf[:cur.n], cur.pos)
		return err
	}
	for off, pos := int64(0), int64(0); off < l.LogEndOffset(); {
		res, err := l.Read(off, readFetch, storage.FetchLogEnd, true)
		if err != nil {
			return sides{}, err
		}
		logBuf, err = res.AppendTo(logBuf[:0])
		res.Release()
		if err != nil {
			return sides{}, err
		}
		if len(logBuf) == 0 {
			return sides{}, fmt.Errorf("read at offset %d returned nothing", off)
		}
		cur = fetch{offset: off, pos: pos, n: len(logBuf)}
		if err := rawOp(); err != nil {
			return sides{}, err
		}
		if err := warmOp(); err != nil {
			return sides{}, err
		}
		fetches = append(fetches, cur)
		off += int64(cur.n/len(batch)) * int64(sc.batchRecs)
		pos += int64(cur.n)
	}
	settle()
	var s sides
	for i := range reads {
		cur = fetches[i%len(fetches)]
		if err := pairedStep(i, &s, rawOp, warmOp, logOp); err != nil {
			return s, err
		}
		s.bytes += int64(cur.n)
	}
	return s, nil
}

// pairedStep runs one operation of each side, rotating which goes first so
// that none always finds another's after-effects (a warm cache, a queued
// writeback).
func pairedStep(i int, s *sides, rawOp, warmOp, logOp func() error) error {
	steps := []struct {
		d    *time.Duration
		op   func() error
		name string
	}{{&s.raw, rawOp, "raw"}, {&s.warm, warmOp, "raw warm"}, {&s.log, logOp, "log"}}
	for k := range steps {
		st := steps[(i+k)%len(steps)]
		if err := timed(st.d, st.op); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
	}
	return nil
}
