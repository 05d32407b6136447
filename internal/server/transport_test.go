package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/quorum"
	"github.com/kmirror/kmirror/internal/wire"
)

func TestApiVersionsListsServedKeys(t *testing.T) {
	_, addr := startTransport(t, connLimits{}, testService{metadataAPI()})
	c := dial(t, addr)
	for v := int16(0); v <= apiVersionsMax; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kmirror-test", "1.0"
		resp := request(t, c, req).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		got := map[int16][2]int16{}
		for _, k := range resp.ApiKeys {
			got[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
		}
		want := map[int16][2]int16{int16(kmsg.ApiVersions): {0, apiVersionsMax}, int16(kmsg.Metadata): {0, 12}}
		if len(got) != len(want) || got[18] != want[18] || got[3] != want[3] {
			t.Fatalf("v%d: advertised %v, want %v", v, got, want)
		}
	}
}

func TestApiVersionsUnsupportedVersionAnswersV0(t *testing.T) {
	_, addr := startTransport(t, connLimits{}, testService{metadataAPI()})
	c := dial(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(127)
	resp := request(t, c, req).(*kmsg.ApiVersionsResponse)
	if resp.Version != 0 || resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("got v%d error %d, want v0 UNSUPPORTED_VERSION", resp.Version, resp.ErrorCode)
	}
	if len(resp.ApiKeys) != 2 {
		t.Fatalf("fallback body lists %d keys, want the 2 served", len(resp.ApiKeys))
	}
	// The connection stays usable, as with Kafka: the client retries with a
	// version from the list.
	req = kmsg.NewPtrApiVersionsRequest()
	if resp := request(t, c, req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("retry: error %d", resp.ErrorCode)
	}
}

func TestApiVersionsInvalidClientSoftware(t *testing.T) {
	_, addr := startTransport(t, connLimits{}, testService{metadataAPI()})
	c := dial(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "-bad name", "1"
	resp := request(t, c, req).(*kmsg.ApiVersionsResponse)
	if resp.ErrorCode != kerr.InvalidRequest.Code || len(resp.ApiKeys) != 0 {
		t.Fatalf("got error %d with %d keys, want INVALID_REQUEST and none", resp.ErrorCode, len(resp.ApiKeys))
	}
}

func TestRequestReachesHandlerWithContext(t *testing.T) {
	got := make(chan *wire.RequestContext, 1)
	api := wire.API{Key: int16(kmsg.Metadata), MaxVersion: 12,
		Handle: func(ctx context.Context, rc *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
			got <- rc
			return req.ResponseKind(), nil
		}}
	_, addr := startTransport(t, connLimits{}, testService{api})
	c := dial(t, addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	resp := request(t, c, req)
	if resp.GetVersion() != 9 {
		t.Fatalf("response version %d, want 9", resp.GetVersion())
	}
	rc := <-got
	if rc.Listener != "PLAINTEXT" || rc.SecurityProtocol != "PLAINTEXT" || rc.Principal != wire.AnonymousPrincipal {
		t.Fatalf("request context %+v", rc)
	}
	if rc.Header.APIKey != 3 || rc.Header.APIVersion != 9 || rc.Header.ClientID == nil || *rc.Header.ClientID != "test" {
		t.Fatalf("header %+v", rc.Header)
	}
	if rc.ClientAddr == nil {
		t.Fatal("no client address")
	}
}

// TestPipelinedRequestsAnsweredInOrder sends many requests before reading
// any response: each must come back, in order, with its correlation id.
func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	_, addr := startTransport(t, connLimits{}, testService{metadataAPI()})
	nc := dialRaw(t, addr)
	const n = 200
	var out []byte
	for i := int32(0); i < n; i++ {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(int16(i % 13))
		id := string(rune('a' + i%26))
		out = wire.AppendRequest(out, 1000+i, &id, req)
	}
	go func() { _, _ = nc.Write(out) }()
	for i := int32(0); i < n; i++ {
		corr, body := readResponseFrame(t, nc)
		if corr != 1000+i {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
		v := int16(i % 13)
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(v)
		if v >= 9 {
			body = body[1:] // response header v1: empty tag section
		}
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if v >= 2 && (resp.ClusterID == nil || *resp.ClusterID != string(rune('a'+i%26))) {
			t.Fatalf("response %d answers another request: %v", i, resp.ClusterID)
		}
	}
}

// TestNilResponseSendsNothing: a handler answering nil (Produce acks=0)
// sends no frame, and the next response is the next request's.
func TestNilResponseSendsNothing(t *testing.T) {
	produce := wire.API{Key: int16(kmsg.Produce), MinVersion: 3, MaxVersion: 11,
		Handle: func(ctx context.Context, rc *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
			return nil, nil
		}}
	_, addr := startTransport(t, connLimits{}, testService{produce, metadataAPI()})
	nc := dialRaw(t, addr)
	p := kmsg.NewPtrProduceRequest()
	p.SetVersion(7)
	p.Acks = 0
	out := wire.AppendRequest(nil, 1, nil, p)
	out = wire.AppendRequest(out, 2, nil, kmsg.NewPtrMetadataRequest())
	if _, err := nc.Write(out); err != nil {
		t.Fatal(err)
	}
	if corr, _ := readResponseFrame(t, nc); corr != 2 {
		t.Fatalf("first response has correlation id %d, want 2", corr)
	}
}

// streamAPI answers Fetch with a body whose bytes come partly from a file:
// the whole encoded response body is written to a file and sent as
// bytes/file/bytes parts, so the client sees exactly that body.
func streamAPI(t *testing.T, records []byte) wire.API {
	dir := t.TempDir()
	return wire.API{Key: int16(kmsg.Fetch), MinVersion: 4, MaxVersion: 12,
		Handle: func(ctx context.Context, rc *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
			resp := req.ResponseKind().(*kmsg.FetchResponse)
			topic := kmsg.NewFetchResponseTopic()
			topic.Topic = "t"
			part := kmsg.NewFetchResponseTopicPartition()
			part.RecordBatches = records
			topic.Partitions = append(topic.Partitions, part)
			resp.Topics = append(resp.Topics, topic)
			body := resp.AppendTo(nil)
			f, err := os.CreateTemp(dir, "segment")
			if err != nil {
				return nil, err
			}
			// Put the body at an offset, so that Pos matters.
			pad := 1234
			if _, err := f.WriteAt(body, int64(pad)); err != nil {
				return nil, err
			}
			head, tail := 10, len(body)-7
			released := false
			return &wire.StreamResponse{APIKey: resp.Key(), Version: resp.Version,
				Parts: []wire.Part{
					{Bytes: body[:head]},
					{File: f, Pos: int64(pad + head), Len: int64(tail - head)},
					{Bytes: body[tail:]},
				},
				Release: func() {
					if released {
						t.Error("released twice")
					}
					released = true
					f.Close()
				}}, nil
		}}
}

func TestStreamResponseWithFileParts(t *testing.T) {
	records := make([]byte, 8<<20)
	_, _ = rand.Read(records)
	// A send buffer (Kafka's default socket.send.buffer.bytes) far smaller
	// than the response makes sendfile send partially and hit EAGAIN.
	_, addr := startTransport(t, connLimits{}, testService{streamAPI(t, records)}, func(s *netServer) { s.sendBuf = sendBufForTest })
	c := dial(t, addr)
	c.SetMaxResponseSize(64 << 20)
	copiedBefore := copiedFileBytes.Load()
	for _, v := range []int16{4, 11, 12} {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(v)
		resp := request(t, c, req).(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("v%d: bad response shape", v)
		}
		if !bytes.Equal(resp.Topics[0].Partitions[0].RecordBatches, records) {
			t.Fatalf("v%d: record bytes differ", v)
		}
	}
	// A plaintext TCP connection gets the file ranges with sendfile.
	if n := copiedFileBytes.Load() - copiedBefore; n != 0 {
		t.Errorf("%d file bytes were copied through user space instead of sent with sendfile", n)
	}
}

// TestStreamResponseCopyFallback writes a stream response to a connection
// that is not a socket, which takes the copying path.
func TestStreamResponseCopyFallback(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := make([]byte, 300<<10)
	_, _ = rand.Read(data)
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	w := &responseWriter{nc: a}
	copiedBefore := copiedFileBytes.Load()
	s := &wire.StreamResponse{APIKey: 1, Version: 4, Parts: []wire.Part{
		{Bytes: []byte("head")}, {File: f, Pos: 100, Len: 200 << 10}, {Bytes: []byte("tail")},
	}}
	errc := make(chan error, 1)
	go func() { errc <- w.write(77, s) }()
	frame, err := wire.ReadFrame(b, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	want := append([]byte{0, 0, 0, 77, 'h', 'e', 'a', 'd'}, data[100:100+200<<10]...)
	want = append(want, "tail"...)
	if !bytes.Equal(frame, want) {
		t.Fatalf("frame differs (%d bytes, want %d)", len(frame), len(want))
	}
	if n := copiedFileBytes.Load() - copiedBefore; n != 200<<10 {
		t.Errorf("copiedFileBytes grew by %d, want %d", n, 200<<10)
	}
}

// TestStreamResponseShortFileClosesConnection: a file range that the file
// does not hold breaks the promised frame size, so the connection closes.
func TestStreamResponseShortFileClosesConnection(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	api := wire.API{Key: int16(kmsg.Fetch), MinVersion: 4, MaxVersion: 12,
		Handle: func(ctx context.Context, rc *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
			return &wire.StreamResponse{APIKey: 1, Version: rc.Header.APIVersion,
				Parts:   []wire.Part{{File: f, Pos: 50, Len: 1000}},
				Release: func() { close(released) }}, nil
		}}
	_, addr := startTransport(t, connLimits{}, testService{api})
	nc := dialRaw(t, addr)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(4)
	if _, err := nc.Write(wire.AppendRequest(nil, 1, nil, req)); err != nil {
		t.Fatal(err)
	}
	<-released
	// The frame's header and the 50 bytes the file had arrive, then EOF.
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(nc)
	if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
		t.Fatalf("read: %v", err)
	}
	if len(got) != 4+4+50 {
		t.Fatalf("received %d bytes, want the 58 before the file ended", len(got))
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

func TestHandlerErrorClosesOnlyThatConnection(t *testing.T) {
	failing := wire.API{Key: int16(kmsg.ListOffsets), MaxVersion: 8,
		Handle: func(ctx context.Context, rc *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
			return nil, errors.New("cannot serve")
		}}
	panicking := wire.API{Key: int16(kmsg.OffsetForLeaderEpoch), MaxVersion: 4,
		Handle: func(ctx context.Context, rc *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
			var s []int
			return nil, fmt.Errorf("unreachable %d", s[len(rc.Listener)]) // a runtime panic
		}}
	wrongKey := wire.API{Key: int16(kmsg.DescribeCluster), MaxVersion: 1,
		Handle: func(ctx context.Context, rc *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
			return kmsg.NewPtrMetadataResponse(), nil
		}}
	_, addr := startTransport(t, connLimits{}, testService{failing, panicking, wrongKey, metadataAPI()})
	other := dial(t, addr)
	for _, req := range []kmsg.Request{kmsg.NewPtrListOffsetsRequest(), kmsg.NewPtrOffsetForLeaderEpochRequest(), kmsg.NewPtrDescribeClusterRequest()} {
		nc := dialRaw(t, addr)
		if _, err := nc.Write(wire.AppendRequest(nil, 1, nil, req)); err != nil {
			t.Fatal(err)
		}
		expectClosed(t, nc)
		request(t, other, kmsg.NewPtrMetadataRequest())
	}
}

// TestBadInputClosesOnlyThatConnection covers Kafka's rules for input that
// cannot be served: each closes its own connection while another client
// carries on.
func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	_, addr := startTransport(t, connLimits{maxRequestSize: 1 << 16}, testService{metadataAPI()})
	other := dial(t, addr)
	unsupported := kmsg.NewPtrMetadataRequest()
	unsupported.SetVersion(12)
	unsupportedFrame := wire.AppendRequest(nil, 1, nil, unsupported)
	// Metadata v12 is served here; v13 is not (kmsg knows no v13, so build
	// the header by hand).
	unsupportedFrame[4+3] = 13
	cases := map[string]func(nc net.Conn){
		"frame over socket.request.max.bytes": func(nc net.Conn) {
			_, _ = nc.Write([]byte{0, 2, 0, 0}) // 128 KiB announced
		},
		"negative frame size": func(nc net.Conn) {
			_, _ = nc.Write([]byte{0xff, 0xff, 0xff, 0xf0})
		},
		"garbage header": func(nc net.Conn) { writeFrame(t, nc, []byte{0, 3}) },
		"undecodable body": func(nc net.Conn) {
			// Metadata v1 header, then a topic array claiming 1000 entries.
			writeFrame(t, nc, []byte{0, 3, 0, 1, 0, 0, 0, 9, 0xff, 0xff, 0, 0, 3, 0xe8})
		},
		"unknown API key": func(nc net.Conn) {
			writeFrame(t, nc, []byte{0x7f, 0x00, 0, 0, 0, 0, 0, 9, 0xff, 0xff})
		},
		"known key not served": func(nc net.Conn) {
			_, _ = nc.Write(wire.AppendRequest(nil, 1, nil, kmsg.NewPtrProduceRequest()))
		},
		"unsupported version": func(nc net.Conn) { _, _ = nc.Write(unsupportedFrame) },
		"truncated frame then close": func(nc net.Conn) {
			_, _ = nc.Write([]byte{0, 0, 0, 100, 0, 3})
			nc.(*net.TCPConn).CloseWrite()
		},
	}
	for name, send := range cases {
		t.Run(name, func(t *testing.T) {
			nc := dialRaw(t, addr)
			send(nc)
			expectClosed(t, nc)
			request(t, other, kmsg.NewPtrMetadataRequest())
		})
	}
}

// TestHandlerContextEndsWhenClientCloses: a handler parked in a long poll
// sees its context end when its client goes away.
func TestHandlerContextEndsWhenClientCloses(t *testing.T) {
	parked := make(chan struct{})
	ended := make(chan struct{})
	api := wire.API{Key: int16(kmsg.Fetch), MinVersion: 4, MaxVersion: 12,
		Handle: func(ctx context.Context, rc *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
			close(parked)
			<-ctx.Done()
			close(ended)
			return nil, ctx.Err()
		}}
	_, addr := startTransport(t, connLimits{}, testService{api})
	nc := dialRaw(t, addr)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(4)
	if _, err := nc.Write(wire.AppendRequest(nil, 1, nil, req)); err != nil {
		t.Fatal(err)
	}
	<-parked
	nc.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("handler context did not end after the client closed")
	}
}

// TestLongPollBlocksOnlyItsConnection: while one connection's request is
// parked, other connections are served.
func TestLongPollBlocksOnlyItsConnection(t *testing.T) {
	release := make(chan struct{})
	api := wire.API{Key: int16(kmsg.Fetch), MinVersion: 4, MaxVersion: 12,
		Handle: func(ctx context.Context, rc *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return req.ResponseKind(), nil
		}}
	_, addr := startTransport(t, connLimits{}, testService{api, metadataAPI()})
	parked := dial(t, addr)
	done := make(chan error, 1)
	go func() {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(4)
		_, err := parked.Request(context.Background(), req)
		done <- err
	}()
	other := dial(t, addr)
	for range 10 {
		request(t, other, kmsg.NewPtrMetadataRequest())
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestIdleConnectionClosed(t *testing.T) {
	_, addr := startTransport(t, connLimits{idleTimeout: 150 * time.Millisecond}, testService{metadataAPI()})
	nc := dialRaw(t, addr)
	start := time.Now()
	expectClosed(t, nc)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("closed after %v, before the idle timeout", d)
	}
	// A connection that made requests is idle from its last one.
	c := dial(t, addr)
	request(t, c, kmsg.NewPtrMetadataRequest())
}

// TestParkedRequestIsNotIdle: a request that takes longer than the idle
// timeout is answered; the connection is idle only between requests.
func TestParkedRequestIsNotIdle(t *testing.T) {
	idle := 100 * time.Millisecond
	api := wire.API{Key: int16(kmsg.Fetch), MinVersion: 4, MaxVersion: 12,
		Handle: func(ctx context.Context, rc *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
			t := time.NewTimer(5 * idle) // a long poll's MaxWait
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return req.ResponseKind(), nil
		}}
	_, addr := startTransport(t, connLimits{idleTimeout: idle}, testService{api})
	c := dial(t, addr)
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(4)
	request(t, c, req)
}

// TestConnectionsWaitForEnable: requests on a listener whose services are
// not attached yet wait for them instead of failing.
func TestConnectionsWaitForEnable(t *testing.T) {
	s, addr := startTransport(t, connLimits{}, nil)
	nc := dialRaw(t, addr)
	if _, err := nc.Write(wire.AppendRequest(nil, 5, nil, kmsg.NewPtrMetadataRequest())); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	var b [1]byte
	if _, err := nc.Read(b[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read before enable: %v, want a timeout", err)
	}
	if err := s.listeners[0].ep.enable(testService{metadataAPI()}); err != nil {
		t.Fatal(err)
	}
	if corr, _ := readResponseFrame(t, nc); corr != 5 {
		t.Fatalf("correlation id %d", corr)
	}
}

func TestEnableRejectsConflicts(t *testing.T) {
	e := newEndpoint("PLAINTEXT", "PLAINTEXT")
	if err := e.enable(testService{metadataAPI()}, testService{metadataAPI()}); err == nil {
		t.Fatal("a key served twice was accepted")
	}
	e = newEndpoint("PLAINTEXT", "PLAINTEXT")
	av := wire.API{Key: int16(kmsg.ApiVersions), MaxVersion: 3, Handle: metadataAPI().Handle}
	if err := e.enable(testService{av}); err == nil {
		t.Fatal("a service serving ApiVersions was accepted")
	}
}

// TestRaftConnectionsHandedOff: on a listener that carries raft, a
// connection starting with the raft preamble goes to the stream layer and a
// Kafka connection on the same port is served as usual.
func TestRaftConnectionsHandedOff(t *testing.T) {
	var stream *quorum.StreamLayer
	_, addr := startTransport(t, connLimits{}, testService{metadataAPI()}, func(s *netServer) {
		stream = quorum.NewStreamLayer(s.listeners[0].ln.Addr())
		s.listeners[0].raft = stream
	})
	t.Cleanup(func() { stream.Close() })

	peer := quorum.NewStreamLayer(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1})
	out, err := peer.Dial(raft.ServerAddress(addr), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := out.Write([]byte("raft bytes")); err != nil {
		t.Fatal(err)
	}
	in, err := stream.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	got := make([]byte, 10)
	_ = in.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(in, got); err != nil || string(got) != "raft bytes" {
		t.Fatalf("raft side read %q, %v", got, err)
	}
	request(t, dial(t, addr), kmsg.NewPtrMetadataRequest())
}

// TestCloseConnsEndsParkedHandlers: shutdown ends handlers parked in long
// polls and returns once every connection goroutine is gone.
func TestCloseConnsEndsParkedHandlers(t *testing.T) {
	parked := make(chan struct{}, 4)
	api := wire.API{Key: int16(kmsg.Fetch), MinVersion: 4, MaxVersion: 12,
		Handle: func(ctx context.Context, rc *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
			parked <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}}
	s, addr := startTransport(t, connLimits{}, testService{api})
	for range 4 {
		nc := dialRaw(t, addr)
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(4)
		if _, err := nc.Write(wire.AppendRequest(nil, 1, nil, req)); err != nil {
			t.Fatal(err)
		}
		go discard(nc)
	}
	for range 4 {
		<-parked
	}
	s.closeListeners()
	done := make(chan struct{})
	go func() {
		s.closeConns()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("closeConns did not return")
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Fatal("listener still accepts after closeListeners")
	}
}

// sendBufForTest is Kafka's default socket.send.buffer.bytes. (Much smaller
// buffers make loopback transfers to a client reading with large buffers
// crawl, whatever the sender does.)
const sendBufForTest = 102400
