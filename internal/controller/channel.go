package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/quorum"
	"github.com/kmirror/kmirror/internal/wire"
)

// Channel sends controller-bound requests to the active controller: in
// process when this node's controller is active, else over one wire.Conn to
// the quorum leader's controller listener (its raft address: the server
// tells raft from Kafka traffic on that port by the first bytes). On
// NOT_CONTROLLER, a dead connection or no known leader it waits for a
// leadership change (or a short backoff) and tries again, until the
// request's context ends. It works the same on a single node and in a
// cluster, and is safe for concurrent use (remote requests share the
// connection one at a time).
type Channel struct {
	q        *quorum.Quorum
	local    *Controller
	clientID string
	log      *slog.Logger

	// voters are tried in turn while the quorum knows no leader.
	voters []string
	// dialOpts secure connections to controller listeners (TLS, SASL).
	dialOpts []wire.DialOption

	mu        sync.Mutex
	nextVoter int
	conn      *wire.Conn
	addr      string
	changed   chan struct{} // closed and replaced on every leadership change
	closed    bool

	closing chan struct{}
	wg      sync.WaitGroup
}

// Channel retry backoff bounds: the first retry is quick (a new leader
// usually needs a barrier only), later ones slow down.
const (
	channelMinBackoff = 5 * time.Millisecond
	channelMaxBackoff = 500 * time.Millisecond
	channelDialLimit  = 5 * time.Second
)

// ErrChannelClosed is returned by Send after Close.
var ErrChannelClosed = errors.New("controller channel closed")

// ChannelOption configures a Channel.
type ChannelOption func(*Channel)

// WithVoters gives the channel the voters' addresses (controller.quorum.voters:
// their controller listeners), which it tries in turn while its quorum
// member knows no leader. A broker-only node needs them: its member learns
// the leader only once the active controller has added it to the quorum,
// which its registration does.
func WithVoters(addrs ...string) ChannelOption {
	return func(c *Channel) { c.voters = append([]string(nil), addrs...) }
}

// WithDialOptions secures the channel's connections to remote controllers
// as the controller listener's security protocol requires (wire.WithTLS,
// wire.WithSASL).
func WithDialOptions(opts ...wire.DialOption) ChannelOption {
	return func(c *Channel) { c.dialOpts = append([]wire.DialOption(nil), opts...) }
}

// NewChannel returns a channel that finds the active controller through q.
// local is this node's controller, or nil on a broker-only node. clientID is
// sent in the header of remote requests.
func NewChannel(q *quorum.Quorum, local *Controller, clientID string, logger *slog.Logger, opts ...ChannelOption) *Channel {
	if logger == nil {
		logger = slog.Default()
	}
	c := &Channel{
		q: q, local: local, clientID: clientID,
		log:     logger.With("component", "controller-channel"),
		changed: make(chan struct{}),
		closing: make(chan struct{}),
	}
	for _, o := range opts {
		o(c)
	}
	changes := q.LeaderChanges()
	c.wg.Add(1)
	go c.watch(changes)
	return c
}

// watch broadcasts leadership changes to waiting senders until Close or
// until the quorum closes.
func (c *Channel) watch(changes <-chan struct{}) {
	defer c.wg.Done()
	for {
		select {
		case <-c.closing:
			return
		case _, ok := <-changes:
			c.mu.Lock()
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
			if !ok {
				return
			}
		}
	}
}

// Close closes the connection and stops the channel; later Sends fail with
// ErrChannelClosed.
func (c *Channel) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.closing)
	conn := c.conn
	c.conn = nil
	c.mu.Unlock()
	var err error
	if conn != nil {
		err = conn.Close()
	}
	c.wg.Wait()
	return err
}

// Send sends req, at the version it carries, to the active controller and
// returns its response. A response that still says NOT_CONTROLLER when ctx
// ends is returned as it is (the sender's own retry rules apply); an error
// means no controller answered at all. Send strips kmirror's internal tags
// (internal_tags.go): only the Channel's own internal requests carry them.
func (c *Channel) Send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	stripInternalTags(req)
	return c.send(ctx, req)
}

// SendForMirror sends req as a mirror's own sync: an
// IncrementalAlterConfigs (v1) of the mirror's topics' configs, or a
// CreatePartitions (v2 or later) adding the source's partitions. It carries
// mirrorSyncTag, which lets it change the mirror's read-only topics
// (mirror_readonly.go); otherwise it is Send.
func (c *Channel) SendForMirror(ctx context.Context, mirror string, req kmsg.Request) (kmsg.Response, error) {
	stripInternalTags(req)
	switch r := req.(type) {
	case *kmsg.IncrementalAlterConfigsRequest:
		r.Version = max(r.Version, 1)
	case *kmsg.CreatePartitionsRequest:
		r.Version = max(r.Version, 2)
	default:
		return nil, fmt.Errorf("send %s for mirror %s: only IncrementalAlterConfigs and CreatePartitions carry a mirror's sync", wire.APIName(req.Key()), mirror)
	}
	setTag(req, mirrorSyncTag, []byte(mirror))
	return c.send(ctx, req)
}

// CreateInternalTopic creates an internal topic through the active
// controller, as Controller.CreateInternalTopic does: idempotent, returning
// the topic's id. Remotely, the CreateTopics request carries kmirror's
// internal-topic tag, which the controller honours only on its controller
// listener.
func (c *Channel) CreateInternalTopic(ctx context.Context, name string, partitions int32, configs map[string]string) (metadata.Uuid, error) {
	if !IsInternalTopic(name) {
		return metadata.Uuid{}, fmt.Errorf("create internal topic: %s is not an internal topic", name)
	}
	req := internalTopicRequest(name, partitions, configs)
	setTag(req, internalTopicTag, []byte{1})
	resp, err := c.send(ctx, req)
	if err != nil {
		return metadata.Uuid{}, err
	}
	return internalTopicResult(resp)
}

// send retries req until a controller other than a non-active one answers.
func (c *Channel) send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	backoff := channelMinBackoff
	var lastResp kmsg.Response
	var lastErr error
	for {
		c.mu.Lock()
		closed, changed := c.closed, c.changed
		c.mu.Unlock()
		if closed {
			return nil, ErrChannelClosed
		}
		resp, err := c.try(ctx, req)
		switch {
		case err == nil && !hasNotController(resp):
			return resp, nil
		case err == nil:
			lastResp = resp
		default:
			lastErr = err
		}
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			if lastResp != nil {
				return lastResp, nil
			}
			return nil, fmt.Errorf("send %s to the active controller: %w (last error: %v)", wire.APIName(req.Key()), ctx.Err(), lastErr)
		case <-c.closing:
			timer.Stop()
			return nil, ErrChannelClosed
		case <-changed:
			timer.Stop()
			backoff = channelMinBackoff
		case <-timer.C:
			backoff = min(2*backoff, channelMaxBackoff)
		}
	}
}

// errNoLeader means the quorum knows no leader right now.
var errNoLeader = errors.New("no metadata quorum leader known")

// try sends req once: locally if this node's controller is active, else to
// the leader's address.
func (c *Channel) try(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if c.local != nil && c.local.IsActive() {
		return c.local.handleLocal(ctx, req)
	}
	id, addr, ok := c.q.Leader()
	if !ok {
		if len(c.voters) == 0 {
			return nil, errNoLeader
		}
		c.mu.Lock()
		id, addr = -1, c.voters[c.nextVoter%len(c.voters)]
		c.nextVoter++
		c.mu.Unlock()
	}
	if c.local != nil && id == c.local.nodeID {
		// This node leads but its controller has not caught up yet.
		return c.local.handleLocal(ctx, req)
	}
	conn, err := c.connTo(ctx, addr)
	if err != nil {
		return nil, err
	}
	rctx, cancel := c.untilLeaderMoves(ctx, addr)
	defer cancel()
	resp, err := conn.Request(rctx, req)
	if err != nil {
		c.drop(conn)
		c.log.Debug("controller request failed", "addr", addr, "api", wire.APIName(req.Key()), "err", err)
		return nil, err
	}
	return resp, nil
}

// untilLeaderMoves returns a context that also ends when the quorum names
// a leader other than the one at addr. A request in flight to an old
// leader that stopped without closing its connections (a paused process,
// a partitioned host) would otherwise wait for ctx, holding the sender
// past the quorum's failover; cut short, send retries at the new leader.
func (c *Channel) untilLeaderMoves(ctx context.Context, addr string) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			c.mu.Lock()
			changed := c.changed
			c.mu.Unlock()
			if _, now, ok := c.q.Leader(); ok && now != addr {
				cancel()
				return
			}
			select {
			case <-rctx.Done():
				return
			case <-c.closing:
				cancel()
				return
			case <-changed:
			}
		}
	}()
	return rctx, cancel
}

// connTo returns the connection to addr, dialing it (and closing one to
// an old leader) when needed.
func (c *Channel) connTo(ctx context.Context, addr string) (*wire.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrChannelClosed
	}
	if c.conn != nil && c.addr == addr {
		return c.conn, nil
	}
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
	dctx, cancel := context.WithTimeout(ctx, channelDialLimit)
	defer cancel()
	conn, err := wire.Dial(dctx, "tcp", addr, c.clientID, c.dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("dial controller at %s: %w", addr, err)
	}
	c.conn, c.addr = conn, addr
	c.log.Debug("connected to controller", "addr", addr)
	return conn, nil
}

// drop forgets a connection that failed (a Conn is unusable after any
// failure).
func (c *Channel) drop(conn *wire.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == conn {
		_ = conn.Close()
		c.conn = nil
	}
}
