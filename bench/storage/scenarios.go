// Command storage benchmarks kmirror's partition log against the raw file
// system: appends of 1 KiB records in 16 KiB and 1 MiB batches, and
// sequential reads of the same data, each paired operation by operation
// with plain pwrite/pread of the same bytes to/from files in the same
// directory, under the same fsync policy, and with pwrite/pread of a file
// written with the log's warm-ahead (paired.go, raw_warm.go). It prints each side's
// throughput, their ratio and the spread between runs. The same scenarios
// are Go benchmarks in storage_test.go (separate raw and log runs, for
// profiling).
package main

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
)

// recordSize is the size of each record's value.
const recordSize = 1024

// scenario is one benchmark: a batch size and an fsync policy.
type scenario struct {
	name      string
	batchRecs int  // records of recordSize per batch
	sync      bool // fsync after every append (flush.messages=1) on both sides
	follower  bool // append as a follower/mirror (offsets kept, CRC-checked only)
	// appends is how many batches one measured append run writes: a fixed
	// amount of data (below one 1 GiB segment, so no roll and its fsync of
	// the old segment lands in the window), the same for both sides.
	appends int
}

var scenarios = []scenario{
	{"16KiB", 16, false, false, 40000},         // ~640 MiB
	{"1MiB", 1024, false, false, 600},          // ~640 MiB
	{"16KiB-follower", 16, false, true, 40000}, // a mirror's or follower's appends
	{"1MiB-follower", 1024, false, true, 600},  //
	{"16KiB-fsync", 16, true, false, 3000},     // ~50 MiB, 3000 fsyncs
	{"1MiB-fsync", 1024, true, false, 300},     // ~320 MiB, 300 fsyncs
}

// reads is how many fetches one measured read run makes.
const reads = 4096

// makeBatch builds one uncompressed batch of n records of recordSize random
// bytes (random so no layer below can compress it away).
func makeBatch(n int) []byte {
	recs := make([]record.Record, n)
	for i := range recs {
		v := make([]byte, recordSize)
		_, _ = rand.Read(v)
		recs[i] = record.Record{Key: []byte(fmt.Sprintf("key-%06d", i)), Value: v}
	}
	record.NumberRecords(recs)
	b, err := record.Build(record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, BaseTimestamp: time.Now().UnixMilli()}, recs)
	if err != nil {
		panic(err)
	}
	return b
}

func logConfig(sync bool) storage.LogConfig {
	cfg := storage.DefaultLogConfig()
	cfg.MaxMessageBytes = 4 << 20
	cfg.FileDeleteDelayMs = 0
	cfg.MessageTimestampAfterMaxMs = math.MaxInt64
	cfg.MessageTimestampBeforeMaxMs = math.MaxInt64
	if sync {
		cfg.FlushMessages = 1
	}
	return cfg
}

func openLog(dir string, sync bool) (*storage.Log, error) {
	return storage.Open(dir, storage.TopicPartition{Topic: "bench", Partition: 0}, logConfig(sync), storage.Options{Logger: slog.New(slog.DiscardHandler)})
}

// benchLogAppend appends the batch b.N times as a leader.
func benchLogAppend(b *testing.B, sc scenario, dir string) {
	batch := makeBatch(sc.batchRecs)
	l, err := openLog(filepath.Join(dir, "log"), sc.sync)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		l.Delete()
	}()
	b.SetBytes(int64(len(batch)))
	settle()
	b.ResetTimer()
	next := int64(0)
	for i := 0; i < b.N; i++ {
		if sc.follower {
			// The batch as a leader wrote it: offsets set, appended as is.
			record.SetBaseOffset(batch, next)
			next += int64(sc.batchRecs)
			if _, err := l.AppendAsFollower(batch); err != nil {
				b.Fatal(err)
			}
			continue
		}
		if _, err := l.AppendAsLeader(batch, 0, storage.OriginClient); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
}

// rawSegmentBytes is where the raw side starts a new file, like the log's
// default segment.bytes.
const rawSegmentBytes = 1 << 30

// benchRawAppend pwrites the same bytes b.N times into 1 GiB files, syncing
// each finished file in the background as the log does at a roll.
func benchRawAppend(b *testing.B, sc scenario, dir string) {
	batch := makeBatch(sc.batchRecs)
	rawDir := filepath.Join(dir, "raw")
	if err := os.MkdirAll(rawDir, 0o755); err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(rawDir)
	var f *os.File
	var pos int64
	// Like the log at a roll, sync a finished file in the background.
	var bg sync.WaitGroup
	defer bg.Wait()
	next := func(i int) {
		if f != nil {
			old := f
			bg.Go(func() {
				_ = unix.Fdatasync(int(old.Fd()))
				old.Close()
			})
		}
		var err error
		f, err = os.OpenFile(filepath.Join(rawDir, fmt.Sprintf("%020d.raw", i)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		pos = 0
	}
	next(0)
	defer func() { f.Close() }()
	defer bg.Wait()
	b.SetBytes(int64(len(batch)))
	settle()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if pos+int64(len(batch)) > rawSegmentBytes {
			next(i)
		}
		if _, err := f.WriteAt(batch, pos); err != nil {
			b.Fatal(err)
		}
		pos += int64(len(batch))
		if sc.sync {
			if err := unix.Fdatasync(int(f.Fd())); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
}

// readBytes is how much data the read benchmarks cycle through.
const readBytes = 256 << 20

// readFetch is the bytes asked for per read: a consumer's default
// max.partition.fetch.bytes.
const readFetch = 1 << 20

// benchLogRead reads the log sequentially in fetches of readFetch bytes
// (whole batches, at least one) into a reused buffer.
func benchLogRead(b *testing.B, sc scenario, dir string) {
	batch := makeBatch(sc.batchRecs)
	l, err := openLog(filepath.Join(dir, "readlog"), false)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Delete()
	for l.Size() < readBytes {
		if _, err := l.AppendAsLeader(batch, 0, storage.OriginClient); err != nil {
			b.Fatal(err)
		}
	}
	buf := make([]byte, 0, 2*len(batch)+readFetch)
	read := func(off int64) (int64, int) {
		res, err := l.Read(off, readFetch, storage.FetchLogEnd, true)
		if err != nil {
			b.Fatal(err)
		}
		buf, err = res.AppendTo(buf[:0])
		res.Release()
		if err != nil {
			b.Fatal(err)
		}
		return res.FirstOffset, len(buf)
	}
	// Warm the page cache the same way the raw side is warmed.
	for off := int64(0); off < l.LogEndOffset(); {
		_, n := read(off)
		off += int64(n/len(batch)) * int64(sc.batchRecs)
	}
	settle()
	b.ResetTimer()
	var total int64
	off := int64(0)
	for i := 0; i < b.N; i++ {
		if off >= l.LogEndOffset() {
			off = 0
		}
		_, n := read(off)
		off += int64(n/len(batch)) * int64(sc.batchRecs)
		total += int64(n)
	}
	b.StopTimer()
	b.SetBytes(total / int64(b.N))
}

// benchRawRead preads the same bytes sequentially, in reads of the size the
// log returned (readFetch rounded down to whole batches, at least one).
func benchRawRead(b *testing.B, sc scenario, dir string) {
	batch := makeBatch(sc.batchRecs)
	p := filepath.Join(dir, "readraw")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(p)
	defer f.Close()
	var size int64
	for size < readBytes {
		if _, err := f.WriteAt(batch, size); err != nil {
			b.Fatal(err)
		}
		size += int64(len(batch))
	}
	chunk := int64(readFetch/len(batch)) * int64(len(batch))
	if chunk == 0 {
		chunk = int64(len(batch))
	}
	buf := make([]byte, chunk)
	for pos := int64(0); pos < size; pos += chunk {
		f.ReadAt(buf[:min(chunk, size-pos)], pos)
	}
	settle()
	b.ResetTimer()
	var total int64
	pos := int64(0)
	for i := 0; i < b.N; i++ {
		if pos >= size {
			pos = 0
		}
		n := min(chunk, size-pos)
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			b.Fatal(err)
		}
		pos += n
		total += n
	}
	b.StopTimer()
	b.SetBytes(total / int64(b.N))
}

// settle writes back all dirty pages before a measurement, so that neither
// side pays for the other's writeback (the kernel throttles writers once
// dirty pages pile up).
func settle() {
	unix.Sync()
}
