package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// Config is the broker's own configuration.
type Config struct {
	// NodeID is this node's id (node.id).
	NodeID int32
	// Cfg is the node's static configuration; dynamic broker configs from
	// the metadata log are applied on top of it.
	Cfg *config.Config
	// Logger receives the broker's events; nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// MetadataSource is where the broker reads the cluster metadata and learns
// of its changes; *quorum.Quorum implements it.
type MetadataSource interface {
	Image() *metadata.Image
	AddPublisher(metadata.Publisher)
}

// ControllerClient sends requests to the active controller;
// *controller.Channel implements it.
type ControllerClient interface {
	Send(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
}

// internalTopicCreator is the optional part of a ControllerClient that can
// create internal topics (clients cannot); *controller.Channel has it.
type internalTopicCreator interface {
	CreateInternalTopic(ctx context.Context, name string, partitions int32, configs map[string]string) (metadata.Uuid, error)
}

// quorumLeader is the optional part of a MetadataSource that knows the
// active controller; *quorum.Quorum has it.
type quorumLeader interface {
	Leader() (id int32, addr string, ok bool)
}

// Deps are the parts of the node the broker builds on.
type Deps struct {
	// Logs holds the partition logs; *storage.Manager implements it.
	Logs LogManager
	// Metadata is the metadata image and its change feed.
	Metadata MetadataSource
	// Controller reaches the active controller.
	Controller ControllerClient
	// ClusterID is the cluster's id, as in meta.properties.
	ClusterID string
	// ReplicaEndpoint, when set, replaces the network connections of the
	// replica fetchers to their leaders (tests).
	ReplicaEndpoint EndpointFunc
	// ReplicaDialOptions secure the replica fetchers' connections to their
	// leaders' inter-broker listener (TLS, the node's SASL login).
	ReplicaDialOptions []wire.DialOption
	// Incarnation is the id this process registers the broker with. Once
	// the metadata shows that registration, the replica manager deletes
	// the stray logs (zero: it never does).
	Incarnation metadata.Uuid
}

// Broker serves the data-plane Kafka APIs of one node over its
// ReplicaManager.
type Broker struct {
	cfg    Config
	deps   Deps
	log    *slog.Logger
	now    func() time.Time
	rm     *ReplicaManager
	fetchs *fetchSessionCache
	pids   *producerIDManager
	// quotas measures clients against their byte-rate quotas
	// (client_quota_enforce.go).
	quotas *clientQuotas

	txn txnHook

	closing  chan struct{}
	bgCtx    context.Context
	bgCancel context.CancelFunc
	bgMu     sync.Mutex // orders goBackground's Add before Close's Wait
	closed   bool       // guarded by bgMu
	bg       sync.WaitGroup

	autoMu       sync.Mutex
	autoInflight map[string]bool
}

// New builds a broker. It does not touch the metadata or the logs until
// Start.
func New(cfg Config, deps Deps) (*Broker, error) {
	if cfg.Cfg == nil {
		return nil, errors.New("broker: Config.Cfg is required")
	}
	if deps.Logs == nil || deps.Metadata == nil || deps.Controller == nil {
		return nil, errors.New("broker: Deps.Logs, Deps.Metadata and Deps.Controller are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	logger := cfg.Logger.With("component", "broker", "node", cfg.NodeID)
	b := &Broker{
		cfg: cfg, deps: deps, log: logger, now: cfg.Now,
		closing:      make(chan struct{}),
		autoInflight: make(map[string]bool),
	}
	b.bgCtx, b.bgCancel = context.WithCancel(context.Background())
	b.rm = newReplicaManager(cfg.NodeID, deps.Logs, cfg.Cfg, logger, cfg.Now, b.closing)
	b.rm.incarnation = deps.Incarnation
	fetchers, err := newReplicaFetchers(b.rm, deps.ReplicaEndpoint, deps.ReplicaDialOptions)
	if err != nil {
		return nil, fmt.Errorf("broker: replica fetchers: %w", err)
	}
	b.rm.fetchers = fetchers
	b.rm.alter = newAlterPartitionSender(cfg.NodeID, deps.Controller, b.rm.brokerEpoch, logger.With("component", "alter-partition"))
	b.fetchs = newFetchSessionCache(int(cfg.Cfg.MaxIncrementalFetchSessionCacheSlots), fetchSessionEvictionMs, cfg.Now)
	b.pids = newProducerIDManager(b)
	b.quotas = newClientQuotas(cfg.Cfg.QuotaWindowNum, cfg.Cfg.QuotaWindowSizeSeconds)
	return b, nil
}

// Start subscribes the replica manager to the metadata and returns once the
// first image has been applied: every local partition in it has its log
// open and knows its leadership.
func (b *Broker) Start(ctx context.Context) error {
	b.goBackground(b.rm.alter.run)
	b.goBackground(b.rm.runISRChecks)
	b.deps.Metadata.AddPublisher(b.rm)
	select {
	case <-b.rm.first:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("broker start: waiting for the first metadata image: %w", ctx.Err())
	case <-b.closing:
		return errors.New("broker start: closed")
	}
}

// Replicas returns the replica manager (coordinators and the mirror use it).
func (b *Broker) Replicas() *ReplicaManager { return b.rm }

// Close stops delayed operations (waiting fetches and produces return) and
// background work. Logs stay open: the server closes them through the
// storage manager's Shutdown.
func (b *Broker) Close() error {
	b.bgMu.Lock()
	if !b.closed {
		b.closed = true
		close(b.closing)
		b.bgCancel()
	}
	b.bgMu.Unlock()
	// The fetchers stop before the logs close (the server shuts the log
	// manager down after the broker).
	b.rm.fetchers.Close()
	b.bg.Wait()
	return nil
}

// goBackground runs f on a goroutine the broker owns: Close cancels its
// context and waits for it.
func (b *Broker) goBackground(f func(ctx context.Context)) bool {
	b.bgMu.Lock()
	defer b.bgMu.Unlock()
	if b.closed {
		return false
	}
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		f(b.bgCtx)
	}()
	return true
}

// image returns the metadata image the local partitions agree with, or the
// source's image before the first update was applied.
func (b *Broker) image() *metadata.Image {
	select {
	case <-b.rm.first:
		return b.rm.Image()
	default:
		return b.deps.Metadata.Image()
	}
}

// APIs returns every API a client listener serves from the broker, except
// ApiVersions, which the server answers.
func (b *Broker) APIs() []wire.API {
	apis := []wire.API{
		{Key: 0, MinVersion: 3, MaxVersion: 11, Handle: b.handleProduce},
		{Key: 1, MinVersion: 4, MaxVersion: 17, Handle: b.handleFetch},
		{Key: 2, MinVersion: 1, MaxVersion: 8, Handle: b.handleListOffsets},
		{Key: 3, MinVersion: 0, MaxVersion: 12, Handle: b.handleMetadata},
		{Key: 19, MinVersion: 0, MaxVersion: 7, Handle: b.handleCreateTopics},
		{Key: 20, MinVersion: 0, MaxVersion: 6, Handle: b.handleDeleteTopics},
		{Key: 21, MinVersion: 0, MaxVersion: 2, Handle: b.handleDeleteRecords},
		{Key: 22, MinVersion: 0, MaxVersion: 5, Handle: b.handleInitProducerID},
		{Key: 23, MinVersion: 0, MaxVersion: 4, Handle: b.handleOffsetForLeaderEpoch},
		{Key: 32, MinVersion: 0, MaxVersion: 4, Handle: b.handleDescribeConfigs},
		{Key: 33, MinVersion: 0, MaxVersion: 2, Handle: b.handleAlterConfigs},
		{Key: 35, MinVersion: 0, MaxVersion: 4, Handle: b.handleDescribeLogDirs},
		{Key: 37, MinVersion: 0, MaxVersion: 3, Handle: b.handleCreatePartitions},
		{Key: 43, MinVersion: 0, MaxVersion: 2, Handle: b.handleElectLeaders},
		{Key: 44, MinVersion: 0, MaxVersion: 1, Handle: b.handleIncrementalAlterConfigs},
		{Key: 45, MinVersion: 0, MaxVersion: 1, Handle: b.handleAlterPartitionReassignments},
		{Key: 46, MinVersion: 0, MaxVersion: 0, Handle: b.handleListPartitionReassignments},
		{Key: 55, MinVersion: 0, MaxVersion: 2, Handle: b.handleDescribeQuorum},
		{Key: 60, MinVersion: 0, MaxVersion: 1, Handle: b.handleDescribeCluster},
		{Key: 61, MinVersion: 0, MaxVersion: 0, Handle: b.handleDescribeProducers},
	}
	return append(apis, b.mirrorAdminAPIs()...)
}

// requestTypeError is returned by a handler given a request of another API
// (a wiring bug, not client input).
func requestTypeError(want string, got kmsg.Request) error {
	return fmt.Errorf("broker: %s handler got %T", want, got)
}
