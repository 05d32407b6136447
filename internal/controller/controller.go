package controller

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/quorum"
	"github.com/kmirror/kmirror/internal/wire"
)

// Config configures a Controller.
type Config struct {
	// NodeID is this node's id (node.id).
	NodeID int32
	// Cfg is the node's configuration: topic defaults, delete.topic.enable,
	// broker.session.timeout.ms, internal topic settings, the controller
	// listener names.
	Cfg *config.Config
	// Logger receives the controller's logs; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock of broker sessions; nil means time.Now. Tests
	// advance a fake clock to expire sessions.
	Now func() time.Time
	// ClusterID, when set, is checked against every BrokerRegistration
	// (INCONSISTENT_CLUSTER_ID on a mismatch). Empty skips the check.
	ClusterID string
	// BrokerDialOptions secure the controller's connections to the
	// brokers' inter-broker listener (mirror state reads from the mirror
	// coordinators): TLS, the node's SASL login.
	BrokerDialOptions []wire.DialOption
}

// proposeTimeout bounds how long a decision waits for its records to
// commit. It is independent of the request's context: once proposed, a
// decision is seen through even if the requester goes away, so that the
// next decision reads an image that includes it.
const proposeTimeout = 30 * time.Second

// barrierTimeout bounds the barrier a newly elected leader runs before it
// becomes active; a failed barrier is retried on the next tick.
const barrierTimeout = 10 * time.Second

// Controller is this node's controller. It serves the controller APIs when
// its quorum member leads (after a barrier), answers NOT_CONTROLLER
// otherwise, and, while active, fences brokers whose sessions expire.
type Controller struct {
	nodeID         int32
	cfg            *config.Config
	log            *slog.Logger
	now            func() time.Time
	clusterID      string
	brokerDial     []wire.DialOption
	q              *quorum.Quorum
	sessionTimeout time.Duration
	tick           time.Duration

	// mu serialises decisions and their proposals and guards the fields
	// below it.
	mu       sync.Mutex
	active   bool
	sessions map[int32]*session
	rnd      *mrand.Rand
	maint    maintenance

	// mirror reaches source clusters and mirror coordinators for the
	// mirror admin decisions (mirror_hooks.go).
	mirror mirrorHooks

	// activeFlag mirrors active for lock-free IsActive.
	activeFlag atomic.Bool
	// activeTerm is the raft term the controller activated in (set under
	// mu before activeFlag). Being active is tied to that term: leadership
	// lost and regained is a new term, whose barrier and sessions the
	// controller must redo, while a late signal about the gain of the
	// current term changes nothing.
	activeTerm atomic.Uint64

	life      context.Context
	stop      context.CancelFunc
	startOnce sync.Once
	closeOnce sync.Once
	wg        sync.WaitGroup
	changes   <-chan struct{}
}

// New returns a controller for the node's quorum member q. It does nothing
// until Start.
func New(cfg Config, q *quorum.Quorum) (*Controller, error) {
	if cfg.Cfg == nil {
		return nil, errors.New("controller: no configuration")
	}
	if q == nil {
		return nil, errors.New("controller: no metadata quorum")
	}
	if cfg.NodeID < 0 {
		return nil, fmt.Errorf("controller: node id %d is negative", cfg.NodeID)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	timeout := time.Duration(cfg.Cfg.BrokerSessionTimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = 9 * time.Second
	}
	var seed [16]byte
	_, _ = rand.Read(seed[:])
	life, stop := context.WithCancel(context.Background())
	return &Controller{
		nodeID:         cfg.NodeID,
		cfg:            cfg.Cfg,
		log:            cfg.Logger.With("component", "controller", "node", cfg.NodeID),
		now:            cfg.Now,
		clusterID:      cfg.ClusterID,
		brokerDial:     cfg.BrokerDialOptions,
		q:              q,
		sessionTimeout: timeout,
		tick:           min(max(timeout/8, 10*time.Millisecond), 250*time.Millisecond),
		rnd:            mrand.New(mrand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:]))),
		life:           life,
		stop:           stop,
	}, nil
}

// Start starts the goroutine that follows quorum leadership (activating
// this controller when its member leads) and fences brokers whose sessions
// expire. Close stops it.
func (c *Controller) Start() error {
	if c.life.Err() != nil {
		return errors.New("controller: closed")
	}
	c.startOnce.Do(func() {
		if c.changes == nil { // tests may feed their own signals
			c.changes = c.q.LeaderChanges()
		}
		c.wg.Add(1)
		go c.run()
	})
	return nil
}

// Close stops the controller. It does not close the quorum, which the node
// owns. Requests after Close answer NOT_CONTROLLER.
func (c *Controller) Close() error {
	c.closeOnce.Do(func() {
		c.stop()
		c.wg.Wait()
		c.mu.Lock()
		c.deactivateLocked("closed")
		c.mu.Unlock()
	})
	return nil
}

// IsActive reports whether this controller is the active one: its quorum
// member leads and it has caught up with the log since it was elected.
func (c *Controller) IsActive() bool {
	return c.activeFlag.Load() && c.leadsInTerm(c.activeTerm.Load())
}

// leadsInTerm reports whether the quorum member leads in term. The term is
// read on both sides of the leadership check, so that leadership lost and
// regained between the reads is not taken for the old term's.
func (c *Controller) leadsInTerm(term uint64) bool {
	return c.q.Term() == term && c.q.IsLeader() && c.q.Term() == term
}

// run follows leadership and checks sessions until Close.
func (c *Controller) run() {
	defer c.wg.Done()
	ticker := time.NewTicker(c.tick)
	defer ticker.Stop()
	changes := c.changes
	for {
		c.followLeadership()
		c.fenceStaleBrokers()
		c.maintain()
		select {
		case <-c.life.Done():
			return
		case _, ok := <-changes:
			if !ok {
				changes = nil // the quorum closed; Close will stop us
			}
			// Signals arrive after the fact: this one may be about the gain
			// of the term we already activated in (raft reports its state
			// before its observers hear of it), which must not cost a
			// second barrier and a window of NOT_CONTROLLER. Leadership
			// lost, or lost and regained (a new term), deactivates.
			c.mu.Lock()
			if c.active && !c.activeLocked() {
				c.deactivateLocked("leadership changed")
			}
			c.mu.Unlock()
		case <-ticker.C:
		}
	}
}

// followLeadership activates the controller when its member leads and
// deactivates it when it does not.
func (c *Controller) followLeadership() {
	if c.activeFlag.Load() {
		if c.leadsInTerm(c.activeTerm.Load()) {
			return
		}
		c.mu.Lock()
		if c.active && !c.activeLocked() {
			c.deactivateLocked("lost leadership")
		}
		c.mu.Unlock()
	}
	term := c.q.Term()
	if !c.leadsInTerm(term) {
		return
	}
	ctx, cancel := context.WithTimeout(c.life, barrierTimeout)
	err := c.q.Barrier(ctx)
	cancel()
	if err != nil {
		if c.life.Err() == nil {
			c.log.Warn("controller barrier failed; will retry", "err", err)
		}
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.life.Err() != nil || !c.leadsInTerm(term) {
		return // a later term runs its own barrier
	}
	img := c.q.Image()
	c.sessions = rebuildSessions(img, c.now())
	c.active = true
	c.activeTerm.Store(term)
	c.activeFlag.Store(true)
	c.log.Info("controller active", "metadata_offset", img.Offset(), "brokers", len(c.sessions), "term", term)
}

func (c *Controller) deactivateLocked(why string) {
	if !c.active {
		return
	}
	c.active = false
	c.activeFlag.Store(false)
	c.sessions = nil
	c.log.Info("controller inactive", "reason", why)
}

// activeLocked reports, under mu, whether decisions may be taken.
func (c *Controller) activeLocked() bool { return c.active && c.leadsInTerm(c.activeTerm.Load()) }

// viewLocked returns the view decisions read.
func (c *Controller) viewLocked() *view {
	return &view{img: c.q.Image(), cfg: c.cfg, rnd: c.rnd, newID: metadata.RandomUuid, nodeID: c.nodeID}
}

// decide runs f under the decision lock if the controller is active, and
// returns errNotActive otherwise.
func (c *Controller) decide(f func(v *view) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.activeLocked() {
		return errNotActive
	}
	return f(c.viewLocked())
}

// propose appends records to the metadata log and waits until they are
// committed and applied here. Called with mu held.
func (c *Controller) propose(recs []metadata.Record) (uint64, error) {
	ctx, cancel := context.WithTimeout(c.life, proposeTimeout)
	defer cancel()
	off, err := c.q.Propose(ctx, recs)
	if err != nil {
		c.log.Warn("metadata proposal failed", "records", len(recs), "err", err)
	}
	return off, err
}

// fenceStaleBrokers fences, one proposal each, the unfenced brokers whose
// sessions have expired, so that each election sees the previous one.
func (c *Controller) fenceStaleBrokers() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.activeLocked() {
		return
	}
	now := c.now()
	for _, id := range staleBrokers(c.q.Image(), c.sessions, now, c.sessionTimeout) {
		v := c.viewLocked()
		reg, ok := v.img.Broker(id)
		if !ok || reg.Fenced {
			continue
		}
		recs := fenceRecords(v, reg)
		if _, err := c.propose(recs); err != nil {
			return
		}
		c.log.Info("fenced broker: session expired", "broker", id, "epoch", reg.Epoch, "partition_changes", len(recs)-1)
	}
}

// Handle serves a controller request from this node as from a client:
// internal tags are not honoured. Requests the controller does not serve,
// or at versions it does not serve, are errors; everything else is
// answered with per-item error codes, NOT_CONTROLLER when this controller
// is not active.
func (c *Controller) Handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	stripInternalTags(req)
	return c.serve(ctx, req)
}

// handleLocal serves a request from a Channel of this node. Channel.Send
// strips the internal tags from everything it forwards, so a tag here comes
// from one of the Channel's own internal requests.
func (c *Controller) handleLocal(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return c.serve(ctx, req)
}

// APIs returns the APIs the controller listener serves.
func (c *Controller) APIs() []wire.API {
	apis := make([]wire.API, 0, len(servedAPIs))
	for _, a := range servedAPIs {
		apis = append(apis, wire.API{Key: a.key, MinVersion: a.min, MaxVersion: a.max, Handle: c.handleWire})
	}
	return apis
}

// handleWire serves a request that arrived on a listener. Internal tags
// count only on a controller listener.
func (c *Controller) handleWire(ctx context.Context, rc *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
	if rc == nil || !slices.Contains(c.cfg.ControllerListenerNames, rc.Listener) {
		stripInternalTags(req)
	}
	resp, err := c.serve(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// serve dispatches a request to its API.
func (c *Controller) serve(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if !supported(req.Key(), req.GetVersion()) {
		return nil, fmt.Errorf("controller: %s v%d is not served", wire.APIName(req.Key()), req.GetVersion())
	}
	if resp, ok := c.serveLeaderEpochBump(req); ok {
		return resp, nil
	}
	if resp, ok := c.serveMirror(ctx, req); ok {
		return resp, nil
	}
	if resp, ok := c.serveSyncedACLs(req); ok {
		return resp, nil
	}
	if resp, ok := c.serveFailoverComplete(ctx, req); ok {
		return resp, nil
	}
	if resp, ok, err := c.serveSecurity(req); ok {
		return resp, err
	}
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		return c.createTopics(r, hasInternalTag(r))
	case *kmsg.DeleteTopicsRequest:
		return c.deleteTopics(r)
	case *kmsg.CreatePartitionsRequest:
		return c.createPartitions(r)
	case *kmsg.AlterConfigsRequest:
		return c.alterConfigs(r)
	case *kmsg.IncrementalAlterConfigsRequest:
		return c.incrementalAlterConfigs(r)
	case *kmsg.AllocateProducerIDsRequest:
		return c.allocateProducerIDs(r)
	case *kmsg.BrokerRegistrationRequest:
		return c.registerBroker(r)
	case *kmsg.BrokerHeartbeatRequest:
		return c.brokerHeartbeat(r)
	case *kmsg.AlterPartitionRequest:
		return c.alterPartition(r)
	case *kmsg.ElectLeadersRequest:
		return c.electLeaders(r)
	case *kmsg.AlterPartitionAssignmentsRequest:
		return c.alterPartitionReassignments(r)
	case *kmsg.DescribeQuorumRequest:
		return c.describeQuorum(r)
	}
	return nil, fmt.Errorf("controller: unexpected request type %T", req)
}
