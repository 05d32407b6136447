package server

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/wire"
)

// testService serves a few keys with handlers chosen by each test.
type testService []wire.API

func (s testService) APIs() []wire.API { return s }

// testLogger returns a logger that writes to the test log, so that failing
// tests show the server's side.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// startTransport starts a netServer with one PLAINTEXT listener on
// 127.0.0.1:0 serving svc, stopped when the test ends. It returns the
// server and the listener's address.
func startTransport(t *testing.T, limits connLimits, svc wire.Service, setup ...func(*netServer)) (*netServer, string) {
	t.Helper()
	if limits.maxRequestSize == 0 {
		limits.maxRequestSize = 1 << 20
	}
	s := newNetServer(testLogger(t), limits, -1, -1)
	err := s.bind([]config.Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 0, SecurityProtocol: "PLAINTEXT"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if svc != nil {
		if err := s.listeners[0].ep.enable(svc); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range setup {
		f(s)
	}
	s.start()
	t.Cleanup(func() {
		s.closeListeners()
		s.closeConns()
		s.waitHandoffs()
	})
	return s, s.listeners[0].ln.Addr().String()
}

// dial returns a wire.Conn to addr, closed when the test ends.
func dial(t *testing.T, addr string) *wire.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := wire.Dial(ctx, "tcp", addr, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialRaw returns a plain TCP connection to addr, closed when the test ends.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return nc
}

// request sends req on c with a test deadline and fails the test on error.
func request(t *testing.T, c *wire.Conn, req kmsg.Request) kmsg.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Request(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", wire.APIName(req.Key()), err)
	}
	return resp
}

// expectClosed asserts that the server closes nc (a read returns EOF or a
// reset) within a deadline, without sending anything more.
func expectClosed(t *testing.T, nc net.Conn) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b [1]byte
	n, err := nc.Read(b[:])
	if n > 0 {
		t.Fatalf("server sent data instead of closing the connection")
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("server did not close the connection")
	}
	if err == nil {
		t.Fatalf("read returned no error and no data")
	}
}

// writeFrame writes a raw size-prefixed frame.
func writeFrame(t *testing.T, nc net.Conn, payload []byte) {
	t.Helper()
	buf := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	if _, err := nc.Write(append(buf, payload...)); err != nil {
		t.Fatal(err)
	}
}

// readResponseFrame reads one response frame from nc and returns its
// correlation id and body.
func readResponseFrame(t *testing.T, nc net.Conn) (int32, []byte) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	frame, err := wire.ReadFrame(nc, 64<<20, nil)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	if len(frame) < 4 {
		t.Fatalf("response frame of %d bytes", len(frame))
	}
	return int32(binary.BigEndian.Uint32(frame)), frame[4:]
}

// metadataAPI answers Metadata with a response naming the client id in the
// cluster id, which lets tests check the request reached the handler.
func metadataAPI() wire.API {
	return wire.API{Key: int16(kmsg.Metadata), MinVersion: 0, MaxVersion: 12,
		Handle: func(ctx context.Context, rc *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
			resp := req.ResponseKind().(*kmsg.MetadataResponse)
			id := "none"
			if rc.Header.ClientID != nil {
				id = *rc.Header.ClientID
			}
			resp.ClusterID = &id
			return resp, nil
		}}
}

// discard drains r in the background until it fails; it keeps a
// connection's receive window open.
func discard(r io.Reader) { _, _ = io.Copy(io.Discard, r) }
