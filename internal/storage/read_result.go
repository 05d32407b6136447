package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/kmirror/kmirror/internal/storage/producerstate"
)

// Chunk is a byte range of a segment file: whole batches, to be sent with
// sendfile(2) from File at Pos (not from the file's current offset, which
// the log does not use).
type Chunk struct {
	File     *os.File
	Pos, Len int64
}

// ReadResult is what Log.Read returns: byte ranges of segment files holding
// whole batches, and the offsets as seen at the read. It holds references
// on its segments: call Release when the bytes have been sent.
type ReadResult struct {
	Chunks []Chunk
	// Size is the total length of the chunks.
	Size int64
	// AbortedTxns lists, for FetchTxnCommitted reads, the aborted
	// transactions overlapping the returned range.
	AbortedTxns []producerstate.AbortedTxn
	// The partition's offsets as seen at the read.
	HighWatermark, LastStableOffset, LogStartOffset, LogEndOffset int64
	// FirstOffset is the base offset of the first returned batch, -1 if
	// none.
	FirstOffset int64

	segs     []*segment
	released sync.Once
}

// Release drops the result's references on its segments; the chunks must not
// be used afterwards. It is safe to call more than once, and on nil.
func (r *ReadResult) Release() {
	if r == nil {
		return
	}
	r.released.Do(func() {
		for _, s := range r.segs {
			s.release()
		}
		r.segs = nil
	})
}

// AppendTo appends the result's bytes to dst, reading them straight into
// dst's spare capacity (grown if needed).
func (r *ReadResult) AppendTo(dst []byte) ([]byte, error) {
	n := len(dst)
	if int64(cap(dst)-n) < r.Size {
		nd := make([]byte, n, int64(n)+r.Size)
		copy(nd, dst)
		dst = nd
	}
	dst = dst[:int64(n)+r.Size]
	p := dst[n:]
	for _, c := range r.Chunks {
		got, err := c.File.ReadAt(p[:c.Len], c.Pos)
		if int64(got) < c.Len {
			if err == nil || errors.Is(err, io.EOF) {
				err = ErrTruncatedDuringRead
			}
			return dst[:n], fmt.Errorf("read chunk at position %d: %w", c.Pos, err)
		}
		p = p[c.Len:]
	}
	return dst, nil
}

// Bytes returns a copy of the result's bytes.
func (r *ReadResult) Bytes() ([]byte, error) {
	return r.AppendTo(make([]byte, 0, r.Size))
}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// WriteTo writes the result's bytes to w. If w is a socket (it implements
// syscall.Conn and is not a regular file), the bytes go with sendfile(2)
// without passing through user space; otherwise they are copied. If a
// segment was truncated since the read, it fails with
// ErrTruncatedDuringRead after writing fewer bytes than Size: the caller must
// then drop the connection, as Kafka does.
func (r *ReadResult) WriteTo(w io.Writer) (int64, error) {
	if sc, ok := w.(syscall.Conn); ok {
		if _, isFile := w.(*os.File); !isFile {
			if rc, err := sc.SyscallConn(); err == nil {
				return r.sendfile(rc)
			}
		}
	}
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	buf := *bp
	var total int64
	for _, c := range r.Chunks {
		for done := int64(0); done < c.Len; {
			n := min(int64(len(buf)), c.Len-done)
			got, err := c.File.ReadAt(buf[:n], c.Pos+done)
			if int64(got) < n {
				if err == nil || errors.Is(err, io.EOF) {
					err = ErrTruncatedDuringRead
				}
				return total, err
			}
			m, err := w.Write(buf[:n])
			total += int64(m)
			if err != nil {
				return total, err
			}
			done += n
		}
	}
	return total, nil
}

func (r *ReadResult) sendfile(rc syscall.RawConn) (int64, error) {
	var total int64
	for _, c := range r.Chunks {
		src := int(c.File.Fd())
		var done int64
		var serr error
		err := rc.Write(func(fd uintptr) bool {
			for done < c.Len {
				off := c.Pos + done
				n, e := unix.Sendfile(int(fd), src, &off, int(min(c.Len-done, 1<<30)))
				if n > 0 {
					done += int64(n)
					total += int64(n)
				}
				switch {
				case e == unix.EAGAIN:
					return false // wait until the socket is writable
				case e == unix.EINTR:
				case e != nil:
					serr = e
					return true
				case n == 0:
					serr = ErrTruncatedDuringRead
					return true
				}
			}
			return true
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			return total, fmt.Errorf("sendfile: %w", err)
		}
	}
	return total, nil
}
