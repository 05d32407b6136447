package quorum

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The raft preamble is the first thing a raft connection sends. Its first 4
// bytes, read as a big-endian int32 Kafka frame size, are negative, so a
// server that shares one TCP listener between Kafka and raft tells them apart
// by reading 4 bytes: a Kafka client never sends a negative size.
//
//	0xFF 'K' 'R' 'F'  magic
//	uint16            preamble version (1)
//	uint16            flags (PreambleSASL or 0)
var preambleMagic = [4]byte{0xFF, 'K', 'R', 'F'}

const preambleVersion = 1

// PreambleLen is the length of the preamble a raft connection starts with.
const PreambleLen = 8

// PreambleSASL is the preamble flag of a peer that authenticates with SASL
// right after the preamble, in Kafka's SaslHandshake / SaslAuthenticate
// frames, before raft's first byte.
const PreambleSASL uint16 = 1

func preamble(flags uint16) []byte {
	b := append([]byte(nil), preambleMagic[:]...)
	b = binary.BigEndian.AppendUint16(b, preambleVersion)
	return binary.BigEndian.AppendUint16(b, flags)
}

// IsRaftPreamble reports whether the first 4 bytes of a connection are the
// raft preamble's magic (and so not a Kafka frame size).
func IsRaftPreamble(first4 []byte) bool {
	return len(first4) >= 4 && bytes.Equal(first4[:4], preambleMagic[:])
}

// ReadPreambleRest reads the rest of the preamble from r, after the caller
// has read first4 and seen IsRaftPreamble, checks the version and returns
// the flags (PreambleSASL or 0; unknown flags are an error). On success the
// connection is positioned at raft's first byte, or at the SASL exchange
// when the flags say so, after which it can be passed to
// StreamLayer.Handoff. The caller should set a read deadline on the
// connection first.
func ReadPreambleRest(r io.Reader, first4 []byte) (flags uint16, err error) {
	if !IsRaftPreamble(first4) {
		return 0, fmt.Errorf("raft preamble: bad magic % x", first4)
	}
	var rest [PreambleLen - 4]byte
	if _, err := io.ReadFull(r, rest[:]); err != nil {
		return 0, fmt.Errorf("raft preamble: %w", err)
	}
	if v := binary.BigEndian.Uint16(rest[:2]); v != preambleVersion {
		return 0, fmt.Errorf("raft preamble: version %d, this node speaks %d", v, preambleVersion)
	}
	flags = binary.BigEndian.Uint16(rest[2:])
	if flags&^PreambleSASL != 0 {
		return 0, fmt.Errorf("raft preamble: unknown flags %#04x", flags&^PreambleSASL)
	}
	return flags, nil
}

// readPreamble reads and checks a whole preamble (own-listener mode, which
// has no SASL: a peer that wants to authenticate is refused).
func readPreamble(r io.Reader) error {
	var first4 [4]byte
	if _, err := io.ReadFull(r, first4[:]); err != nil {
		return fmt.Errorf("raft preamble: %w", err)
	}
	flags, err := ReadPreambleRest(r, first4[:])
	if err == nil && flags&PreambleSASL != 0 {
		err = errors.New("raft preamble: the peer wants to authenticate with SASL; this raft listener has no SASL")
	}
	return err
}

// ErrStreamClosed is returned by Accept after the stream layer is closed.
var ErrStreamClosed = errors.New("raft stream layer closed")

// StreamLayer is raft's network: it dials peers (sending the preamble) and
// accepts connections that the node's server has identified as raft by their
// preamble and handed off. It lets raft share a TCP listener with Kafka
// traffic; the server owns the listener.
type StreamLayer struct {
	advertise net.Addr
	security  func(address string) PeerSecurity
	conns     chan net.Conn
	closeOnce sync.Once
	closed    chan struct{}
}

// StreamOption configures a StreamLayer.
type StreamOption func(*StreamLayer)

// PeerSecurity is how Dial secures its connection to one peer, following
// the security of the listener the peer serves raft on.
type PeerSecurity struct {
	// TLS, if set, makes Dial run a TLS handshake before the preamble: raft
	// traffic is then encrypted like the listener's Kafka traffic, and the
	// peer's certificate is verified.
	TLS *tls.Config
	// Authenticate, if set, makes Dial send the preamble with PreambleSASL
	// and then call it on the connection to log in (a SASL exchange in
	// Kafka's frames) before raft uses the connection. It must not read
	// beyond the exchange's last answer.
	Authenticate func(ctx context.Context, c net.Conn, address string) error
}

// WithDialSecurity makes Dial secure the connection to each peer as
// security(address) says. Without it Dial uses plain TCP.
func WithDialSecurity(security func(address string) PeerSecurity) StreamOption {
	return func(s *StreamLayer) { s.security = security }
}

// NewStreamLayer returns a stream layer for a node whose raft address (the
// address its peers dial, host:port) is advertise.
func NewStreamLayer(advertise net.Addr, opts ...StreamOption) *StreamLayer {
	s := &StreamLayer{advertise: advertise, conns: make(chan net.Conn), closed: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Handoff passes an inbound raft connection, whose preamble has been
// consumed, to raft. It blocks until raft accepts it; once the stream layer
// is closed it closes c instead.
func (s *StreamLayer) Handoff(c net.Conn) {
	select {
	case s.conns <- c:
	case <-s.closed:
		c.Close()
	}
}

// Accept implements net.Listener for raft: it returns handed-off
// connections.
func (s *StreamLayer) Accept() (net.Conn, error) {
	select {
	case c := <-s.conns:
		return c, nil
	case <-s.closed:
		return nil, ErrStreamClosed
	}
}

// Close implements net.Listener; later handoffs close their connections.
// The listener the connections come from is not closed: the server owns it.
func (s *StreamLayer) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

// Addr implements net.Listener: the advertised raft address.
func (s *StreamLayer) Addr() net.Addr { return s.advertise }

// Dial implements raft.StreamLayer: it connects to a peer, secures the
// connection (TLS, then SASL after the preamble) as WithDialSecurity says
// and sends the preamble.
func (s *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.Dial("tcp", string(address))
	if err != nil {
		return nil, err
	}
	var sec PeerSecurity
	if s.security != nil {
		sec = s.security(string(address))
	}
	if sec.TLS != nil {
		tc, err := tlsClient(c, sec.TLS, string(address), timeout)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("raft TLS to %s: %w", address, err)
		}
		c = tc
	}
	if timeout > 0 {
		c.SetDeadline(time.Now().Add(timeout))
	}
	var flags uint16
	if sec.Authenticate != nil {
		flags = PreambleSASL
	}
	if _, err := c.Write(preamble(flags)); err != nil {
		c.Close()
		return nil, fmt.Errorf("send raft preamble to %s: %w", address, err)
	}
	if sec.Authenticate != nil {
		ctx := context.Background()
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		if err := sec.Authenticate(ctx, c, string(address)); err != nil {
			c.Close()
			return nil, fmt.Errorf("raft SASL to %s: %w", address, err)
		}
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// tcpAddr is a net.Addr for an advertised "host:port" that need not resolve
// locally.
type tcpAddr string

func (a tcpAddr) Network() string { return "tcp" }
func (a tcpAddr) String() string  { return string(a) }

// ownListener serves a stream layer from a listener of its own (Config
// without Stream): it accepts connections, checks each preamble and hands
// the connection off.
type ownListener struct {
	ln     net.Listener
	stream *StreamLayer
	wg     sync.WaitGroup
	mu     sync.Mutex
	// pending holds connections whose preamble is being read, so that close
	// can interrupt them.
	pending map[net.Conn]struct{}
	done    bool
}

// preambleTimeout bounds how long an inbound connection may take to send
// its preamble.
const preambleTimeout = 5 * time.Second

func startOwnListener(ln net.Listener, stream *StreamLayer, log interface{ Warn(string, ...any) }) *ownListener {
	o := &ownListener{ln: ln, stream: stream, pending: map[net.Conn]struct{}{}}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed by close()
			}
			if !o.track(c) {
				c.Close()
				return
			}
			o.wg.Add(1)
			go func() {
				defer o.wg.Done()
				c.SetReadDeadline(time.Now().Add(preambleTimeout))
				err := readPreamble(c)
				c.SetReadDeadline(time.Time{})
				if !o.untrack(c) || err != nil {
					if err != nil {
						log.Warn("raft listener: refusing connection", "remote", c.RemoteAddr().String(), "err", err)
					}
					c.Close()
					return
				}
				stream.Handoff(c)
			}()
		}
	}()
	return o
}

func (o *ownListener) track(c net.Conn) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return false
	}
	o.pending[c] = struct{}{}
	return true
}

// untrack reports false when the listener closed meanwhile.
func (o *ownListener) untrack(c net.Conn) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.pending, c)
	return !o.done
}

func (o *ownListener) close() {
	o.mu.Lock()
	o.done = true
	for c := range o.pending {
		c.Close()
	}
	o.mu.Unlock()
	o.ln.Close()
	o.wg.Wait()
}

// tlsClient runs a TLS handshake as a client on c, naming the peer by the
// host of address unless cfg names it.
func tlsClient(c net.Conn, cfg *tls.Config, address string, timeout time.Duration) (*tls.Conn, error) {
	if cfg.ServerName == "" {
		cfg = cfg.Clone()
		if host, _, err := net.SplitHostPort(address); err == nil {
			cfg.ServerName = host
		}
	}
	tc := tls.Client(c, cfg)
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return tc, nil
}
