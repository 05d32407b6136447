package wire

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testServer is a tiny Kafka-protocol server built from this package's
// server-side pieces (ReadFrame, ParseRequest, AppendResponse). handle
// returns the response to send; nil sends nothing.
type testServer struct {
	ln     net.Listener
	reg    *Registry
	handle func(h RequestHeader, req kmsg.Request, err error) (corr int32, resp kmsg.Response)
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	done   chan struct{}
	seen   chan RequestHeader
}

func newTestServer(t *testing.T, reg *Registry, handle func(h RequestHeader, req kmsg.Request, err error) (int32, kmsg.Response)) *testServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{ln: ln, reg: reg, handle: handle, done: make(chan struct{}), seen: make(chan RequestHeader, 100)}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *testServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

func (s *testServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	for {
		frame, err := ReadFrame(c, 1<<20, nil)
		if err != nil {
			return
		}
		h, req, perr := ParseRequest(frame, s.reg)
		select {
		case s.seen <- h:
		default:
		}
		corr, resp := s.handle(h, req, perr)
		if resp == nil {
			continue
		}
		if _, err := c.Write(AppendResponse(nil, corr, resp)); err != nil {
			return
		}
	}
}

// close stops the accept loop and every connection, and waits for all the
// server's goroutines.
func (s *testServer) close() {
	close(s.done)
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *testServer) addr() string { return s.ln.Addr().String() }

func testRegistry() *Registry {
	reg := NewRegistry()
	reg.Add(int16(kmsg.ApiVersions), 0, 3)
	reg.Add(int16(kmsg.Metadata), 0, 12)
	reg.Add(int16(kmsg.Produce), 3, 9)
	for k := MinMirrorKey; k <= MaxMirrorKey; k++ {
		reg.Add(k, 0, 0)
	}
	return reg
}

// echoHandler answers ApiVersions, Metadata (one broker, this one, as
// controller) and the mirror keys the tests use.
func echoHandler(reg *Registry, host string, port int32) func(RequestHeader, kmsg.Request, error) (int32, kmsg.Response) {
	return func(h RequestHeader, req kmsg.Request, err error) (int32, kmsg.Response) {
		if err != nil {
			if h.APIKey == int16(kmsg.ApiVersions) && errors.Is(err, kerr.UnsupportedVersion) {
				return h.CorrelationID, reg.UnsupportedApiVersionsResponse()
			}
			return h.CorrelationID, nil
		}
		switch r := req.(type) {
		case *kmsg.ApiVersionsRequest:
			return h.CorrelationID, reg.ApiVersionsResponse(r.Version)
		case *kmsg.MetadataRequest:
			resp := r.ResponseKind().(*kmsg.MetadataResponse)
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port = 1, host, port
			resp.Brokers = append(resp.Brokers, b)
			resp.ControllerID = 1
			return h.CorrelationID, resp
		case *kmsg.ProduceRequest:
			if r.Acks == 0 {
				return h.CorrelationID, nil
			}
			return h.CorrelationID, r.ResponseKind()
		case *ListMirrorsRequest:
			return h.CorrelationID, &ListMirrorsResponse{Mirrors: []ListMirrorsResponseMirror{{Name: "east", SourceBootstrapServers: "a:9092", TopicCount: 2}}}
		case *CreateMirrorRequest:
			msg := "mirror " + r.MirrorName + " already exists"
			return h.CorrelationID, &CreateMirrorResponse{ErrorCode: kerr.InvalidRequest.Code, ErrorMessage: &msg}
		case *DescribeMirrorsRequest:
			return h.CorrelationID, &DescribeMirrorsResponse{Mirrors: []DescribeMirrorsResponseMirror{{Name: r.MirrorNames[0]}}}
		}
		return h.CorrelationID, req.ResponseKind()
	}
}

func startEcho(t *testing.T) *testServer {
	reg := testRegistry()
	s := newTestServer(t, reg, nil)
	host, portS, _ := net.SplitHostPort(s.addr())
	port, _ := strconv.Atoi(portS)
	s.handle = echoHandler(reg, host, int32(port))
	return s
}

func dialTest(t *testing.T, addr string) *Conn {
	t.Helper()
	c, err := Dial(context.Background(), "tcp", addr, "wire-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestConnRequests(t *testing.T) {
	s := startEcho(t)
	c := dialTest(t, s.addr())
	ctx := context.Background()

	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	resp, err := c.Request(ctx, md)
	if err != nil {
		t.Fatal(err)
	}
	if m := resp.(*kmsg.MetadataResponse); m.ControllerID != 1 || len(m.Brokers) != 1 || m.Version != 12 {
		t.Fatalf("metadata = %+v", m)
	}
	h := <-s.seen
	if h.ClientID == nil || *h.ClientID != "wire-test" || h.APIVersion != 12 {
		t.Fatalf("server saw header %+v", h)
	}
	lm, err := (&ListMirrorsRequest{}).RequestWith(ctx, c)
	if err != nil || len(lm.Mirrors) != 1 || lm.Mirrors[0].TopicCount != 2 {
		t.Fatalf("ListMirrors = %+v, %v", lm, err)
	}
	// Correlation ids advance per request.
	md.SetVersion(4)
	if _, err := c.Request(ctx, md); err != nil {
		t.Fatal(err)
	}
	<-s.seen // ListMirrors
	if h := <-s.seen; h.CorrelationID != 3 {
		t.Errorf("second request correlation id = %d", h.CorrelationID)
	}
}

func TestConnApiVersionsFallback(t *testing.T) {
	s := startEcho(t)
	c := dialTest(t, s.addr())
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(4) // above the served 0..3
	av.ClientSoftwareName, av.ClientSoftwareVersion = "t", "1"
	resp, err := c.Request(context.Background(), av)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*kmsg.ApiVersionsResponse)
	if r.Version != 0 || r.ErrorCode != kerr.UnsupportedVersion.Code || len(r.ApiKeys) != len(testRegistry().Keys()) {
		t.Fatalf("fallback response %+v", r)
	}
}

func TestConnProduceAcksZeroHasNoResponse(t *testing.T) {
	s := startEcho(t)
	c := dialTest(t, s.addr())
	p := kmsg.NewPtrProduceRequest()
	p.SetVersion(9)
	p.Acks = 0
	resp, err := c.Request(context.Background(), p)
	if err != nil || resp != nil {
		t.Fatalf("acks=0: %v %v", resp, err)
	}
	// The stream stays in step: the next request gets its own response.
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(9)
	if _, err := c.Request(context.Background(), md); err != nil {
		t.Fatal(err)
	}
}

func TestConnCorrelationMismatchBreaksConn(t *testing.T) {
	reg := testRegistry()
	s := newTestServer(t, reg, func(h RequestHeader, req kmsg.Request, err error) (int32, kmsg.Response) {
		return h.CorrelationID + 1, req.ResponseKind()
	})
	c := dialTest(t, s.addr())
	_, err := c.Request(context.Background(), &ListMirrorsRequest{})
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("mismatch: %v", err)
	}
	if _, err := c.Request(context.Background(), &ListMirrorsRequest{}); !errors.Is(err, ErrConnBroken) {
		t.Fatalf("after mismatch: %v", err)
	}
}

func TestConnContextCancelUnblocks(t *testing.T) {
	reg := testRegistry()
	s := newTestServer(t, reg, func(RequestHeader, kmsg.Request, error) (int32, kmsg.Response) {
		return 0, nil // never answers
	})
	c := dialTest(t, s.addr())
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Request(ctx, &ListMirrorsRequest{})
		errc <- err
	}()
	<-s.seen // the request reached the server and is waiting for an answer
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Request did not return after cancel")
	}
	if _, err := c.Request(context.Background(), &ListMirrorsRequest{}); !errors.Is(err, ErrConnBroken) {
		t.Fatalf("conn usable after an abandoned request: %v", err)
	}
}

func TestConnDeadline(t *testing.T) {
	reg := testRegistry()
	s := newTestServer(t, reg, func(RequestHeader, kmsg.Request, error) (int32, kmsg.Response) { return 0, nil })
	c := dialTest(t, s.addr())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Request(ctx, &ListMirrorsRequest{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestConnResponseTooLarge(t *testing.T) {
	s := startEcho(t)
	c := dialTest(t, s.addr())
	c.SetMaxResponseSize(8)
	if _, err := (&ListMirrorsRequest{}).RequestWith(context.Background(), c); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("err = %v", err)
	}
}

func TestConnClosed(t *testing.T) {
	s := startEcho(t)
	c := dialTest(t, s.addr())
	c.Close()
	if _, err := c.Request(context.Background(), &ListMirrorsRequest{}); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("err = %v", err)
	}
}

// franz-go's kgo client sends the mirror types as they are: admin requests
// are routed to the controller found through Metadata, and the typed
// responses come back.
func TestKgoSendsMirrorRequests(t *testing.T) {
	s := startEcho(t)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(s.addr()),
		kgo.MaxVersions(MirrorClientVersions(nil)),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	lm, err := (&ListMirrorsRequest{}).RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(lm.Mirrors) != 1 || lm.Mirrors[0].Name != "east" {
		t.Fatalf("ListMirrors = %+v", lm)
	}
	cm, err := (&CreateMirrorRequest{MirrorName: "east", TimeoutMillis: 5000}).RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if cm.ErrorCode != kerr.InvalidRequest.Code || cm.ErrorMessage == nil || *cm.ErrorMessage != "mirror east already exists" {
		t.Fatalf("CreateMirror = %+v", cm)
	}
	dm, err := (&DescribeMirrorsRequest{MirrorNames: []string{"west"}}).RequestWith(ctx, cl)
	if err != nil || dm.Mirrors[0].Name != "west" {
		t.Fatalf("DescribeMirrors = %+v %v", dm, err)
	}
	// Without the mirror keys in its version table, kgo refuses to send.
	plain, err := kgo.NewClient(kgo.SeedBrokers(s.addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.Request(ctx, &ListMirrorsRequest{}); err == nil {
		t.Fatal("stock kgo sent ListMirrors")
	}
}
