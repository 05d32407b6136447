package mirror

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// Dialer opens a connection to another broker of this cluster at addr.
type Dialer func(ctx context.Context, addr string) (*wire.Conn, error)

// idlePerAddr bounds the idle connections kept per broker.
const idlePerAddr = 4

// connPool keeps connections to the other brokers of this cluster for the
// mirror's inter-broker requests (state reads and writes, forwarded LME
// reads, DescribeMirrors fan-out). A wire.Conn carries one request at a
// time: concurrent requests to one broker use different connections. A
// connection that failed is closed, never reused.
type connPool struct {
	dial Dialer

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
	return &connPool{dial: dial, idle: map[string][]*wire.Conn{}}
}

var errPoolClosed = fmt.Errorf("mirror: shutting down: %w", kerr.NotCoordinator)

// request sends req to the broker at addr.
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
	if p.closed || len(p.idle[addr]) >= idlePerAddr {
		_ = c.Close()
		return
	}
	p.idle[addr] = append(p.idle[addr], c)
}

// close closes the idle connections; those in use close when their request
// ends.
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

// errNoLeader means a partition has no live leader to ask right now.
var errNoLeader = errors.New("no leader")

// brokerAddr is the address of broker id's listener in img.
func brokerAddr(img *metadata.Image, id int32, listener string) (string, error) {
	b, ok := img.Broker(id)
	if !ok {
		return "", fmt.Errorf("broker %d is not registered: %w", id, kerr.CoordinatorNotAvailable)
	}
	if b.Fenced {
		return "", fmt.Errorf("broker %d is fenced: %w", id, kerr.CoordinatorNotAvailable)
	}
	ep, ok := b.Endpoint(listener)
	if !ok {
		return "", fmt.Errorf("broker %d has no listener %s: %w", id, listener, kerr.CoordinatorNotAvailable)
	}
	return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), nil
}

// stateLeader returns the leader of a __mirror_state partition in img.
func stateLeader(img *metadata.Image, topic string, partition int32) (int32, error) {
	t, ok := img.Topic(topic)
	if !ok {
		return -1, fmt.Errorf("%s does not exist yet: %w", topic, kerr.CoordinatorNotAvailable)
	}
	ps, ok := t.Partition(partition)
	if !ok || ps.Leader < 0 {
		return -1, fmt.Errorf("%s partition %d: %w: %w", topic, partition, errNoLeader, kerr.CoordinatorNotAvailable)
	}
	return ps.Leader, nil
}
