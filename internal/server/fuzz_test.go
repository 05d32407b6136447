package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// FuzzServeFrame feeds arbitrary request frames to the parse-and-dispatch
// path of a live node's client and controller listeners, so the broker's and
// the controller's handlers see whatever the decoder lets through: nothing
// may panic (a handler panic is recovered, but it is reported here as a
// failure), and every response must encode. The seeds are an empty request
// of every served key at every served version.
func FuzzServeFrame(f *testing.F) {
	// Handlers log at warn for client mistakes; the fuzzer makes many.
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	n := startTestNodeLogging(f, map[string]string{"socket.request.max.bytes": "1048576"}, logger)
	eps := []*endpoint{n.net.listener("PLAINTEXT").ep, n.net.listener("CONTROLLER").ep}
	clientID := "fuzz"
	for _, ep := range eps {
		for _, vr := range ep.reg.Keys() {
			for v := vr.Min; v <= vr.Max; v++ {
				req := ep.reg.NewRequest(vr.Key)
				req.SetVersion(v)
				frame := wire.AppendRequest(nil, 1, &clientID, req)
				f.Add(frame[4:]) // without the size prefix, as dispatch takes it
			}
		}
	}
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 12345}
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, ep := range eps {
			// Long polls (Fetch MaxWait, Produce acks=-1) end with the
			// context, as when their connection closes.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			hdr, resp, err := ep.dispatch(ctx, addr, frame)
			cancel()
			if pe, ok := err.(*panicError); ok {
				t.Fatalf("%s v%d on %s: %v\n%s", wire.APIName(hdr.APIKey), hdr.APIVersion, ep.listener, pe.value, pe.stack)
			}
			switch r := resp.(type) {
			case *wire.StreamResponse:
				r.Done()
			case kmsg.Response:
				_ = wire.AppendResponse(nil, hdr.CorrelationID, r)
			}
		}
	})
}
