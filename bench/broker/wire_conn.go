package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"
)

// The "wire" load generators talk Kafka's framing directly over TCP, with no
// client library: requests are encoded once up front and written as they are,
// responses are read into a reused buffer and only their headers and error
// codes are looked at. What limits them is the broker (and the machine), not a
// client's batching, compression or record decoding.

// maxWireResponse bounds a response frame the generators accept: a broker
// announcing more is broken, and the generator must not allocate it.
const maxWireResponse = 256 << 20

// wireClientID is the client id of every generator request.
const wireClientID = "kmirror-bench-wire"

// wireConn is one TCP connection to a broker. A writer and a reader may use
// it at the same time (writes go straight to nc, reads through br); each side
// is used by one goroutine only.
type wireConn struct {
	nc  net.Conn
	br  *bufio.Reader
	buf []byte // the last response frame; reused, so it is valid until the next read
}

// dialWire connects to addr.
func dialWire(ctx context.Context, addr string) (*wireConn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return &wireConn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}, nil
}

func (c *wireConn) close() error { return c.nc.Close() }

// readResponse reads one response frame and returns its correlation id and
// body. flexible says whether the response header carries a tag section
// (flexible versions of every API but ApiVersions), which is skipped. The body
// aliases the connection's buffer until the next call.
func (c *wireConn) readResponse(flexible bool) (int32, []byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(c.br, sz[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(sz[:])
	if n < 4 || n > maxWireResponse {
		return 0, nil, fmt.Errorf("response frame of %d bytes: want 4..%d", n, maxWireResponse)
	}
	b, err := readGrowing(c.br, int(n), c.buf)
	if err != nil {
		return 0, nil, fmt.Errorf("read response frame of %d bytes: %w", n, err)
	}
	c.buf = b
	corr := int32(binary.BigEndian.Uint32(b))
	b = b[4:]
	if flexible {
		rest, err := skipTags(b)
		if err != nil {
			return 0, nil, fmt.Errorf("response header of correlation id %d: %w", corr, err)
		}
		b = rest
	}
	return corr, b, nil
}

// readGrowing reads exactly n bytes into buf, grown as the bytes arrive
// (by at most 1 MiB or doubling at a time) rather than sized from n up
// front, so that a broken peer announcing a huge frame and sending little
// costs little.
func readGrowing(r io.Reader, n int, buf []byte) ([]byte, error) {
	if cap(buf) >= n {
		buf = buf[:n]
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	buf = buf[:0]
	for len(buf) < n {
		step := min(n-len(buf), max(1<<20, len(buf)))
		buf = slices.Grow(buf, step)
		k, err := io.ReadFull(r, buf[len(buf):len(buf)+step])
		buf = buf[:len(buf)+k]
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// skipTags skips a tagged-field section (a count, then tag, size and bytes
// per field) at the start of b.
func skipTags(b []byte) ([]byte, error) {
	count, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[k:]
	for range count {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || size > uint64(len(b)-k) {
			return nil, errors.New("bad tag size")
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// dialWires opens n connections to addr; on an error it closes those it
// opened.
func dialWires(ctx context.Context, addr string, n int) ([]*wireConn, error) {
	cs := make([]*wireConn, 0, n)
	for range n {
		c, err := dialWire(ctx, addr)
		if err != nil {
			closeWires(cs)
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// closeWires closes every connection of cs.
func closeWires(cs []*wireConn) {
	for _, c := range cs {
		_ = c.close()
	}
}

// closeOnDone closes every connection of conns once ctx ends, which unblocks
// their readers and writers; the returned function stops the watch.
func closeOnDone(ctx context.Context, conns []*wireConn) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		for _, c := range conns {
			_ = c.nc.SetDeadline(time.Now())
		}
	})
}
