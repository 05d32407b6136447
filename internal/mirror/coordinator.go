package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
)

// MetadataSource gives the current metadata image (*quorum.Quorum has it).
type MetadataSource interface {
	Image() *metadata.Image
}

// CoordinatorConfig configures a mirror coordinator.
type CoordinatorConfig struct {
	// NodeID is this node's id.
	NodeID int32
	// InterBrokerListener is the listener other brokers are reached on (to
	// forward ReadLastMirroredEpochs to the coordinator of a key).
	InterBrokerListener string
	// TopicPartitions is mirror.state.topic.num.partitions: the partition
	// count used for keys while __mirror_state does not exist.
	TopicPartitions int32
	// TopicReplicationFactor is mirror.state.topic.replication.factor.
	TopicReplicationFactor int16
	// AppendTimeout bounds the wait for a state write to be committed.
	AppendTimeout time.Duration
	// RequestTimeout bounds a request forwarded to another broker.
	RequestTimeout time.Duration
	// Clock and Logger default to the wall clock and slog.Default().
	Clock  coordinator.Clock
	Logger *slog.Logger
}

func (c *CoordinatorConfig) defaults() {
	if c.TopicPartitions <= 0 {
		c.TopicPartitions = 50
	}
	if c.TopicReplicationFactor <= 0 {
		c.TopicReplicationFactor = 1
	}
	if c.AppendTimeout <= 0 {
		c.AppendTimeout = 5 * time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.InterBrokerListener == "" {
		c.InterBrokerListener = "PLAINTEXT"
	}
	if c.Clock == nil {
		c.Clock = coordinator.SystemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Coordinator is the mirror coordinator of one node: it hosts the
// __mirror_state partitions the node leads and answers for their keys.
// It is a metadata.Publisher: when a mirror is deleted it tombstones the
// mirror's records in the partitions it leads.
type Coordinator struct {
	cfg   CoordinatorConfig
	meta  MetadataSource
	rt    *coordinator.Runtime[*stateShard]
	log   *slog.Logger
	conns *connPool

	// cleanups are the tombstone writes started by metadata updates; Close
	// cancels and waits for them.
	cleanMu     sync.Mutex // orders cleanups.Add before Close's Wait
	closed      bool
	cleanCtx    context.Context
	cleanCancel context.CancelFunc
	cleanups    sync.WaitGroup
}

// NewCoordinator returns a mirror coordinator over host; Start makes it
// load the partitions the node leads. dial may be nil (TCP).
func NewCoordinator(cfg CoordinatorConfig, host coordinator.Host, meta MetadataSource, dial Dialer) *Coordinator {
	cfg.defaults()
	c := &Coordinator{
		cfg:  cfg,
		meta: meta,
		log:  cfg.Logger.With("coordinator", "mirror"),
	}
	c.conns = newConnPool(dial, fmt.Sprintf("kmirror-mirror-coordinator-%d", cfg.NodeID))
	c.cleanCtx, c.cleanCancel = context.WithCancel(context.Background())
	c.rt = coordinator.New[*stateShard](host, coordinator.Config[*stateShard]{
		Topic:             mirrorstate.Topic,
		Partitions:        cfg.TopicPartitions,
		ReplicationFactor: cfg.TopicReplicationFactor,
		TopicConfigs:      map[string]string{"cleanup.policy": "compact"},
		NewShard:          c.newShard,
		AppendTimeout:     cfg.AppendTimeout,
		Clock:             cfg.Clock,
		Logger:            c.log,
	})
	return c
}

// Start begins loading the __mirror_state partitions this node leads.
func (c *Coordinator) Start() { c.rt.Start() }

// Close unloads every partition, stops the cleanups and closes the
// connections to other brokers.
func (c *Coordinator) Close() {
	c.cleanMu.Lock()
	c.closed = true
	c.cleanMu.Unlock()
	c.cleanCancel()
	c.cleanups.Wait()
	c.rt.Close()
	c.conns.close()
}

// Name implements metadata.Publisher.
func (c *Coordinator) Name() string { return "mirror-coordinator" }

// OnMetadataUpdate implements metadata.Publisher: it tombstones the records
// of mirrors the delta deleted, in every partition this node leads.
func (c *Coordinator) OnMetadataUpdate(delta *metadata.Delta, img *metadata.Image) {
	var deleted []string
	for _, name := range delta.ChangedMirrors() {
		if !slices.Contains(img.Mirrors(), name) {
			deleted = append(deleted, name)
		}
	}
	if len(deleted) == 0 {
		return
	}
	c.cleanMu.Lock()
	defer c.cleanMu.Unlock()
	if c.closed {
		return
	}
	c.cleanups.Add(1)
	go func() {
		defer c.cleanups.Done()
		for _, ps := range c.rt.Partitions() {
			if ps.State != coordinator.PartitionActive {
				continue // a partition that loads later cleans itself up (stateShard.Loaded)
			}
			ctx, cancel := context.WithTimeout(c.cleanCtx, c.cfg.AppendTimeout)
			err := c.rt.Write(ctx, ps.Partition, tombstoneMirrorsOp(deleted))
			cancel()
			if err != nil && c.cleanCtx.Err() == nil {
				c.log.Warn("could not remove the records of deleted mirrors", "partition", ps.Partition, "mirrors", deleted, "err", err)
			}
		}
	}()
}

// Partitions is the number of __mirror_state partitions: the topic's if it
// exists, else mirror.state.topic.num.partitions.
func (c *Coordinator) Partitions() int32 {
	return statePartitions(c.meta.Image(), c.cfg.TopicPartitions)
}

// statePartitions is the partition count of __mirror_state in img, or def
// while the topic does not exist.
func statePartitions(img *metadata.Image, def int32) int32 {
	if t, ok := img.Topic(mirrorstate.Topic); ok && len(t.Partitions) > 0 {
		return int32(len(t.Partitions))
	}
	return def
}

// mirrorExists reports whether the current image has the mirror.
func (c *Coordinator) mirrorExists(name string) bool {
	return slices.Contains(c.meta.Image().Mirrors(), name)
}

func (c *Coordinator) nowMs() int64 { return c.cfg.Clock.Now().UnixMilli() }
