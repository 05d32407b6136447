//go:build !linux

package server

import (
	"net"
	"os"
)

// sendFile sends the file range [pos, pos+n) to nc by copying it: kmirror
// uses sendfile(2) only on Linux, where its semantics (explicit offset,
// partial sends) are the ones sendfile_linux.go relies on.
func sendFile(nc net.Conn, f *os.File, pos, n int64) error {
	return copyFile(nc, f, pos, n)
}
