package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"time"
)

// tlsHandshakeTimeout bounds a TLS handshake on accept, so that a client
// that connects and stalls does not hold a connection goroutine.
const tlsHandshakeTimeout = 10 * time.Second

// prefixConn is a connection whose first bytes were already read (the
// sniffed ones) and are served again before the rest of the stream.
type prefixConn struct {
	net.Conn
	r io.Reader
}

func (c *prefixConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// tlsHandshake runs the server side of TLS on an accepted connection whose
// first bytes (sniffed, part of the ClientHello) are first, and returns the
// TLS connection and its principal (from the client certificate).
func (s *netServer) tlsHandshake(l *boundListener, nc net.Conn, first []byte) (net.Conn, string, error) {
	pc := &prefixConn{Conn: nc, r: io.MultiReader(bytes.NewReader(first), nc)}
	tc := tls.Server(pc, l.sec.TLS)
	timeout := tlsHandshakeTimeout
	if s.limits.idleTimeout > 0 {
		timeout = min(timeout, s.limits.idleTimeout)
	}
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, "", err
	}
	_ = nc.SetReadDeadline(time.Time{})
	principal, err := l.sec.TLSPrincipal(tc.ConnectionState())
	if err != nil {
		return nil, "", err
	}
	return tc, principal, nil
}
