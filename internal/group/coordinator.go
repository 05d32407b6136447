package group

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/metadata"
)

// MetadataSource gives the current cluster metadata image (quorum.Quorum
// satisfies it).
type MetadataSource interface {
	Image() *metadata.Image
}

// Deps are what the group coordinator needs from the node.
type Deps struct {
	// Host gives the coordinator its partitions of __consumer_offsets (the
	// broker implements it).
	Host coordinator.Host
	// Metadata answers which topics exist and who leads the coordinator
	// partitions.
	Metadata MetadataSource
}

// CoordinatorResolver maps a FindCoordinator key of another coordinator
// type (transactions) to the partition of its internal topic that owns it,
// creating the topic if needed.
type CoordinatorResolver interface {
	Resolve(ctx context.Context, key string) (topic string, partition int32, err error)
}

// Coordinator is the group coordinator of one node: it serves the group
// APIs for the __consumer_offsets partitions the node leads.
type Coordinator struct {
	cfg     Config
	machine MachineConfig
	meta    MetadataSource
	rt      *coordinator.Runtime[*shard]
	waiters *waiters
	log     *slog.Logger

	mu  sync.RWMutex
	txn CoordinatorResolver
}

// New returns a group coordinator; Start makes it load the partitions the
// node leads.
func New(cfg Config, deps Deps) *Coordinator {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = coordinator.SystemClock{}
	}
	c := &Coordinator{
		cfg:     cfg,
		machine: cfg.machine(),
		meta:    deps.Metadata,
		waiters: newWaiters(),
		log:     cfg.Logger.With("coordinator", "group"),
	}
	c.rt = coordinator.New[*shard](deps.Host, coordinator.Config[*shard]{
		Topic:             OffsetsTopic,
		Partitions:        cfg.OffsetsTopicPartitions,
		ReplicationFactor: cfg.OffsetsTopicReplicationFactor,
		TopicConfigs:      cfg.topicConfigs(),
		NewShard:          c.newShard,
		AppendTimeout:     cfg.OffsetsCommitTimeout,
		LoadBufferBytes:   cfg.OffsetsLoadBufferSize,
		Clock:             cfg.Clock,
		Logger:            c.log,
	})
	return c
}

// Start begins loading the __consumer_offsets partitions this node leads.
func (c *Coordinator) Start() { c.rt.Start() }

// Close unloads every partition; requests waiting on groups are answered
// NOT_COORDINATOR.
func (c *Coordinator) Close() { c.rt.Close() }

// SetTransactionResolver installs how FindCoordinator answers keys of type
// TRANSACTION (the transaction coordinator provides it); until then they are
// answered COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) SetTransactionResolver(r CoordinatorResolver) {
	c.mu.Lock()
	c.txn = r
	c.mu.Unlock()
}

func (c *Coordinator) txnResolver() CoordinatorResolver {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.txn
}

// Partitions is the number of __consumer_offsets partitions: the topic's
// if it exists, else offsets.topic.num.partitions.
func (c *Coordinator) Partitions() int32 {
	if c.meta != nil {
		if t, ok := c.meta.Image().Topic(OffsetsTopic); ok && len(t.Partitions) > 0 {
			return int32(len(t.Partitions))
		}
	}
	return c.cfg.OffsetsTopicPartitions
}

// PartitionFor returns the __consumer_offsets partition of a group.
func (c *Coordinator) PartitionFor(groupID string) int32 {
	return coordinator.PartitionFor(groupID, c.Partitions())
}

// Resolve implements CoordinatorResolver for group ids: it creates
// __consumer_offsets on first use.
func (c *Coordinator) Resolve(ctx context.Context, groupID string) (string, int32, error) {
	if err := c.rt.EnsureTopic(ctx); err != nil {
		return "", 0, err
	}
	return OffsetsTopic, c.PartitionFor(groupID), nil
}

// newMemberID returns a member id as Kafka makes them: the client id (or the
// instance id of a static member), a dash and a random UUID.
func newMemberID(clientID, instanceID string) string {
	prefix := clientID
	if instanceID != "" {
		prefix = instanceID
	}
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// clientHost renders a client address as Kafka does ("/" and the IP).
func clientHost(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "/" + addr.String()
	}
	return "/" + host
}
