package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultMaxResponseSize bounds the response frames a Conn accepts, like
// franz-go's default BrokerMaxReadBytes.
const DefaultMaxResponseSize int32 = 100 << 20

// ErrConnBroken is wrapped by every request on a Conn after an earlier
// request left the stream in an unknown state; the caller should dial a new
// connection.
var ErrConnBroken = errors.New("connection broken by an earlier failure")

// Conn is a minimal sequential Kafka client connection for inter-node RPCs
// and tests: it frames a request with the header its key and version need,
// writes it, and reads the matching response, checking the correlation id.
// Requests are serialised (one in flight). After any I/O or protocol failure,
// or a request abandoned by its context, the stream position is unknown: the
// Conn closes itself and every later request fails.
type Conn struct {
	mu       sync.Mutex
	nc       net.Conn
	clientID string
	corr     int32
	broken   error
	wbuf     []byte
	maxResp  int32
}

// Dial connects to addr and returns a Conn that sends clientID in every
// request header. Options secure the connection (WithTLS, WithSASL): Dial
// returns once the TLS handshake and the SASL authentication have succeeded.
func Dial(ctx context.Context, network, addr string, clientID string, opts ...DialOption) (*Conn, error) {
	var o dialOptions
	for _, opt := range opts {
		opt(&o)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return secure(ctx, nc, addr, clientID, o)
}

// NewConn wraps an established connection. The Conn owns c from now on.
func NewConn(c net.Conn, clientID string) *Conn {
	return &Conn{nc: c, clientID: clientID, maxResp: DefaultMaxResponseSize}
}

// SetMaxResponseSize changes the largest response frame accepted.
func (c *Conn) SetMaxResponseSize(n int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxResp = n
}

// Close closes the connection. Requests after Close fail.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken == nil {
		c.broken = net.ErrClosed
	}
	return c.nc.Close()
}

// Request sends req at req.GetVersion() and returns its response, decoded at
// the same version. A Produce request with acks=0 has no response: Request
// returns (nil, nil) once it is written. An ApiVersions request answered with
// Kafka's version 0 fallback body (UNSUPPORTED_VERSION) returns that body with
// its version set to 0. The response owns its memory (nothing aliases buffers
// the Conn reuses).
func (c *Conn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return nil, fmt.Errorf("%s request: %w: %w", APIName(req.Key()), ErrConnBroken, c.broken)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp, err := c.roundTrip(ctx, req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = fmt.Errorf("%w (%w)", ctxErr, err)
		} else if d, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(d) {
			// The socket deadline (ctx's) passed an instant before ctx
			// noticed.
			err = fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
		}
		c.broken = err
		_ = c.nc.Close()
		return nil, fmt.Errorf("%s request: %w", APIName(req.Key()), err)
	}
	return resp, nil
}

func (c *Conn) roundTrip(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	// The deadline follows ctx; cancelling ctx moves it into the past so a
	// blocked read or write returns at once.
	deadline, _ := ctx.Deadline()
	if err := c.nc.SetDeadline(deadline); err != nil {
		return nil, err
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		_ = c.nc.SetDeadline(time.Unix(1, 0))
		close(fired)
	})
	defer func() {
		if !stop() {
			<-fired // the next request must not have its deadline clobbered
		}
	}()

	c.corr++
	corr := c.corr
	c.wbuf = AppendRequest(c.wbuf[:0], corr, &c.clientID, req)
	if _, err := c.nc.Write(c.wbuf); err != nil {
		return nil, err
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil, nil
	}

	frame, err := ReadFrame(c.nc, c.maxResp, nil)
	if err != nil {
		return nil, err
	}
	r := NewReader(frame)
	got := r.Int32()
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("response header: %w", err)
	}
	if got != corr {
		return nil, fmt.Errorf("%w: correlation id %d, expected %d", ErrMalformed, got, corr)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if ResponseHeaderVersion(req.Key(), req.GetVersion()) == 1 {
		r.Tags()
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("response header: %w", err)
		}
	}
	body := frame[len(frame)-r.Len():]
	if req.Key() == apiVersionsKey && req.GetVersion() > 0 && len(body) >= 2 &&
		int16(body[0])<<8|int16(body[1]) == errUnsupportedVersionCode {
		resp.SetVersion(0)
	}
	if err := decodeResponse(resp, body); err != nil {
		return nil, fmt.Errorf("%s v%d response: %w: %w", APIName(req.Key()), resp.GetVersion(), ErrMalformed, err)
	}
	return resp, nil
}

// decodeResponse runs the response decoder, turning a panic into an error.
func decodeResponse(resp kmsg.Response, body []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("decoder panic: %v", p)
		}
	}()
	return resp.ReadFrom(body)
}
