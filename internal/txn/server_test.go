package txn

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// testServer serves wire.APIs on a loopback TCP listener the way the
// server package does (one request at a time per connection), so that the
// coordinator's inter-broker requests travel over a real connection.
type testServer struct {
	t        *testing.T
	ln       net.Listener
	reg      *wire.Registry
	handlers map[int16]wire.Handler

	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func serveAPIs(t *testing.T, apis ...wire.API) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{t: t, ln: ln, reg: wire.NewRegistry(), handlers: map[int16]wire.Handler{}, conns: map[net.Conn]bool{}}
	for _, a := range apis {
		s.reg.Add(a.Key, a.MinVersion, a.MaxVersion)
		s.handlers[a.Key] = a.Handle
	}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *testServer) addr() string { return s.ln.Addr().String() }

func (s *testServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *testServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for {
		frame, err := wire.ReadFrame(c, 1<<20, nil)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.t.Logf("test server: read: %v", err)
			}
			return
		}
		hdr, req, err := wire.ParseRequest(frame, s.reg)
		if err != nil {
			s.t.Logf("test server: parse: %v", err)
			return
		}
		resp, err := s.handlers[hdr.APIKey](ctx, &wire.RequestContext{Header: hdr, Listener: "PLAINTEXT"}, req)
		if err != nil {
			s.t.Logf("test server: handler: %v", err)
			return
		}
		if _, err := c.Write(wire.AppendResponse(nil, hdr.CorrelationID, resp.(kmsg.Response))); err != nil {
			return
		}
	}
}

// dropConnections closes every open connection, as a broker restart does.
func (s *testServer) dropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

func (s *testServer) close() {
	s.ln.Close()
	s.dropConnections()
	s.wg.Wait()
}
