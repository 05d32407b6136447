package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/wire"
)

// connLimits are the per-connection settings of a node.
type connLimits struct {
	// maxRequestSize is socket.request.max.bytes.
	maxRequestSize int32
	// idleTimeout is connections.max.idle.ms: a connection with no request
	// in progress that sends nothing for this long is closed.
	idleTimeout time.Duration
}

// readBufferSize is the size of a connection's read buffer; small requests
// (most of them) arrive in one read together with their size prefix.
const readBufferSize = 32 << 10

// conn serves the Kafka requests of one connection: a reader goroutine
// frames requests, the goroutine that calls serve parses, dispatches and
// answers them one at a time.
type conn struct {
	nc     net.Conn
	ep     *endpoint
	limits connLimits
	log    *slog.Logger

	// busy is true while a request is being processed, so that the idle
	// timer does not close a connection parked in a long poll.
	busy atomic.Bool

	// principal is who the connection is: User:ANONYMOUS, the TLS client
	// certificate's, or the SASL user's once authenticated. Only the
	// processing goroutine uses it.
	principal string
	// sasl is the authentication state of a SASL listener's connection,
	// nil on other listeners.
	sasl *saslState
	// reqs records each request's latency and errors (metrics.go).
	reqs *requestMetrics
}

// serve runs the connection until the client goes away, a request closes
// it, or ctx ends; it closes nc before returning. first holds bytes already
// read from nc (the 4 sniffed bytes), which start the first frame.
func (c *conn) serve(ctx context.Context, first []byte) {
	ctx, cancel := context.WithCancel(ctx)
	// Closing the connection is how both goroutines are interrupted: the
	// reader may be blocked in a read, the processor in a write.
	stop := context.AfterFunc(ctx, func() { c.nc.Close() })

	frames := make(chan []byte)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer cancel()
		c.readFrames(ctx, io.MultiReader(bytes.NewReader(first), c.nc), frames)
	}()
	defer func() {
		cancel() // closes the connection, which ends the reader
		<-readerDone
		stop()
		c.nc.Close()
	}()

	w := &responseWriter{nc: c.nc}
	for {
		var frame []byte
		select {
		case frame = <-frames:
		case <-ctx.Done():
			return
		}
		ok, mute := c.process(ctx, w, frame)
		if cap(frame) > maxKeptBuffer {
			// The reader dropped its reference (readFrames) and the
			// request is answered: nothing aliases the frame any more.
			wire.RecycleFrame(frame)
		}
		if !ok {
			return
		}
		if mute > 0 {
			// A throttled client (a quota): the connection is muted for
			// the throttle time after the response (KIP-219).
			t := time.NewTimer(mute)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
	}
}

// throttleOf returns the throttle time a response carries (kmsg responses
// and stream responses report it with Throttle).
func throttleOf(resp wire.Response) time.Duration {
	if t, ok := resp.(interface{ Throttle() (int32, bool) }); ok {
		if ms, _ := t.Throttle(); ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return 0
}

// process handles one frame; false means the connection must close, and
// mute is how long it must then wait before reading the next request (the
// response's throttle time).
func (c *conn) process(ctx context.Context, w *responseWriter, frame []byte) (ok bool, mute time.Duration) {
	c.busy.Store(true)
	defer c.busy.Store(false)
	if c.sasl != nil && !c.sasl.done {
		return c.authenticate(ctx, w, frame), 0
	}
	start := time.Now()
	hdr, resp, err := c.ep.dispatchAs(ctx, c.nc.RemoteAddr(), c.principal, frame)
	defer func() { c.reqs.observe(hdr.APIKey, c.ep.serves(hdr.APIKey), time.Since(start), resp, err != nil) }()
	if err != nil {
		c.logRequestError(ctx, hdr, err)
		return false, 0
	}
	if resp == nil {
		return true, 0
	}
	if c.limits.idleTimeout > 0 {
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.limits.idleTimeout))
	}
	mute = throttleOf(resp)
	if err := w.write(hdr.CorrelationID, resp); err != nil {
		if ctx.Err() == nil {
			c.log.Info("closing connection: writing the response failed",
				"api", wire.APIName(hdr.APIKey), "api_key", hdr.APIKey, "api_version", hdr.APIVersion,
				"correlation_id", hdr.CorrelationID, "error", err)
		}
		return false, 0
	}
	return true, mute
}

// readFrames reads request frames and hands them to the processor. It uses
// two buffers in turn: the processor works on one frame (its decoded request
// may alias it) while the next is read into the other, and a frame is handed
// over only once the processor has finished the previous one.
func (c *conn) readFrames(ctx context.Context, r io.Reader, frames chan<- []byte) {
	br := bufio.NewReaderSize(r, readBufferSize)
	var bufs [2][]byte
	for i := 0; ; i ^= 1 {
		if err := c.awaitRequest(br); err != nil {
			c.logReadError(ctx, err)
			return
		}
		// The frame has started: it gets the whole idle period to arrive.
		if c.limits.idleTimeout > 0 {
			_ = c.nc.SetReadDeadline(time.Now().Add(c.limits.idleTimeout))
		}
		frame, err := wire.ReadFrame(br, c.limits.maxRequestSize, bufs[i])
		if err != nil {
			c.logReadError(ctx, err)
			return
		}
		if cap(frame) <= maxKeptBuffer {
			bufs[i] = frame[:0]
		} else {
			bufs[i] = nil
		}
		select {
		case frames <- frame:
		case <-ctx.Done():
			return
		}
	}
}

// awaitRequest waits for the first byte of the next request. The idle
// timeout applies only while no request is in progress: a connection whose
// previous request is still parked (a long poll) is not idle.
func (c *conn) awaitRequest(br *bufio.Reader) error {
	if c.limits.idleTimeout <= 0 {
		_ = c.nc.SetReadDeadline(time.Time{})
		_, err := br.Peek(1)
		return err
	}
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(c.limits.idleTimeout))
		_, err := br.Peek(1)
		if err == nil {
			return nil
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if c.busy.Load() {
				continue
			}
			return errIdle
		}
		return err
	}
}

// errIdle closes a connection idle for connections.max.idle.ms.
var errIdle = errors.New("idle for connections.max.idle.ms")

// logReadError logs why reading stopped, except for the normal ends: the
// client closing the connection, or the node closing it on shutdown.
func (c *conn) logReadError(ctx context.Context, err error) {
	switch {
	case ctx.Err() != nil, errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return
	case errors.Is(err, errIdle):
		c.log.Debug("closing idle connection", "idle_timeout", c.limits.idleTimeout)
	case errors.Is(err, wire.ErrFrameTooLarge):
		c.log.Warn("closing connection: request frame too large (socket.request.max.bytes)", "error", err)
	default:
		c.log.Info("closing connection: read failed", "error", err)
	}
}

// logRequestError logs why a request closed its connection, naming the API
// so that an operator can find the client that sent it.
func (c *conn) logRequestError(ctx context.Context, hdr wire.RequestHeader, err error) {
	attrs := []any{
		"api", wire.APIName(hdr.APIKey), "api_key", hdr.APIKey, "api_version", hdr.APIVersion,
		"correlation_id", hdr.CorrelationID,
	}
	if hdr.ClientID != nil {
		attrs = append(attrs, "client_id", *hdr.ClientID)
	}
	var pe *panicError
	switch {
	case errors.As(err, &pe):
		c.log.Error("closing connection: request handler panicked", append(attrs, "panic", pe.value, "stack", string(pe.stack))...)
	case ctx.Err() != nil:
		// The connection or node is closing; the handler saw its context end.
	case errors.Is(err, wire.ErrUnknownAPIKey):
		c.log.Warn("closing connection: unknown API key", append(attrs, "error", err)...)
	case errors.Is(err, kerr.UnsupportedVersion):
		c.log.Warn("closing connection: unsupported API version", append(attrs, "error", err)...)
	case errors.Is(err, wire.ErrMalformed):
		c.log.Warn("closing connection: malformed request", append(attrs, "error", err)...)
	default:
		c.log.Warn("closing connection: request failed", append(attrs, "error", err)...)
	}
}
