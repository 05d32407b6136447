//go:build linux

package server

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxSendfileChunk bounds one sendfile call; Linux sends at most about 2 GiB
// per call anyway.
const maxSendfileChunk = 1 << 30

// sendFile sends the file range [pos, pos+n) to nc with sendfile(2), which
// copies from the page cache to the socket inside the kernel. It uses an
// explicit offset, so concurrent readers of the same segment file do not
// race on the file position. A socket that is not writable yet (EAGAIN)
// waits through the runtime's poller, honouring nc's write deadline.
// Connections that are not sockets, and files sendfile refuses, are served
// by copying.
func sendFile(nc net.Conn, f *os.File, pos, n int64) error {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return copyFile(nc, f, pos, n)
	}
	out, err := sc.SyscallConn()
	if err != nil {
		return copyFile(nc, f, pos, n)
	}
	in, err := f.SyscallConn()
	if err != nil {
		return copyFile(nc, f, pos, n)
	}
	var written int64
	var opErr error
	unsupported := false
	ctrlErr := in.Control(func(infd uintptr) {
		werr := out.Write(func(outfd uintptr) bool {
			for written < n {
				off := pos + written
				m, e := unix.Sendfile(int(outfd), int(infd), &off, int(min(n-written, maxSendfileChunk)))
				if m > 0 {
					written += int64(m)
				}
				switch {
				case e == unix.EAGAIN:
					return false
				case e == unix.EINTR:
					continue
				case e == unix.EINVAL || e == unix.ENOSYS || e == unix.EOPNOTSUPP:
					unsupported = true
					return true
				case e != nil:
					opErr = fmt.Errorf("sendfile: %w", e)
					return true
				case m == 0:
					opErr = fmt.Errorf("file range ends after %d of %d bytes: %w", written, n, io.ErrUnexpectedEOF)
					return true
				}
			}
			return true
		})
		if opErr == nil {
			opErr = werr
		}
	})
	if err := errors.Join(ctrlErr, opErr); err != nil {
		return err
	}
	if unsupported {
		return copyFile(nc, f, pos+written, n-written)
	}
	return nil
}
