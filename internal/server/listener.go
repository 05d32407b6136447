package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/quorum"
	"github.com/kmirror/kmirror/internal/wire"
)

// sniffLen is how many bytes decide between raft and Kafka: a Kafka frame's
// size prefix, or the start of the raft preamble (a negative size).
const sniffLen = 4

// preambleTimeout bounds reading the rest of a raft preamble once its magic
// has been seen; raft's dialer sends all of it at once.
const preambleTimeout = 10 * time.Second

// boundListener is one bound listener and what it serves.
type boundListener struct {
	name     string
	protocol string
	ln       net.Listener
	ep       *endpoint
	// raft receives connections that start with the raft preamble; nil on
	// listeners that carry no raft traffic.
	raft *quorum.StreamLayer
	// sec is the listener's TLS and SASL; nil serves it as PLAINTEXT.
	sec *auth.Listener
}

// netServer owns a node's listeners and every Kafka connection accepted on
// them. Connections handed to raft belong to the quorum's stream layer.
type netServer struct {
	log     *slog.Logger
	limits  connLimits
	sendBuf int // SO_SNDBUF, -1: the OS default
	recvBuf int // SO_RCVBUF, -1: the OS default

	listeners []*boundListener

	// requests are the request metrics of every connection (metrics.go).
	requests *requestMetrics

	// ctx is the context of every connection; cancelling it ends every
	// handler and closes every connection.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closing bool
	wg      sync.WaitGroup
	// handoffs counts connections on their way to raft; see waitHandoffs.
	handoffs sync.WaitGroup
}

func newNetServer(log *slog.Logger, limits connLimits, sendBuf, recvBuf int) *netServer {
	ctx, cancel := context.WithCancel(context.Background())
	return &netServer{
		log: log, limits: limits, sendBuf: sendBuf, recvBuf: recvBuf,
		ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{},
		requests: newRequestMetrics(),
	}
}

// bind binds every listener, or uses the one prebound holds for its name
// (tests bind :0 ports early to know a voter's address before its config is
// written). On failure nothing stays bound, prebound listeners included.
func (s *netServer) bind(ls []config.Listener, prebound map[string]net.Listener) error {
	for _, l := range ls {
		ln, ok := prebound[l.Name]
		if ok {
			delete(prebound, l.Name)
		} else {
			var err error
			ln, err = net.Listen("tcp", l.Address())
			if err != nil {
				s.closeListeners()
				closeAll(prebound)
				return fmt.Errorf("listener %s: %w", l, err)
			}
		}
		s.listeners = append(s.listeners, &boundListener{
			name: l.Name, protocol: l.SecurityProtocol, ln: ln, ep: newEndpoint(l.Name, l.SecurityProtocol),
		})
	}
	for name, ln := range prebound {
		ln.Close()
		s.closeListeners()
		return fmt.Errorf("prebound listener %s is not in listeners", name)
	}
	return nil
}

func closeAll(m map[string]net.Listener) {
	for _, ln := range m {
		ln.Close()
	}
}

// listener returns the bound listener called name.
func (s *netServer) listener(name string) *boundListener {
	for _, l := range s.listeners {
		if l.name == name {
			return l
		}
	}
	return nil
}

// start runs an accept loop per listener.
func (s *netServer) start() {
	for _, l := range s.listeners {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.accept(l)
		}()
	}
}

func (s *netServer) accept(l *boundListener) {
	var backoff time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Running out of file descriptors is temporary: back off as
			// net/http does instead of spinning or giving up.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed", "listener", l.name, "error", err, "retry_in", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-s.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		backoff = 0
		if !s.track(nc) {
			nc.Close()
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(nc)
			s.handle(l, nc)
		}()
	}
}

// track registers a connection so that shutdown closes it; false when the
// server is already closing.
func (s *netServer) track(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.conns[nc] = struct{}{}
	return true
}

func (s *netServer) untrack(nc net.Conn) {
	s.mu.Lock()
	delete(s.conns, nc)
	s.mu.Unlock()
}

// handle sniffs a new connection and serves it as raft or Kafka.
func (s *netServer) handle(l *boundListener, nc net.Conn) {
	log := s.log.With("listener", l.name, "remote", nc.RemoteAddr().String())
	if tc, ok := nc.(*net.TCPConn); ok {
		if s.sendBuf > 0 {
			_ = tc.SetWriteBuffer(s.sendBuf)
		}
		if s.recvBuf > 0 {
			_ = tc.SetReadBuffer(s.recvBuf)
		}
	}
	if s.limits.idleTimeout > 0 {
		_ = nc.SetReadDeadline(time.Now().Add(s.limits.idleTimeout))
	}
	var first [sniffLen]byte
	if _, err := io.ReadFull(nc, first[:]); err != nil {
		nc.Close()
		return
	}
	tlsListener := l.sec != nil && l.sec.TLS != nil
	if l.raft != nil && quorum.IsRaftPreamble(first[:]) {
		if tlsListener {
			// Raft peers speak TLS to a TLS listener, like its clients.
			log.Warn("closing connection: a raft peer connected without TLS to a TLS listener")
			nc.Close()
			return
		}
		s.acceptRaft(l, nc, nc, first[:], wire.AnonymousPrincipal, log)
		return
	}
	c := &conn{nc: nc, ep: l.ep, limits: s.limits, log: log, principal: wire.AnonymousPrincipal, reqs: s.requests}
	start := first[:]
	if tlsListener {
		tc, principal, err := s.tlsHandshake(l, nc, start)
		if err != nil {
			log.Info("closing connection: TLS handshake failed", "error", err)
			nc.Close()
			return
		}
		c.nc, c.principal, start = tc, principal, nil
		if l.raft != nil {
			// A raft peer's preamble comes first inside TLS; a Kafka
			// client's first frame size cannot look like it.
			var inner [sniffLen]byte
			if s.limits.idleTimeout > 0 {
				_ = nc.SetReadDeadline(time.Now().Add(s.limits.idleTimeout))
			}
			if _, err := io.ReadFull(tc, inner[:]); err != nil {
				nc.Close()
				return
			}
			if quorum.IsRaftPreamble(inner[:]) {
				s.acceptRaft(l, nc, tc, inner[:], principal, log)
				return
			}
			start = inner[:]
		}
	}
	if err := l.ep.wait(s.ctx); err != nil {
		nc.Close()
		return
	}
	if l.sec != nil && l.sec.SASL != nil {
		c.sasl = newSASLState(l.sec.SASL)
	}
	c.serve(s.ctx, start)
}

// acceptRaft admits a raft peer whose preamble began with first on rc (nc
// itself, or the TLS connection over it; principal is its certificate's, or
// ANONYMOUS): it reads the rest of the preamble, runs the peer's SASL login
// on a SASL listener (where a peer that does not log in is refused), checks
// that the peer may act for the cluster and hands rc to raft.
func (s *netServer) acceptRaft(l *boundListener, nc, rc net.Conn, first []byte, principal string, log *slog.Logger) {
	_ = nc.SetDeadline(time.Now().Add(preambleTimeout))
	flags, err := quorum.ReadPreambleRest(rc, first)
	if err != nil {
		log.Warn("closing connection: bad raft preamble", "error", err)
		nc.Close()
		return
	}
	saslListener := l.sec != nil && l.sec.SASL != nil
	wantsSASL := flags&quorum.PreambleSASL != 0
	switch {
	case saslListener && !wantsSASL:
		log.Warn("closing connection: a raft peer did not authenticate on a SASL listener")
		nc.Close()
		return
	case !saslListener && wantsSASL:
		log.Warn("closing connection: a raft peer wants a SASL login on a listener without SASL (check listener.security.protocol.map on both nodes)")
		nc.Close()
		return
	case saslListener:
		p, ok := s.raftLogin(l, nc, rc, principal, log)
		if !ok {
			nc.Close()
			return
		}
		principal = p
	}
	if !raftPeerAllowed(l, principal, nc) {
		log.Warn("closing connection: a raft peer's principal lacks CLUSTER_ACTION on the cluster", "principal", principal)
		nc.Close()
		return
	}
	_ = nc.SetDeadline(time.Time{})
	// From here raft owns the connection (Handoff closes it if the stream
	// layer is closed); shutdown must not close it under raft. Handoff
	// blocks until raft accepts, so it runs outside the connection
	// goroutines that closeConns waits for.
	s.untrack(nc)
	s.handoffs.Add(1)
	go func() {
		defer s.handoffs.Done()
		l.raft.Handoff(rc)
	}()
}

// raftLogin runs a raft peer's SASL login on rc, in the frames and with the
// mechanisms of the listener's Kafka clients (SaslHandshake, then
// SaslAuthenticate until done; nothing else is accepted), and returns the
// authenticated principal. It reads frame by frame, never beyond the last
// token, as raft's bytes follow. false: refused (logged), close the
// connection.
func (s *netServer) raftLogin(l *boundListener, nc, rc net.Conn, principal string, log *slog.Logger) (string, bool) {
	c := &conn{nc: rc, ep: l.ep, limits: s.limits, log: log, principal: principal, reqs: s.requests,
		sasl: newSASLState(l.sec.SASL)}
	w := &responseWriter{nc: rc}
	for !c.sasl.done {
		_ = nc.SetDeadline(time.Now().Add(preambleTimeout))
		frame, err := wire.ReadFrame(rc, maxSASLTokenSize, nil)
		if err != nil {
			log.Info("closing connection: reading a raft peer's SASL login failed", "error", err)
			return "", false
		}
		if !c.sasl.raw {
			if len(frame) < 2 {
				log.Info("closing connection: malformed request in a raft peer's SASL login")
				return "", false
			}
			if key := int16(binary.BigEndian.Uint16(frame)); key != int16(kmsg.SASLHandshake) && key != int16(kmsg.SASLAuthenticate) {
				log.Info("closing connection: a raft peer sent a request other than its SASL login", "api", wire.APIName(key), "api_key", key)
				return "", false
			}
		}
		if !c.authenticate(s.ctx, w, frame) {
			return "", false
		}
	}
	return c.principal, true
}

// raftPeerAllowed reports whether a raft peer may join: with an authorizer
// its principal (from its SASL login, its client certificate, or ANONYMOUS
// on a listener that authenticates neither way) must be allowed
// CLUSTER_ACTION on the cluster, as Kafka requires of controllers.
func raftPeerAllowed(l *boundListener, principal string, nc net.Conn) bool {
	if l.ep.authz == nil {
		return true
	}
	host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
	return l.ep.authz.Authorize(principal, host, kmsg.ACLOperationClusterAction, kmsg.ACLResourceTypeCluster, wire.ClusterResourceName)
}

// closeListeners stops accepting new connections.
func (s *netServer) closeListeners() {
	for _, l := range s.listeners {
		l.ln.Close()
	}
}

// closeConns ends every handler and closes every Kafka connection, then
// waits for the connection and accept goroutines to finish. Listeners must
// be closed first.
func (s *netServer) closeConns() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.cancel()
	s.mu.Lock()
	for nc := range s.conns {
		nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// waitHandoffs waits for connections still being handed to raft. Call it
// after closeConns and after the stream layers are closed, which makes
// every pending handoff close its connection instead.
func (s *netServer) waitHandoffs() {
	s.handoffs.Wait()
}
