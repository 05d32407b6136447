package quorum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/kmirror/kmirror/internal/metadata"
)

// Quorum is this node's member of the metadata quorum: the replicated
// metadata log (hashicorp/raft), the image it builds and the publishers that
// follow it. Voters (controllers) elect a leader that accepts writes;
// non-voters (broker-only nodes) replicate the log and apply it too.
type Quorum struct {
	cfg    Config
	log    *slog.Logger
	raft   *raft.Raft
	store  *raftboltdb.BoltStore
	stream *StreamLayer
	own    *ownListener // nil when the server hands off connections

	sm   *stateMachine
	disp *dispatcher

	leaderMu   sync.Mutex
	leaderSubs []chan struct{}
	observer   *raft.Observer
	obsCh      chan raft.Observation
	obsDone    chan struct{}

	closeOnce sync.Once
	closing   chan struct{}
	// calls tracks goroutines waiting on raft futures for callers.
	calls sync.WaitGroup
}

// snapshotsRetained is how many snapshots the file store keeps.
const snapshotsRetained = 2

// membershipTimeout bounds how long a membership change may wait to be
// accepted by raft's leader loop.
const membershipTimeout = 30 * time.Second

// Open starts this node's member of the quorum. A voter with no state on disk
// bootstraps the quorum with the configured voters; a non-voter with no
// state waits for the leader to add it (AddNonVoter). The image is restored
// from the latest snapshot at once; the log after it is applied once the
// node hears the commit index from a leader, so wait with WaitForOffset
// before serving reads that must be current.
func Open(cfg Config) (q *Quorum, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("node", cfg.NodeID)
	dir := filepath.Join(cfg.Dir, metadataDirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open metadata quorum: %w", err)
	}
	q = &Quorum{cfg: cfg, log: log, closing: make(chan struct{})}
	var cleanups []func()
	defer func() {
		if err != nil {
			for i := len(cleanups) - 1; i >= 0; i-- {
				cleanups[i]()
			}
		}
	}()

	hl := newHCLogAdapter(log, cfg.RaftLogLevel)
	q.stream = cfg.Stream
	if q.stream == nil {
		ln, err := net.Listen("tcp", cfg.ListenAddr)
		if err != nil {
			return nil, fmt.Errorf("open metadata quorum: listen: %w", err)
		}
		if cfg.AdvertiseAddr == "" {
			cfg.AdvertiseAddr = ln.Addr().String()
			q.cfg.AdvertiseAddr = cfg.AdvertiseAddr
		}
		q.stream = NewStreamLayer(tcpAddr(cfg.AdvertiseAddr))
		q.own = startOwnListener(ln, q.stream, log)
		cleanups = append(cleanups, q.own.close)
	}
	cleanups = append(cleanups, func() { q.stream.Close() })

	q.store, err = raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		return nil, fmt.Errorf("open metadata log store in %s: %w", dir, err)
	}
	cleanups = append(cleanups, func() { q.store.Close() })
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, snapshotsRetained, hl)
	if err != nil {
		return nil, fmt.Errorf("open metadata snapshot store in %s: %w", dir, err)
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  q.stream,
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  hl,
	})
	cleanups = append(cleanups, func() { trans.Close() })

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(serverID(cfg.NodeID))
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.TrailingLogs = cfg.TrailingLogs
	rc.Logger = hl
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("open metadata quorum: %w", err)
	}

	hasState, err := raft.HasExistingState(q.store, q.store, snaps)
	if err != nil {
		return nil, fmt.Errorf("open metadata quorum: %w", err)
	}
	if !hasState && cfg.isVoter(cfg.NodeID) {
		var servers []raft.Server
		for _, v := range cfg.Voters {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(serverID(v.ID)), Address: raft.ServerAddress(v.Addr)})
		}
		if err := raft.BootstrapCluster(rc, q.store, q.store, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			return nil, fmt.Errorf("bootstrap metadata quorum: %w", err)
		}
		log.Info("metadata quorum bootstrapped", "voters", len(servers), "dir", dir)
	}

	q.disp = newDispatcher(log)
	q.sm = newStateMachine(log, q.disp)
	q.disp.start()
	cleanups = append(cleanups, q.disp.close)

	q.raft, err = raft.NewRaft(rc, q.sm, q.store, q.store, snaps, trans)
	if err != nil {
		return nil, fmt.Errorf("start metadata quorum: %w", err)
	}

	q.obsCh = make(chan raft.Observation, 16)
	q.obsDone = make(chan struct{})
	q.observer = raft.NewObserver(q.obsCh, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.RaftState:
			return true
		}
		return false
	})
	q.raft.RegisterObserver(q.observer)
	go q.watchLeadership()

	log.Info("metadata quorum started", "addr", cfg.AdvertiseAddr, "voter", cfg.isVoter(cfg.NodeID),
		"existing_state", hasState, "offset", q.sm.image.Load().Offset())
	return q, nil
}

// watchLeadership fans raft's leadership observations out to LeaderChanges
// subscribers.
func (q *Quorum) watchLeadership() {
	defer close(q.obsDone)
	for {
		select {
		case <-q.closing:
			return
		case o := <-q.obsCh:
			if lo, ok := o.Data.(raft.LeaderObservation); ok {
				q.log.Info("metadata quorum leader changed", "leader_id", string(lo.LeaderID), "leader_addr", string(lo.LeaderAddr))
			}
			q.leaderMu.Lock()
			for _, ch := range q.leaderSubs {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
			q.leaderMu.Unlock()
		}
	}
}

// Close leaves the quorum cleanly: raft stops (in-flight writes fail), the
// publisher goroutine stops after its current publication, stores close and
// LeaderChanges channels are closed. The node's state stays on disk.
func (q *Quorum) Close() error {
	var err error
	q.closeOnce.Do(func() {
		close(q.closing)
		q.raft.DeregisterObserver(q.observer)
		err = q.raft.Shutdown().Error() // also closes the transport and stream layer
		<-q.obsDone
		drained := make(chan struct{})
		go func() { q.calls.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(callsDrainTimeout):
			q.log.Warn("metadata quorum closed with raft futures unresolved")
		}
		q.disp.close()
		if q.own != nil {
			q.own.close()
		}
		q.stream.Close()
		if cerr := q.store.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close metadata log store: %w", cerr)
		}
		q.leaderMu.Lock()
		for _, ch := range q.leaderSubs {
			close(ch)
		}
		q.leaderSubs = nil
		q.leaderMu.Unlock()
		q.log.Info("metadata quorum closed")
	})
	return err
}

// Addr returns the raft address this node advertises.
func (q *Quorum) Addr() string { return q.cfg.AdvertiseAddr }

// IsLeader reports whether this node is the quorum leader now. A new leader
// may not have applied every earlier entry yet: call Barrier before acting
// on the image as the active controller.
func (q *Quorum) IsLeader() bool { return q.raft.State() == raft.Leader }

// Term returns the raft term this node is in. A node leads at most once per
// term (winning an election starts a new term), so a node that leads, and
// is in the same term, before and after some work led throughout it.
func (q *Quorum) Term() uint64 { return q.raft.CurrentTerm() }

// Leader returns the current leader's node id and raft address, if known.
func (q *Quorum) Leader() (id int32, addr string, ok bool) {
	a, sid := q.raft.LeaderWithID()
	if sid == "" {
		// raft marks itself leader a moment before it records itself as
		// the leader; answer consistently with IsLeader.
		if q.IsLeader() {
			return q.cfg.NodeID, q.cfg.AdvertiseAddr, true
		}
		return -1, "", false
	}
	id, ok = parseServerID(string(sid))
	if !ok {
		return -1, "", false
	}
	return id, string(a), true
}

// LeaderChanges returns a channel that receives a signal after every
// leadership change seen by this node (it gained or lost leadership, or
// learned of another leader). Signals coalesce: read IsLeader and Leader
// after each. The channel is closed by Close. Each call makes a new
// subscription.
func (q *Quorum) LeaderChanges() <-chan struct{} {
	ch := make(chan struct{}, 1)
	q.leaderMu.Lock()
	defer q.leaderMu.Unlock()
	select {
	case <-q.closing:
		close(ch)
	default:
		q.leaderSubs = append(q.leaderSubs, ch)
	}
	return ch
}

// notLeader builds the error for a write on a follower.
func (q *Quorum) notLeader(cause error) error {
	id, addr, ok := q.Leader()
	if !ok {
		id = -1
	}
	return &NotLeaderError{LeaderID: id, LeaderAddr: addr, Err: cause}
}

// raftErr maps raft's errors to the quorum's.
func (q *Quorum) raftErr(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%s: %w", op, q.notLeader(nil))
	case errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("%s: %w", op, q.notLeader(ErrOutcomeUnknown))
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%s: %w", op, ErrClosed)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%s: %w", op, context.DeadlineExceeded)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// wait waits for a raft future on behalf of ctx. If ctx ends or the quorum
// closes first, the outcome is unknown and the future is left to raft.
//
// raft futures have no channel, so a helper goroutine blocks in Error. raft
// resolves every future before or during shutdown except, rarely, an entry
// that had committed and was queued for the FSM when raft stopped; Close
// therefore waits for helpers only for a bounded time.
func (q *Quorum) wait(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	q.calls.Add(1)
	go func() {
		defer q.calls.Done()
		done <- f.Error()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, ctx.Err())
	case <-q.closing:
		return ErrClosed
	}
}

// callsDrainTimeout bounds how long Close waits for wait's helpers.
const callsDrainTimeout = 2 * time.Second

// timeoutOf turns a context deadline into raft's enqueue timeout (0: none).
func timeoutOf(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return max(time.Until(dl), time.Millisecond)
	}
	return 0
}

// Propose appends rs to the metadata log as one entry and returns its offset
// once it has committed and been applied on this node (so Image reflects
// it). The records apply atomically: if any is invalid for the current image
// the whole entry is rejected on every node and Propose returns that
// *metadata.ReplayError. On a node that is not the leader it returns a
// *NotLeaderError naming the leader.
func (q *Quorum) Propose(ctx context.Context, rs []metadata.Record) (uint64, error) {
	if len(rs) == 0 {
		return 0, errors.New("propose: no records")
	}
	select {
	case <-q.closing:
		return 0, fmt.Errorf("propose: %w", ErrClosed)
	default:
	}
	if !q.IsLeader() {
		return 0, fmt.Errorf("propose: %w", q.notLeader(nil))
	}
	f := q.raft.Apply(metadata.EncodeBatch(nil, rs), timeoutOf(ctx))
	if err := q.wait(ctx, f); err != nil {
		return 0, q.raftErr("propose", err)
	}
	if res, ok := f.Response().(applyResult); ok && res.err != nil {
		return 0, fmt.Errorf("propose: %w", res.err)
	}
	return f.Index(), nil
}

// Barrier returns once every entry committed before it has been applied on
// this node, which must be the leader. A new active controller calls it
// before trusting the image.
func (q *Quorum) Barrier(ctx context.Context) error {
	select {
	case <-q.closing:
		return fmt.Errorf("barrier: %w", ErrClosed)
	default:
	}
	return q.raftErr("barrier", q.wait(ctx, q.raft.Barrier(timeoutOf(ctx))))
}

// LogEnd returns the index after the last entry of this node's raft log
// (its log end offset in Kafka's terms).
func (q *Quorum) LogEnd() uint64 { return q.raft.LastIndex() + 1 }

// CommitIndex returns the index of the last entry this node knows to be
// committed.
func (q *Quorum) CommitIndex() uint64 { return q.raft.CommitIndex() }

// Image returns the latest applied image without locking.
func (q *Quorum) Image() *metadata.Image { return q.sm.image.Load() }

// AppliedOffset returns the offset (raft index) of the last entry applied on
// this node.
func (q *Quorum) AppliedOffset() uint64 { return q.sm.applied.Load() }

// WaitForOffset waits until this node has applied the entry at offset (for
// example one that Propose returned on the leader).
func (q *Quorum) WaitForOffset(ctx context.Context, offset uint64) error {
	for {
		ch := q.sm.appliedChan()
		if q.sm.applied.Load() >= offset {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for metadata offset %d (applied %d): %w", offset, q.sm.applied.Load(), ctx.Err())
		case <-q.closing:
			return fmt.Errorf("wait for metadata offset %d: %w", offset, ErrClosed)
		}
	}
}

// AddPublisher registers p. Its first update is the whole current image (a
// delta from the empty image); then it receives every change, in order, on
// the quorum's publisher goroutine.
func (q *Quorum) AddPublisher(p metadata.Publisher) { q.disp.add(p) }

// Snapshot writes a snapshot of the current image now and compacts the log
// (keeping TrailingLogs entries). Having nothing new to snapshot is not an
// error.
func (q *Quorum) Snapshot() error {
	err := q.raft.Snapshot().Error()
	if errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return nil
	}
	return q.raftErr("snapshot", err)
}
