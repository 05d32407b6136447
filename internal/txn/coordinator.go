package txn

import (
	"context"
	"log/slog"
	"sync"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// ProducerIDs hands out fresh producer ids (the broker's allocator, which
// takes blocks of ids from the controller).
type ProducerIDs interface {
	NextProducerID(ctx context.Context) (int64, error)
}

// MetadataSource gives the current cluster metadata image (quorum.Quorum
// satisfies it): which partitions exist and who leads them.
type MetadataSource interface {
	Image() *metadata.Image
}

// GroupPartitioner maps a group id to its partition of __consumer_offsets
// (the group coordinator satisfies it), so that AddOffsetsToTxn adds the
// partition the group coordinator writes the group's offsets to.
type GroupPartitioner interface {
	PartitionFor(groupID string) int32
}

// Dialer opens a connection to another broker at addr (host:port).
type Dialer func(ctx context.Context, addr string) (*wire.Conn, error)

// Deps are what the transaction coordinator needs from the node.
type Deps struct {
	// Host gives the coordinator its partitions of __transaction_state
	// (the broker implements it).
	Host coordinator.Host
	// Metadata answers who leads each partition and where brokers listen
	// (required).
	Metadata MetadataSource
	// ProducerIDs allocates producer ids for new transactional ids and
	// exhausted epochs.
	ProducerIDs ProducerIDs
	// Markers is this node's WriteTxnMarkers service: markers for
	// partitions this node leads are written through it without a network
	// round trip. Without it they go over the network like the others.
	Markers *MarkerService
	// Groups maps group ids to __consumer_offsets partitions; nil computes
	// it like the group coordinator (Java String.hashCode over the topic's
	// partition count, offsets.topic.num.partitions until it exists).
	Groups GroupPartitioner
	// OffsetsTopicPartitions is offsets.topic.num.partitions, used when
	// Groups is nil and __consumer_offsets does not exist yet (0: 50).
	OffsetsTopicPartitions int32
	// Dial connects to other brokers; nil dials TCP with wire.Dial.
	Dial Dialer
}

// Coordinator is the transaction coordinator of one node: it serves the
// transaction APIs for the __transaction_state partitions the node leads
// and writes the markers of their transactions.
type Coordinator struct {
	cfg      Config
	deps     Deps
	rt       *coordinator.Runtime[*shard]
	log      *slog.Logger
	conns    *connPool
	delivery *markerDelivery
	verifier *Verifier

	// jobs counts marker jobs; Close waits for them after the runtime's
	// shards (which cancel them) are unloaded.
	jobs sync.WaitGroup
}

// New returns a transaction coordinator; Start makes it load the partitions
// the node leads. deps.Host and deps.Metadata are required: without them
// New panics (a wiring mistake, not something input can cause).
func New(cfg Config, deps Deps) *Coordinator {
	if deps.Host == nil || deps.Metadata == nil {
		panic("txn: New needs Deps.Host and Deps.Metadata")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = coordinator.SystemClock{}
	}
	def := DefaultConfig()
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = def.RequestTimeout
	}
	if cfg.MarkerRetryBackoff <= 0 {
		cfg.MarkerRetryBackoff = def.MarkerRetryBackoff
	}
	if cfg.TopicPartitions <= 0 {
		cfg.TopicPartitions = def.TopicPartitions
	}
	if deps.OffsetsTopicPartitions <= 0 {
		deps.OffsetsTopicPartitions = 50
	}
	c := &Coordinator{
		cfg:  cfg,
		deps: deps,
		log:  cfg.Logger.With("coordinator", "transaction"),
	}
	c.conns = newConnPool(deps.Dial, "kmirror-txn-coordinator-"+itoa(int64(cfg.NodeID)))
	c.delivery = &markerDelivery{
		nodeID:   cfg.NodeID,
		listener: cfg.InterBrokerListener,
		meta:     deps.Metadata,
		local:    deps.Markers,
		conns:    c.conns,
		timeout:  cfg.RequestTimeout,
		backoff:  cfg.MarkerRetryBackoff,
		clock:    cfg.Clock,
		log:      c.log,
	}
	c.verifier = newVerifier(c)
	if deps.Markers != nil {
		deps.Markers.OnMarkerWritten(c.verifier.Forget)
	}
	c.rt = coordinator.New[*shard](deps.Host, coordinator.Config[*shard]{
		Topic:             TransactionStateTopic,
		Partitions:        cfg.TopicPartitions,
		ReplicationFactor: cfg.TopicReplicationFactor,
		TopicConfigs:      cfg.topicConfigs(),
		NewShard:          c.newShard,
		AppendTimeout:     cfg.RequestTimeout,
		LoadBufferBytes:   cfg.LoadBufferSize,
		Clock:             cfg.Clock,
		Logger:            c.log,
	})
	return c
}

// Start begins loading the __transaction_state partitions this node leads.
func (c *Coordinator) Start() { c.rt.Start() }

// Close unloads every partition (stopping their marker jobs and timers),
// waits for the jobs and closes the connections to other brokers.
func (c *Coordinator) Close() {
	c.rt.Close()
	c.jobs.Wait()
	c.conns.close()
}

// Verifier is the coordinator's verifier of transactional produce requests
// (KIP-890), for the broker.
func (c *Coordinator) Verifier() *Verifier { return c.verifier }

// Partitions is the number of __transaction_state partitions: the topic's
// if it exists, else transaction.state.log.num.partitions.
func (c *Coordinator) Partitions() int32 {
	if c.deps.Metadata != nil {
		if t, ok := c.deps.Metadata.Image().Topic(TransactionStateTopic); ok && len(t.Partitions) > 0 {
			return int32(len(t.Partitions))
		}
	}
	return c.cfg.TopicPartitions
}

// CoordinatorFor returns the __transaction_state partition that owns a
// transactional id; its leader is the id's coordinator. The group
// coordinator's FindCoordinator answers key type TRANSACTION (1) with the
// leader of this partition (through Resolve).
func (c *Coordinator) CoordinatorFor(transactionalID string) int32 {
	return coordinator.PartitionFor(transactionalID, c.Partitions())
}

// Resolve maps a transactional id to its partition of __transaction_state,
// creating the topic on first use; it is what the group coordinator's
// FindCoordinator needs for key type TRANSACTION
// (group.Coordinator.SetTransactionResolver).
func (c *Coordinator) Resolve(ctx context.Context, transactionalID string) (string, int32, error) {
	if err := c.rt.EnsureTopic(ctx); err != nil {
		return "", 0, err
	}
	return TransactionStateTopic, c.CoordinatorFor(transactionalID), nil
}

// offsetsPartition returns the __consumer_offsets partition of a group.
func (c *Coordinator) offsetsPartition(group string) int32 {
	if c.deps.Groups != nil {
		return c.deps.Groups.PartitionFor(group)
	}
	n := c.deps.OffsetsTopicPartitions
	if c.deps.Metadata != nil {
		if t, ok := c.deps.Metadata.Image().Topic(OffsetsTopic); ok && len(t.Partitions) > 0 {
			n = int32(len(t.Partitions))
		}
	}
	return coordinator.PartitionFor(group, n)
}

// nowMs is the coordinator's clock in milliseconds.
func (c *Coordinator) nowMs() int64 { return c.cfg.Clock.Now().UnixMilli() }
