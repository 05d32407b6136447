package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/broker"
	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/controller"
	"github.com/kmirror/kmirror/internal/quorum"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// Option adjusts how a Node starts.
type Option func(*options)

type options struct {
	listeners map[string]net.Listener
	clusterID string
	now       func() time.Time
}

// WithListener makes the node serve the listener called name on ln, which
// the caller bound already, instead of binding its configured address. The
// node owns ln from then on. Tests use it to learn :0 ports before writing
// controller.quorum.voters.
func WithListener(name string, ln net.Listener) Option {
	return func(o *options) {
		if o.listeners == nil {
			o.listeners = map[string]net.Listener{}
		}
		o.listeners[name] = ln
	}
}

// WithClusterID gives the cluster id to write into log directories that have
// no meta.properties yet. Every node of a multi-node cluster must be given
// the same id on its first start; later starts read it from the directories
// (and refuse a different one).
func WithClusterID(id string) Option {
	return func(o *options) { o.clusterID = id }
}

// WithClock replaces time.Now for the node's components (tests).
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// Node is one kmirror process's server: its log directories, listeners,
// metadata quorum member, controller and broker, started in dependency order
// and stopped in reverse.
type Node struct {
	cfg  *config.Config
	log  *slog.Logger
	opts options

	isBroker, isController bool

	startMu sync.Mutex // serialises Start and the teardown it may run
	started bool

	clusterID  string
	sec        *security
	net        *netServer
	logs       *storage.Manager
	stream     *quorum.StreamLayer
	quorum     *quorum.Quorum
	controller *controller.Controller
	channel    *controller.Channel
	broker     *broker.Broker
	coord      *coordinators
	mirror     *mirrorNode
	metrics    *nodeMetrics
	life       *lifecycle
	lifeCancel context.CancelFunc
	lifeDone   chan struct{}

	// closing ends when Shutdown begins; it aborts a Start in progress.
	closing      context.Context
	closeStart   context.CancelFunc
	shutdownOnce sync.Once
	hurry        chan struct{} // closed by a second Shutdown: skip the waits
	hurryOnce    sync.Once
	stopped      chan struct{} // closed when the shutdown has finished
	shutdownErr  error
}

// New validates what can be checked without touching the disk or the
// network and returns a node ready to Start.
func New(cfg *config.Config, logger *slog.Logger, opts ...Option) (*Node, error) {
	if cfg == nil {
		return nil, errors.New("server: no configuration")
	}
	if logger == nil {
		logger = slog.Default()
	}
	n := &Node{
		cfg:          cfg,
		log:          logger.With("node", cfg.NodeID),
		isBroker:     slices.Contains(cfg.ProcessRoles, "broker"),
		isController: slices.Contains(cfg.ProcessRoles, "controller"),
		hurry:        make(chan struct{}),
		stopped:      make(chan struct{}),
	}
	n.closing, n.closeStart = context.WithCancel(context.Background())
	for _, o := range opts {
		o(&n.opts)
	}
	if n.opts.now == nil {
		n.opts.now = time.Now
	}
	if id := n.opts.clusterID; id != "" {
		if _, err := storage.ParseUUID(id); err != nil {
			return nil, fmt.Errorf("cluster id %q is not a Kafka cluster id (22 characters of base64url, as kafka-storage random-uuid prints): %w", id, err)
		}
	}
	if len(cfg.QuorumVoters) == 0 {
		return nil, errors.New("controller.quorum.voters: kmirror needs the static voter set (controller.quorum.bootstrap.servers alone is not supported yet)")
	}
	return n, nil
}

// ClusterID returns the cluster id (known once Start has read or written
// meta.properties).
func (n *Node) ClusterID() string { return n.clusterID }

// NodeID returns node.id.
func (n *Node) NodeID() int32 { return n.cfg.NodeID }

// Config returns the configuration the node was built with.
func (n *Node) Config() *config.Config { return n.cfg }

// Addr returns the bound address of the listener called name (its real
// port when configured with port 0), or nil for an unknown name. It may be
// called between Start and Shutdown.
func (n *Node) Addr(listener string) net.Addr {
	if n.net == nil {
		return nil
	}
	if l := n.net.listener(listener); l != nil {
		return l.ln.Addr()
	}
	return nil
}

// Broker returns the node's broker, nil without the broker role.
func (n *Node) Broker() *broker.Broker { return n.broker }

// Controller returns the node's controller, nil without the controller role.
func (n *Node) Controller() *controller.Controller { return n.controller }

// Quorum returns the node's metadata quorum member.
func (n *Node) Quorum() *quorum.Quorum { return n.quorum }

// Logs returns the node's log manager.
func (n *Node) Logs() *storage.Manager { return n.logs }

// Start brings the node up and returns once it serves clients: for a broker,
// once the controller has unfenced it. On failure (or when ctx ends first)
// everything started so far is stopped again and the error returned.
func (n *Node) Start(ctx context.Context) (err error) {
	n.startMu.Lock()
	defer n.startMu.Unlock()
	if n.started {
		return errors.New("server: node already started")
	}
	n.started = true
	begin := n.opts.now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(n.closing, cancel)
	defer stop()
	defer func() {
		if err != nil {
			n.teardown(true)
		}
	}()

	if err := n.startMetrics(); err != nil {
		return err
	}
	if err := n.openDirs(); err != nil {
		return err
	}
	if err := n.bindListeners(); err != nil {
		return err
	}
	n.metrics.setStage(stageQuorum)
	if err := n.openQuorum(); err != nil {
		return err
	}
	if n.isController {
		if err := n.startController(); err != nil {
			return err
		}
	}
	// The voters' controller listeners let a broker-only node reach the
	// active controller before its quorum member knows the leader (it
	// learns it once its registration has added it to the quorum).
	var voters []string
	for _, v := range n.cfg.QuorumVoters {
		voters = append(voters, v.Address())
	}
	ctlDial, err := n.dialOptions(n.cfg.ControllerListenerNames[0])
	if err != nil {
		return err
	}
	n.channel = controller.NewChannel(n.quorum, n.controller, "kmirror-node-"+strconv.Itoa(int(n.cfg.NodeID)), n.log,
		controller.WithVoters(voters...), controller.WithDialOptions(ctlDial...))
	if n.isBroker {
		if err := n.startBroker(ctx); err != nil {
			return err
		}
	}
	n.metricsStarted()
	n.log.Info("kmirror node started", "cluster_id", n.clusterID, "roles", n.cfg.ProcessRoles,
		"listeners", n.boundListeners(), "took", n.opts.now().Sub(begin).Round(time.Millisecond))
	return nil
}

// openDirs settles meta.properties and loads every partition.
func (n *Node) openDirs() error {
	dirs := metaDirs(n.cfg.LogDirs, n.cfg.MetadataLogDir)
	// A cluster id may be generated only by a node that forms the whole
	// quorum alone; the nodes of a larger cluster must be given one.
	alone := len(n.cfg.QuorumVoters) == 1 && n.cfg.QuorumVoters[0].ID == n.cfg.NodeID
	id, err := prepareMetaProperties(dirs, n.cfg.NodeID, n.opts.clusterID, alone)
	if err != nil {
		return err
	}
	n.clusterID = id
	if !n.isBroker {
		return nil // a controller-only node hosts no partitions
	}
	defaults, err := n.cfg.Topic(nil)
	if err != nil {
		return fmt.Errorf("broker topic defaults: %w", err)
	}
	n.logs, err = storage.NewManager(storage.ManagerConfig{
		Dirs:                                 n.cfg.LogDirs,
		Defaults:                             logConfigOf(defaults),
		RecoveryThreadsPerDir:                int(n.cfg.NumRecoveryThreadsPerDataDir),
		FlushSchedulerIntervalMs:             n.cfg.LogFlushSchedulerIntervalMs,
		FlushCheckpointIntervalMs:            int64(n.cfg.LogFlushOffsetCheckpointIntervalMs),
		FlushStartOffsetCheckpointIntervalMs: int64(n.cfg.LogFlushStartOffsetCheckpointIntervalMs),
		RetentionCheckIntervalMs:             n.cfg.LogRetentionCheckIntervalMs,
		ProducerIDExpirationMs:               int64(n.cfg.ProducerIDExpirationMs),
		ProducerIDExpirationCheckIntervalMs:  int64(n.cfg.ProducerIDExpirationCheckIntervalMs),
		HighWatermarkCheckpointIntervalMs:    n.cfg.ReplicaHighWatermarkCheckpointIntervalMs,
		Cleaner:                              cleanerConfigOf(n.cfg),
		ClusterID:                            n.clusterID,
		NodeID:                               n.cfg.NodeID,
		Now:                                  n.opts.now,
		Logger:                               n.log.With("component", "storage"),
	})
	if err != nil {
		return fmt.Errorf("open log directories: %w", err)
	}
	n.logs.Start()
	return nil
}

// bindListeners binds every listener and starts accepting. Kafka
// connections wait until their listener's services are attached; raft
// connections are handed to the quorum at once.
func (n *Node) bindListeners() error {
	n.net = newNetServer(n.log.With("component", "network"), connLimits{
		maxRequestSize: n.cfg.SocketRequestMaxBytes,
		idleTimeout:    time.Duration(n.cfg.ConnectionsMaxIdleMs) * time.Millisecond,
	}, int(n.cfg.SocketSendBufferBytes), int(n.cfg.SocketReceiveBufferBytes))
	prebound := n.opts.listeners
	n.opts.listeners = nil // owned by the net server from here, even on failure
	sec, err := n.newSecurity()
	if err != nil {
		closeAll(prebound)
		return err
	}
	n.sec = sec
	if err := n.net.bind(n.cfg.Listeners, prebound); err != nil {
		return err
	}
	sec.attach(n.net, n.cfg.ControllerListenerNames)
	name, advertise, err := n.raftEndpoint()
	if err != nil {
		return err
	}
	security, err := n.raftDialSecurity()
	if err != nil {
		return err
	}
	n.stream = quorum.NewStreamLayer(raftAddr(advertise), quorum.WithDialSecurity(security))
	n.net.listener(name).raft = n.stream
	n.net.start()
	return nil
}

// raftEndpoint returns the listener that carries this node's raft traffic
// and the address peers dial for it: a voter's controller listener, at its
// controller.quorum.voters address; for a broker-only node, the
// inter-broker listener at its advertised address.
func (n *Node) raftEndpoint() (listener, advertise string, err error) {
	if n.isController {
		listener = n.cfg.ControllerListenerNames[0]
		i := slices.IndexFunc(n.cfg.QuorumVoters, func(v config.Voter) bool { return v.ID == n.cfg.NodeID })
		if i < 0 {
			return "", "", fmt.Errorf("controller.quorum.voters: node %d has the controller role but is not a voter", n.cfg.NodeID)
		}
		v := n.cfg.QuorumVoters[i]
		bound := n.net.listener(listener).ln.Addr().(*net.TCPAddr)
		if bound.Port != v.Port {
			return "", "", fmt.Errorf("controller.quorum.voters says node %d listens at %s, but listener %s is bound to port %d",
				n.cfg.NodeID, v.Address(), listener, bound.Port)
		}
		return listener, v.Address(), nil
	}
	listener = n.cfg.InterBrokerListenerName
	i := slices.IndexFunc(n.cfg.AdvertisedListeners, func(l config.Listener) bool { return l.Name == listener })
	if i < 0 {
		return "", "", fmt.Errorf("inter.broker.listener.name: no advertised listener %s", listener)
	}
	a := n.cfg.AdvertisedListeners[i]
	port := a.Port
	if port == 0 {
		port = n.net.listener(listener).ln.Addr().(*net.TCPAddr).Port
	}
	return listener, net.JoinHostPort(a.Host, strconv.Itoa(port)), nil
}

// raftDialSecurity returns how raft connects to each peer: with the
// controller listener's security to a voter (at its controller.quorum.voters
// address), with the inter-broker listener's to a broker-only node — TLS
// where that listener uses TLS, and on a SASL listener a login with the
// node's own mechanism and credentials right after the preamble.
//
// A node that cannot log in on its controller listener does not start when
// it has other voters to reach. Its inter-broker login is needed only if
// broker-only nodes follow the quorum; without it the node starts, warns,
// and each raft dial to a broker fails with the reason.
func (n *Node) raftDialSecurity() (func(address string) quorum.PeerSecurity, error) {
	ctl, err := n.raftPeerSecurity(n.cfg.ControllerListenerNames[0])
	if err != nil {
		if len(n.cfg.QuorumVoters) > 1 {
			return nil, fmt.Errorf("raft connections to the controllers: %w", err)
		}
		ctl = quorum.PeerSecurity{Authenticate: failedLogin(err)}
	}
	ib, err := n.raftPeerSecurity(n.cfg.InterBrokerListenerName)
	if err != nil {
		n.log.Warn("raft cannot reach broker-only nodes: no login on the inter-broker listener", "error", err)
		ib = quorum.PeerSecurity{Authenticate: failedLogin(err)}
	}
	voters := map[string]bool{}
	for _, v := range n.cfg.QuorumVoters {
		voters[v.Address()] = true
	}
	return func(address string) quorum.PeerSecurity {
		if voters[address] {
			return ctl
		}
		return ib
	}, nil
}

// raftPeerSecurity is how raft secures a connection to a peer's listener
// called name.
func (n *Node) raftPeerSecurity(name string) (quorum.PeerSecurity, error) {
	var ps quorum.PeerSecurity
	tc, err := auth.NodeTLSConfig(n.cfg, name)
	if err != nil {
		return ps, err
	}
	ps.TLS = tc
	m, err := auth.NodeSASLMechanism(n.cfg, name)
	if err != nil {
		return ps, err
	}
	if m != nil {
		clientID := fmt.Sprintf("raft-%d", n.cfg.NodeID)
		ps.Authenticate = func(ctx context.Context, c net.Conn, address string) error {
			return wire.Authenticate(ctx, c, clientID, m, address)
		}
	}
	return ps, nil
}

// failedLogin is the Authenticate of a peer this node cannot log in to.
func failedLogin(err error) func(context.Context, net.Conn, string) error {
	return func(context.Context, net.Conn, string) error { return err }
}

// singleVoterTimeout is the raft timing of a quorum with a single voter.
const singleVoterTimeout = 100 * time.Millisecond

// raftAddr is a raft address as a net.Addr.
type raftAddr string

func (a raftAddr) Network() string { return "tcp" }
func (a raftAddr) String() string  { return string(a) }

// openQuorum joins the metadata quorum over the raft listener.
func (n *Node) openQuorum() error {
	qc := quorum.Config{
		NodeID:        n.cfg.NodeID,
		Dir:           n.cfg.MetadataLogDir,
		AdvertiseAddr: n.stream.Addr().String(),
		Stream:        n.stream,
		Logger:        n.log.With("component", "quorum"),
	}
	for _, v := range n.cfg.QuorumVoters {
		qc.Voters = append(qc.Voters, quorum.Voter{ID: v.ID, Addr: v.Address()})
	}
	// A quorum of one voter has nobody to disagree with, so it need not
	// wait raft's usual heartbeat timeout before electing itself: that
	// wait would dominate a single node's start-up.
	if len(qc.Voters) == 1 {
		qc.HeartbeatTimeout = singleVoterTimeout
		qc.ElectionTimeout = singleVoterTimeout
		qc.LeaderLeaseTimeout = singleVoterTimeout
	}
	// Kafka's defaults pace a KRaft election (1 s election, 2 s fetch
	// timeout); raft's own defaults are quicker, so they are overridden
	// only when set explicitly.
	if n.cfg.Source("controller.quorum.election.timeout.ms") != config.SourceDefault {
		qc.ElectionTimeout = time.Duration(n.cfg.ControllerQuorumElectionTimeoutMs) * time.Millisecond
	}
	if n.cfg.Source("controller.quorum.fetch.timeout.ms") != config.SourceDefault {
		qc.HeartbeatTimeout = time.Duration(n.cfg.ControllerQuorumFetchTimeoutMs) * time.Millisecond
		qc.LeaderLeaseTimeout = qc.HeartbeatTimeout
	}
	q, err := quorum.Open(qc)
	if err != nil {
		return fmt.Errorf("open metadata quorum: %w", err)
	}
	n.quorum = q
	n.sec.follow(q)
	return nil
}

// startController starts the controller and serves its APIs on the
// controller listener.
func (n *Node) startController() error {
	// The controller reads mirror states from the brokers' mirror
	// coordinators on their inter-broker listener, secured as it requires.
	// A controller-only node configured without the node's login on that
	// listener still starts: only those reads (mirror failover) fail.
	brokerDial, err := n.dialOptions(n.cfg.InterBrokerListenerName)
	if err != nil {
		n.log.Warn("the controller cannot secure its connections to the brokers; mirror state reads will be refused",
			"listener", n.cfg.InterBrokerListenerName, "error", err)
		brokerDial = nil
	}
	c, err := controller.New(controller.Config{
		NodeID:            n.cfg.NodeID,
		Cfg:               n.cfg,
		Logger:            n.log,
		Now:               n.opts.now,
		ClusterID:         n.clusterID,
		BrokerDialOptions: brokerDial,
	}, n.quorum)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	n.controller = c
	if err := c.Start(); err != nil {
		return fmt.Errorf("start controller: %w", err)
	}
	for _, name := range n.cfg.ControllerListenerNames {
		if l := n.net.listener(name); l != nil {
			if err := l.ep.enable(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// boundListeners lists the listeners with their bound addresses.
func (n *Node) boundListeners() []string {
	var out []string
	for _, l := range n.net.listeners {
		out = append(out, l.name+"://"+l.ln.Addr().String())
	}
	return out
}
