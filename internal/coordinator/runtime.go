package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/wire"
)

// Config configures a Runtime.
type Config[S Shard] struct {
	// Topic is the internal topic, created with Partitions partitions,
	// ReplicationFactor replicas and TopicConfigs when first needed.
	Topic             string
	Partitions        int32
	ReplicationFactor int16
	TopicConfigs      map[string]string
	// NewShard builds the empty state of a partition about to be loaded.
	NewShard func(ShardContext[S]) S
	// AppendTimeout bounds how long a write waits for its batch to be
	// committed (Kafka's offsets.commit.timeout.ms and its kin).
	AppendTimeout time.Duration
	// LoadBufferBytes is how much is read at a time while loading
	// (offsets.load.buffer.size).
	LoadBufferBytes int
	// MaxDecompressedBytes bounds the decompressed size of one batch read
	// while loading.
	MaxDecompressedBytes int
	Clock                Clock
	Logger               *slog.Logger
}

// Runtime hosts the shards of one coordinator on the partitions of its
// topic that this node leads.
type Runtime[S Shard] struct {
	host  Host
	cfg   Config[S]
	clock Clock
	log   *slog.Logger

	mu        sync.Mutex
	shards    map[int32]*shardHost[S]
	started   bool
	closed    bool
	stopWatch func()
	wg        sync.WaitGroup

	topicReady atomic.Bool
}

// New returns a runtime for cfg on host. Start begins hosting shards.
func New[S Shard](host Host, cfg Config[S]) *Runtime[S] {
	if cfg.AppendTimeout <= 0 {
		cfg.AppendTimeout = 5 * time.Second
	}
	if cfg.LoadBufferBytes <= 0 {
		cfg.LoadBufferBytes = 5 << 20
	}
	if cfg.MaxDecompressedBytes <= 0 {
		cfg.MaxDecompressedBytes = 64 << 20
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Runtime[S]{
		host:   host,
		cfg:    cfg,
		clock:  cfg.Clock,
		log:    cfg.Logger.With("coordinator_topic", cfg.Topic),
		shards: map[int32]*shardHost[S]{},
	}
}

// Topic is the runtime's internal topic.
func (rt *Runtime[S]) Topic() string { return rt.cfg.Topic }

// Clock is the runtime's clock.
func (rt *Runtime[S]) Clock() Clock { return rt.clock }

// Start subscribes to the leadership of the topic's partitions: from now on
// the runtime loads a shard for every partition this node leads.
func (rt *Runtime[S]) Start() {
	rt.mu.Lock()
	if rt.started || rt.closed {
		rt.mu.Unlock()
		return
	}
	rt.started = true
	rt.mu.Unlock()
	stop := rt.host.WatchLeadership(rt.cfg.Topic, rt.onLeadership)
	rt.mu.Lock()
	rt.stopWatch = stop
	closed := rt.closed
	rt.mu.Unlock()
	if closed {
		stop()
	}
}

// Close stops watching leadership, unloads every shard (their pending
// operations fail with NOT_COORDINATOR) and waits for their goroutines.
func (rt *Runtime[S]) Close() {
	rt.mu.Lock()
	if rt.closed {
		rt.mu.Unlock()
		rt.wg.Wait()
		return
	}
	rt.closed = true
	stop := rt.stopWatch
	rt.mu.Unlock()
	if stop != nil {
		stop()
	}
	rt.mu.Lock()
	for p, h := range rt.shards {
		h.close()
		delete(rt.shards, p)
	}
	rt.mu.Unlock()
	rt.wg.Wait()
}

// onLeadership starts, replaces or drops the shard of a partition.
func (rt *Runtime[S]) onLeadership(partition int32, leader bool, epoch int32) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return
	}
	old := rt.shards[partition]
	if !leader {
		if old != nil {
			rt.log.Info("coordinator partition no longer led here: unloading", "partition", partition, "leader_epoch", old.epoch)
			old.close()
			delete(rt.shards, partition)
		}
		return
	}
	if old != nil {
		if epoch == old.epoch {
			return
		}
		if epoch < old.epoch {
			rt.log.Warn("ignoring leadership of an older epoch", "partition", partition, "leader_epoch", epoch, "current_epoch", old.epoch)
			return
		}
		old.close()
	}
	h := newShardHost(rt, partition, epoch, old)
	rt.shards[partition] = h
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		h.run()
	}()
}

// shard returns the host of partition, or nil.
func (rt *Runtime[S]) shard(partition int32) *shardHost[S] {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.shards[partition]
}

// Write runs op on the shard of partition and waits until its records are
// committed and its Apply has run, or it failed. If ctx ends first, Write
// returns ctx's error; an operation that had not started then never runs,
// one already started completes regardless.
func (rt *Runtime[S]) Write(ctx context.Context, partition int32, op Op[S]) error {
	return rt.submit(ctx, partition, &task[S]{kind: taskWrite, op: op})
}

// Read runs fn on the shard of partition, serialised with its writes. fn
// must not change the shard.
func (rt *Runtime[S]) Read(ctx context.Context, partition int32, fn func(S) error) error {
	return rt.submit(ctx, partition, &task[S]{kind: taskRead, read: fn})
}

func (rt *Runtime[S]) submit(ctx context.Context, partition int32, t *task[S]) error {
	h := rt.shard(partition)
	if h == nil {
		return ErrNotCoordinator
	}
	if err := h.admit(); err != nil {
		return err
	}
	t.ctx = ctx
	t.done = make(chan error, 1)
	if !h.enqueue(t) {
		return ErrNotCoordinator
	}
	defer wire.Waiting(ctx)() // the shard's work and its write's replication
	select {
	case err := <-t.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PartitionState is the state of a partition in the runtime.
type PartitionState int8

// Partition states.
const (
	PartitionLoading PartitionState = iota
	PartitionActive
	// PartitionFailed: the load failed, or an append found leadership gone;
	// the partition answers until the host reports a new leadership.
	PartitionFailed
)

// PartitionStatus is one partition hosted by the runtime.
type PartitionStatus struct {
	Partition   int32
	LeaderEpoch int32
	State       PartitionState
}

// Partitions lists the partitions the runtime hosts, in order.
func (rt *Runtime[S]) Partitions() []PartitionStatus {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]PartitionStatus, 0, len(rt.shards))
	for p, h := range rt.shards {
		st := PartitionActive
		switch h.state.Load() {
		case stateLoading:
			st = PartitionLoading
		case stateFailed, stateFenced:
			st = PartitionFailed
		}
		out = append(out, PartitionStatus{Partition: p, LeaderEpoch: h.epoch, State: st})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out
}

// ReadAll runs fn on every active shard, one after the other, and reports
// whether some hosted partition is still loading (ListGroups answers
// COORDINATOR_LOAD_IN_PROGRESS then, with what it has).
func (rt *Runtime[S]) ReadAll(ctx context.Context, fn func(partition int32, s S) error) (loading bool, err error) {
	for _, ps := range rt.Partitions() {
		switch ps.State {
		case PartitionLoading:
			loading = true
			continue
		case PartitionFailed:
			continue
		}
		err := rt.Read(ctx, ps.Partition, func(s S) error { return fn(ps.Partition, s) })
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return loading, err
		default:
			// The partition moved or started reloading meanwhile.
			if errors.Is(err, kerr.CoordinatorLoadInProgress) {
				loading = true
			}
		}
	}
	return loading, nil
}

// EnsureTopic creates the runtime's topic if needed; after one success it
// does nothing.
func (rt *Runtime[S]) EnsureTopic(ctx context.Context) error {
	if rt.topicReady.Load() {
		return nil
	}
	err := rt.host.EnsureTopic(ctx, TopicSpec{
		Name:              rt.cfg.Topic,
		Partitions:        rt.cfg.Partitions,
		ReplicationFactor: rt.cfg.ReplicationFactor,
		Configs:           rt.cfg.TopicConfigs,
	})
	if err != nil {
		return fmt.Errorf("create %s: %w", rt.cfg.Topic, err)
	}
	rt.topicReady.Store(true)
	return nil
}
