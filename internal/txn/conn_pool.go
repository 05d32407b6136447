package txn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// maxIdleConns bounds the idle connections kept per broker address.
const maxIdleConns = 4

// connPool keeps connections to other brokers for the coordinator's
// inter-broker requests (WriteTxnMarkers, verification). A wire.Conn carries
// one request at a time; concurrent requests to one broker take different
// connections, and up to maxIdleConns of them are kept for reuse. A
// connection that failed is closed, never reused.
type connPool struct {
	dial     Dialer
	clientID string

	mu     sync.Mutex
	idle   map[string][]*wire.Conn
	closed bool
}

func newConnPool(dial Dialer, clientID string) *connPool {
	if dial == nil {
		dial = func(ctx context.Context, addr string) (*wire.Conn, error) {
			return wire.Dial(ctx, "tcp", addr, clientID)
		}
	}
	return &connPool{dial: dial, clientID: clientID, idle: map[string][]*wire.Conn{}}
}

var errPoolClosed = errors.New("transaction coordinator is shutting down")

// request sends req to the broker at addr and returns its response.
func (p *connPool) request(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	c, err := p.get(ctx, addr)
	if err != nil {
		return nil, err
	}
	resp, err := c.Request(ctx, req)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	p.put(addr, c)
	return resp, nil
}

func (p *connPool) get(ctx context.Context, addr string) (*wire.Conn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errPoolClosed
	}
	if cs := p.idle[addr]; len(cs) > 0 {
		c := cs[len(cs)-1]
		p.idle[addr] = cs[:len(cs)-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	c, err := p.dial(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return c, nil
}

func (p *connPool) put(addr string, c *wire.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle[addr]) >= maxIdleConns {
		_ = c.Close()
		return
	}
	p.idle[addr] = append(p.idle[addr], c)
}

// close closes the idle connections; connections in use are closed when
// their request ends.
func (p *connPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for addr, cs := range p.idle {
		for _, c := range cs {
			_ = c.Close()
		}
		delete(p.idle, addr)
	}
}

// brokerAddr returns the address of broker id's listener in img.
func brokerAddr(img *metadata.Image, id int32, listener string) (string, error) {
	b, ok := img.Broker(id)
	if !ok {
		return "", fmt.Errorf("broker %d is not registered", id)
	}
	if b.Fenced {
		return "", fmt.Errorf("broker %d is fenced", id)
	}
	ep, ok := b.Endpoint(listener)
	if !ok {
		return "", fmt.Errorf("broker %d has no listener %s", id, listener)
	}
	return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), nil
}

// partitionLeader returns the leader of a partition in img; exists is
// false when the topic or partition does not exist (deleted).
func partitionLeader(img *metadata.Image, topic string, partition int32) (leader int32, exists bool) {
	t, ok := img.Topic(topic)
	if !ok {
		return -1, false
	}
	ps, ok := t.Partition(partition)
	if !ok {
		return -1, false
	}
	return ps.Leader, true
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
