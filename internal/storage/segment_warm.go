package storage

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Warming the page cache ahead of small appends.
//
// The kernel's cost of a buffered write depends on the write's size more
// than on the bytes it carries: appending a 16 KiB or 33 KB batch at the end
// of a file sets up page-cache memory (and ext4's delayed allocation) piece
// by piece, and costs about twice the kernel time per byte of the same
// bytes written into page cache that a larger write has already set up
// (measured in docs/benchmarks.md). So when small appends arrive quickly, the
// active segment extends its file with zeros a warmChunk at a time, ahead of
// the data, and the appends then overwrite those zeros. Readers never see
// them: reads stop at the published end of the log.
//
// The zeros past the data are cut off when the segment is sealed (roll,
// close, cleaning), truncated, or recovered after a crash (recover treats a
// zero-filled tail as the end of the data, not as corruption). Only logs
// without an explicit flush policy warm ahead: a flush would write the zeros
// to disk along with the data. Only segments whose appends filled the last
// warmChunk within warmWindow do, so a quiet partition never holds more
// than its data.

const (
	// warmChunk is how far ahead of the data the file is extended, and the
	// alignment of the zero-filled ranges.
	warmChunk = 256 << 10
	// warmMaxAppend is the largest append that warms ahead; larger writes
	// set up the page cache well by themselves.
	warmMaxAppend = 64 << 10
	// warmWindow: a segment warms ahead once its appends crossed two
	// warmChunk boundaries within this long.
	warmWindow = time.Second
)

// warmZeros is the source of the zero-filled ranges (never written to).
var warmZeros = make([]byte, warmChunk)

// Whether warming pays depends on the machine's memory: it sets up large
// page-cache folios, which are cheap from memory that is simply free or
// reclaimable, but can cost more than they save where every new page costs
// the kernel extra work (on this benchmark machine, a virtual machine that
// returns free memory to its host, writing a 256 KiB chunk of zeros took
// 40-600 µs depending on what ran before). So every zero write is timed,
// in the CPU time of the thread that makes it (wall time would count the
// moments other threads ran instead, frequent on a busy machine), and once
// their average (warmCost) is slower than warmSlowChunk per warmChunk,
// warming is off, for every segment, for warmBackoff; then it is tried
// again.
var (
	warmSlowChunk = 200 * time.Microsecond // about 1.3 GB/s
	warmBackoff   = 5 * time.Second
	warmOffUntil  atomic.Int64 // unix nanoseconds; warming is off before it
)

// threadCPU returns the CPU time of the calling thread, or 0 if unknown.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// warmOff reports whether warming is off (zero writes were recently slow on
// average).
func warmOff() bool { return time.Now().UnixNano() < warmOffUntil.Load() }

// warmCost is the moving average (weight 1/4 for the newest) of the CPU
// time of a zero write, per warmChunk, over every segment: one slow write
// (the first into a new file, a page-cache reclaim) does not decide, a run
// of them does.
var (
	warmCostMu sync.Mutex
	warmCost   time.Duration
)

// warmTimed records how long writing n bytes of zeros took, turning warming
// off for a while once zero writes are slower, on average, than warming
// pays. The average restarts when warming is turned back on.
func warmTimed(n int64, d time.Duration) {
	if n <= 0 {
		return
	}
	perChunk := time.Duration(int64(d) * warmChunk / n)
	warmCostMu.Lock()
	defer warmCostMu.Unlock()
	warmCost += (perChunk - warmCost) / 4
	if warmCost >= warmSlowChunk {
		warmOffUntil.Store(time.Now().Add(warmBackoff).UnixNano())
		warmCost = 0
	}
}

// warmAllowed reports whether a log with cfg may warm ahead: only without
// an explicit flush policy.
func warmAllowed(cfg LogConfig) bool {
	return cfg.FlushMessages == math.MaxInt64 && cfg.FlushMs == math.MaxInt64
}

// warmAhead extends the file with zeros up to the warmChunk boundary past
// an append of n bytes at pos, when the append is small, passes the zeros
// already there, and this segment's appends are fast enough (see above).
// Caller holds the Log's lock. A failure is not an error: the file is put
// back as it was and the append goes ahead unwarmed.
func (s *segment) warmAhead(pos, n int64, now time.Time) {
	end := pos + n
	if n > warmMaxAppend || end <= s.warmEnd {
		return
	}
	if chunk := end / warmChunk; chunk != s.warmChunkIdx {
		fast := !s.warmChunkAt.IsZero() && now.Sub(s.warmChunkAt) < warmWindow
		s.warmChunkIdx, s.warmChunkAt = chunk, now
		s.warmFast = fast
	}
	if !s.warmFast || warmOff() {
		return
	}
	from := max(s.warmEnd, pos)
	to := (end + warmChunk - 1) / warmChunk * warmChunk
	runtime.LockOSThread() // the thread whose CPU time threadCPU reads
	defer runtime.UnlockOSThread()
	start := threadCPU()
	for at := from; at < to; {
		k := min(to-at, int64(len(warmZeros)))
		if _, err := s.log.WriteAt(warmZeros[:k], at); err != nil {
			// Cut back to the data and what was zeroed before.
			_ = s.log.Truncate(max(pos, s.warmEnd))
			return
		}
		at += k
	}
	warmTimed(to-from, threadCPU()-start)
	s.warmEnd = to
	s.preallocated = true // seal cuts the zeros off
}

// warmReset records that the file now ends at size (truncated or recovered).
func (s *segment) warmReset(size int64) {
	s.warmEnd = size
	s.warmFast = false
	s.warmChunkAt = time.Time{}
}
