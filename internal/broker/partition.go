package broker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/readonly"
	"github.com/kmirror/kmirror/internal/storage"
)

// Partition is one partition replica hosted by this node: its log, its
// leadership as the metadata says, the positions of its followers and its
// high watermark. Every append to and leader read of a local log goes
// through a Partition, which checks leadership, leader epochs and the
// read-only state of mirrored topics in one place.
//
// Invariants:
//   - A partition that is leader has a log, and that log's leader epoch
//     cache holds the current leader epoch starting at or below the log end
//     offset at the moment leadership began (epochStartOffset).
//   - The high watermark only increases while this node leads one leader
//     epoch, and never exceeds the log end offset nor the log end offset of
//     any ISR member this node knows of.
//   - Leadership changes (metadata deltas) take mu for writing; appends and
//     reads take it for reading, so an append never straddles a leadership
//     change: it is stamped with the leader epoch that was current for its
//     whole duration.
type Partition struct {
	tp     storage.TopicPartition
	nodeID int32
	rm     *ReplicaManager
	notify notifier

	mu               sync.RWMutex
	topicID          metadata.Uuid
	log              *storage.Log // nil until the partition has a log
	state            metadata.PartitionState
	leader           bool
	epochStartOffset int64 // log end offset when this node became leader at state.LeaderEpoch
	settings         topicSettings
	offline          error // the log could not be opened
	removed          bool

	// replicaMu guards followers and the ISR change in flight, and
	// serialises high watermark advances, so that two concurrent appends
	// never move the high watermark backwards.
	replicaMu sync.Mutex
	followers map[int32]*followerState
	isr       isrUpdate

	readOnly atomic.Pointer[error]
}

func newPartition(rm *ReplicaManager, tp storage.TopicPartition) *Partition {
	return &Partition{tp: tp, nodeID: rm.nodeID, rm: rm, epochStartOffset: -1, isr: isrUpdate{blockedEpoch: -1}}
}

// TopicPartition returns the partition's topic and index.
func (p *Partition) TopicPartition() storage.TopicPartition { return p.tp }

// TopicID returns the id of the partition's topic.
func (p *Partition) TopicID() metadata.Uuid {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.topicID
}

// Log returns the partition's local log, nil if it has none (yet). Callers
// outside the broker must not append to it directly: use AppendAsLeader.
func (p *Partition) Log() *storage.Log {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.log
}

// IsLeader reports whether this node leads the partition.
func (p *Partition) IsLeader() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.leader
}

// LeaderEpoch returns the partition's current leader epoch.
func (p *Partition) LeaderEpoch() int32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.state.LeaderEpoch
}

// State returns the partition's replica assignment and leadership as of the
// last metadata update.
func (p *Partition) State() metadata.PartitionState {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.state
}

// Changed returns a channel closed at the next change of the partition's
// log end offset, high watermark, log start offset or leadership.
func (p *Partition) Changed() <-chan struct{} { return p.notify.Changed() }

// SetReadOnly makes client produces to the partition fail with reason (a
// mirrored topic: reason wraps the Kafka error to answer, and its message
// names the mirror); nil makes it writable again. Appends of other origins
// (replication, the mirror's own appends, coordinators) are unaffected.
func (p *Partition) SetReadOnly(reason error) {
	if reason == nil {
		p.readOnly.Store(nil)
		return
	}
	p.readOnly.Store(&reason)
}

// readOnlyError is an append refused because the partition is read-only;
// it wraps the reason (and the Kafka error the reason wraps).
type readOnlyError struct{ reason error }

func (e *readOnlyError) Error() string { return e.reason.Error() }
func (e *readOnlyError) Unwrap() error { return e.reason }

// ReadOnly returns the reason client produces are refused, or nil.
func (p *Partition) ReadOnly() error {
	if r := p.readOnly.Load(); r != nil {
		return *r
	}
	return nil
}

// checkLeaderEpochLocked applies Kafka's fencing of a request's current
// leader epoch (-1: not checked): an older epoch is FENCED_LEADER_EPOCH
// (the client talks to a stale leader), a newer one UNKNOWN_LEADER_EPOCH
// (this node has not caught up with the metadata yet). Caller holds mu.
func (p *Partition) checkLeaderEpochLocked(current int32) error {
	switch {
	case current < 0:
		return nil
	case current < p.state.LeaderEpoch:
		return errf(kerr.FencedLeaderEpoch, "%s: leader epoch %d is older than the current %d", p.tp, current, p.state.LeaderEpoch)
	case current > p.state.LeaderEpoch:
		return errf(kerr.UnknownLeaderEpoch, "%s: leader epoch %d is newer than the current %d", p.tp, current, p.state.LeaderEpoch)
	}
	return nil
}

// localLogLocked returns the log for a request that names current as the
// leader epoch it expects, checking fencing first and leadership second,
// in Kafka's order. Caller holds mu.
func (p *Partition) localLogLocked(current int32, requireLeader bool) (*storage.Log, error) {
	if p.removed {
		return nil, errf(kerr.NotLeaderForPartition, "%s is no longer hosted by broker %d", p.tp, p.nodeID)
	}
	if p.offline != nil {
		return nil, fmt.Errorf("%s is offline: %w: %w", p.tp, p.offline, kerr.KafkaStorageError)
	}
	if err := p.checkLeaderEpochLocked(current); err != nil {
		return nil, err
	}
	if requireLeader && !p.leader {
		return nil, errf(kerr.NotLeaderForPartition, "broker %d is not the leader of %s", p.nodeID, p.tp)
	}
	if p.log == nil {
		return nil, errf(kerr.NotLeaderForPartition, "%s has no local log on broker %d", p.tp, p.nodeID)
	}
	return p.log, nil
}

// AppendAsLeader appends batches to the partition as its leader and, for
// requiredAcks -1, waits until they are committed (the high watermark
// passed them) or timeout passes (REQUEST_TIMED_OUT; the batches stay in the
// log, as in Kafka). origin decides the validation: OriginClient for
// producers, OriginCoordinator for coordinator records and transaction
// markers. Errors wrap Kafka's codes; when the append itself failed, nothing
// was written.
func (p *Partition) AppendAsLeader(ctx context.Context, batches []byte, origin storage.AppendOrigin, requiredAcks int16, timeout time.Duration) (storage.AppendInfo, error) {
	info, epoch, err := p.appendAsLeader(batches, origin, requiredAcks, -1, origin == storage.OriginClient)
	if err != nil || requiredAcks != -1 || info.LastOffset < 0 {
		return info, err
	}
	return info, p.waitCommitted(ctx, time.Now().Add(timeout), info.LastOffset+1, epoch)
}

// appendAsLeader appends without waiting for replication. expectEpoch, if
// not -1, is the leader epoch the caller believes current (a coordinator's
// write): another epoch fails with NOT_LEADER_OR_FOLLOWER or
// FENCED_LEADER_EPOCH and writes nothing. readOnlyGuard refuses the append
// while the partition is read-only (a mirrored topic), with a
// *readOnlyError: client produces and transaction markers pass it, the
// mirror's own appends and coordinators do not. It returns the leader
// epoch the batches were written in.
func (p *Partition) appendAsLeader(batches []byte, origin storage.AppendOrigin, requiredAcks int16, expectEpoch int32, readOnlyGuard bool) (storage.AppendInfo, int32, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	log, err := p.localLogLocked(-1, true)
	if err != nil {
		return storage.AppendInfo{}, 0, err
	}
	if expectEpoch >= 0 && expectEpoch != p.state.LeaderEpoch {
		return storage.AppendInfo{}, 0, errf(kerr.FencedLeaderEpoch, "%s: append for leader epoch %d, the current is %d", p.tp, expectEpoch, p.state.LeaderEpoch)
	}
	if readOnlyGuard {
		if ro := p.ReadOnly(); ro != nil {
			return storage.AppendInfo{}, 0, &readOnlyError{ro}
		}
	}
	if requiredAcks == -1 {
		if isr, min := len(p.state.ISR), int(p.settings.minISR); isr < min {
			return storage.AppendInfo{}, 0, errf(kerr.NotEnoughReplicas,
				"the size of the current ISR %v is insufficient to satisfy the min.isr requirement of %d for partition %s", p.state.ISR, min, p.tp)
		}
	}
	info, err := log.AppendAsLeader(batches, p.state.LeaderEpoch, origin)
	if err != nil {
		return info, 0, err
	}
	if !info.Duplicate {
		p.maybeIncrementHighWatermarkLocked()
		p.notify.signal()
		if origin == storage.OriginClient {
			p.rm.stats.produced(p.tp.Topic, info)
		}
	}
	return info, p.state.LeaderEpoch, nil
}

// waitCommitted waits until the high watermark reaches offset while this
// node still leads epoch. It fails with NOT_LEADER_OR_FOLLOWER when
// leadership moved (the batches may or may not survive), with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below
// min.insync.replicas, and with REQUEST_TIMED_OUT at the deadline.
func (p *Partition) waitCommitted(ctx context.Context, deadline time.Time, offset int64, epoch int32) error {
	var result error
	cond := func() bool {
		done, err := p.checkCommitted(offset, epoch)
		result = err
		return done
	}
	switch waitUntil(ctx, p.rm.closing, deadline, []*notifier{&p.notify}, cond) {
	case waitDone:
		return result
	case waitCanceled:
		return fmt.Errorf("wait for %s to commit offset %d: %w", p.tp, offset, ctx.Err())
	case waitClosing:
		return errf(kerr.NotLeaderForPartition, "broker %d is shutting down", p.nodeID)
	}
	return errf(kerr.RequestTimedOut, "%s: the high watermark did not reach %d in time", p.tp, offset)
}

// checkCommitted says whether an acks=all wait for offset is over, and with
// which error (Kafka's DelayedProduce completion rules).
func (p *Partition) checkCommitted(offset int64, epoch int32) (bool, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.leader || p.removed || p.log == nil || p.state.LeaderEpoch != epoch {
		return true, errf(kerr.NotLeaderForPartition, "broker %d is no longer the leader of %s in epoch %d", p.nodeID, p.tp, epoch)
	}
	if p.log.HighWatermark() < offset {
		return false, nil
	}
	if len(p.state.ISR) < int(p.settings.minISR) {
		return true, errf(kerr.NotEnoughReplicasAfterAppend,
			"the size of the current ISR %v is insufficient to satisfy the min.isr requirement of %d for partition %s", p.state.ISR, p.settings.minISR, p.tp)
	}
	return true, nil
}

// Read reads committed batches (up to the isolation's bound) as the
// partition's leader, for other parts of the node (coordinators, the
// mirror). The result must be released.
func (p *Partition) Read(offset, maxBytes int64, isolation storage.FetchIsolation, minOneBatch bool) (*storage.ReadResult, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	log, err := p.localLogLocked(-1, true)
	if err != nil {
		return nil, err
	}
	return log.Read(offset, maxBytes, isolation, minOneBatch)
}

// makeLeader applies a metadata change in which this node leads the
// partition. A new leader epoch starts at the log end offset. Follower
// positions are reset as Kafka does: a broker that just became leader
// knows no follower's position (each must fetch in the new epoch); a new
// epoch of the same leader keeps them. Either way ISR members count as
// caught up from now on, so that none is dropped from the ISR before it had
// a chance to fetch. The change also settles the ISR update in flight once
// the metadata has moved past the partition epoch it was based on.
func (p *Partition) makeLeader(lp metadata.LocalPartition, settings topicSettings, log *storage.Log) {
	p.mu.Lock()
	wasLeader := p.leader && p.log == log
	newEpoch := !wasLeader || lp.State.LeaderEpoch != p.state.LeaderEpoch
	p.topicID, p.state, p.settings, p.log = lp.TopicID, lp.State, settings, log
	p.leader, p.removed, p.offline = true, false, nil
	now := p.rm.now()
	p.replicaMu.Lock()
	if newEpoch {
		leo := log.LogEndOffset()
		if latest, ok := log.LatestEpoch(); (!ok || lp.State.LeaderEpoch > latest) && !p.keepsSourceEpochsLocked() {
			if err := log.AssignEpochStartOffset(lp.State.LeaderEpoch, leo); err != nil {
				p.rm.log.Warn("assign leader epoch start offset", "topic", p.tp.Topic, "partition", p.tp.Partition,
					"epoch", lp.State.LeaderEpoch, "offset", leo, "error", err)
			}
		}
		p.epochStartOffset = leo
		p.applyMirrorReadOnlyLocked()
		old := p.followers
		p.followers = make(map[int32]*followerState, len(lp.State.Replicas))
		for _, r := range lp.State.Replicas {
			if r == p.nodeID {
				continue
			}
			f := &followerState{logEndOffset: -1, logStartOffset: -1, lastFetchLeaderLEO: -1, brokerEpoch: -1}
			if prev, ok := old[r]; ok && wasLeader {
				*f = *prev
				f.lastFetchLeaderLEO, f.lastFetch = leo, now
			}
			f.lastCaughtUp = time.Time{}
			if lp.State.InISR(r) {
				f.lastCaughtUp = now
			}
			p.followers[r] = f
		}
		p.isr = isrUpdate{blockedEpoch: -1}
	} else {
		// Same epoch: the replica set may have changed (a reassignment).
		for _, r := range lp.State.Replicas {
			if _, ok := p.followers[r]; !ok && r != p.nodeID {
				p.followers[r] = &followerState{logEndOffset: -1, logStartOffset: -1, lastFetchLeaderLEO: -1, brokerEpoch: -1}
			}
		}
		for r := range p.followers {
			if !lp.State.HasReplica(r) {
				delete(p.followers, r)
			}
		}
		p.isr.settle(lp.State.PartitionEpoch)
	}
	p.replicaMu.Unlock()
	p.maybeIncrementHighWatermarkLocked()
	recovering := lp.State.LeaderRecoveryState == metadata.Recovering
	p.mu.Unlock()
	p.notify.signal()
	if recovering {
		p.markRecovered()
	}
}

// makeFollower applies a metadata change in which another broker (or none)
// leads the partition. Client produces and fetches are refused with
// NOT_LEADER_OR_FOLLOWER; the replica manager points a replica fetcher at
// the leader, which truncates with the leader's epoch cache (diverging
// epochs) and replicates.
func (p *Partition) makeFollower(lp metadata.LocalPartition, settings topicSettings, log *storage.Log) {
	p.mu.Lock()
	p.topicID, p.state, p.settings, p.log = lp.TopicID, lp.State, settings, log
	p.leader, p.removed, p.offline = false, false, nil
	p.epochStartOffset = -1
	p.replicaMu.Lock()
	p.followers = nil
	p.isr = isrUpdate{blockedEpoch: -1}
	p.replicaMu.Unlock()
	p.mu.Unlock()
	p.notify.signal()
}

// markOffline records that the partition's log could not be opened: every
// request for it fails with KAFKA_STORAGE_ERROR.
func (p *Partition) markOffline(lp metadata.LocalPartition, err error) {
	p.mu.Lock()
	p.topicID, p.state = lp.TopicID, lp.State
	p.leader, p.log, p.offline = false, nil, err
	p.mu.Unlock()
	p.notify.signal()
}

// leaderThrottle reports whether this leader throttles its replication of
// the partition to follower (replication_quota.go): the partition is listed
// for this broker in leader.replication.throttled.replicas and the
// follower is not in the ISR.
func (p *Partition) leaderThrottle(follower int32) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.settings.leaderThrottled) > 0 && throttledReplica(p.settings.leaderThrottled, p.tp.Partition, p.rm.nodeID) &&
		!slices.Contains(p.state.ISR, follower)
}

// updateSettings applies a change of the topic's configuration.
func (p *Partition) updateSettings(s topicSettings) {
	p.mu.Lock()
	mirrorChanged := p.settings.mirrorRaw != s.mirrorRaw
	p.settings = s
	if mirrorChanged {
		p.applyMirrorReadOnlyLocked()
	}
	p.mu.Unlock()
	p.notify.signal()
}

// remove detaches the partition from its log (the replica manager deletes
// the log); waiters wake up and fail.
func (p *Partition) remove() {
	p.mu.Lock()
	p.removed, p.leader, p.log = true, false, nil
	p.mu.Unlock()
	p.notify.signal()
}

// epochEndOffset answers OffsetForLeaderEpoch for this partition as its
// leader (Kafka's Partition.lastOffsetForLeaderEpoch): (-1, -1) with no
// error when the epoch is unknown.
func (p *Partition) epochEndOffset(currentLeaderEpoch, epoch int32) (int32, int64, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	log, err := p.localLogLocked(currentLeaderEpoch, true)
	if err != nil {
		return -1, -1, err
	}
	e, off := log.EndOffsetForEpoch(epoch)
	return e, off, nil
}

// fetchParams are one partition's part of a Fetch request.
type fetchParams struct {
	fetchOffset        int64
	followerLogStart   int64
	maxBytes           int64
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
	isolation          storage.FetchIsolation
	minOneBatch        bool
	replicaID          int32 // -1 for consumers
	replicaEpoch       int64 // a follower's broker epoch (Fetch v15+), -1 unknown
}

// fetchResult is the outcome of reading one partition for a Fetch.
type fetchResult struct {
	err         error
	res         *storage.ReadResult // nil on error or divergence; released by the response
	hw, lso     int64
	logStart    int64
	leo         int64
	diverging   bool
	divEpoch    int32
	divEndOff   int64
	leaderEpoch int32
}

// fetch reads one partition for a Fetch request, as Kafka's
// Partition.fetchRecords: fencing and leadership first, then the check of
// the fetcher's last fetched epoch (a diverging fetcher gets the epoch and
// end offset to truncate to, and no records), then the read; a follower's
// fetch also records its position.
func (p *Partition) fetch(fp fetchParams, now time.Time) fetchResult {
	p.mu.RLock()
	defer p.mu.RUnlock()
	log, err := p.localLogLocked(fp.currentLeaderEpoch, true)
	if err != nil {
		return fetchResult{err: err}
	}
	out := fetchResult{
		hw: log.HighWatermark(), lso: log.LastStableOffset(), logStart: log.LogStartOffset(), leo: log.LogEndOffset(),
		leaderEpoch: p.state.LeaderEpoch,
	}
	if fp.replicaID >= 0 && !slices.Contains(p.state.Replicas, fp.replicaID) {
		return fetchResult{err: errf(kerr.NotLeaderForPartition, "broker %d is not a replica of %s", fp.replicaID, p.tp)}
	}
	if fp.lastFetchedEpoch >= 0 {
		epoch, end := log.EndOffsetForEpoch(fp.lastFetchedEpoch)
		if epoch < 0 || end < 0 {
			return fetchResult{err: errf(kerr.OffsetOutOfRange, "%s: could not determine the end offset of the last fetched epoch %d", p.tp, fp.lastFetchedEpoch)}
		}
		if fp.fetchOffset < out.logStart {
			return fetchResult{err: errf(kerr.OffsetOutOfRange, "%s: offset %d is below the log start offset %d", p.tp, fp.fetchOffset, out.logStart)}
		}
		if epoch < fp.lastFetchedEpoch || end < fp.fetchOffset {
			out.diverging, out.divEpoch, out.divEndOff = true, epoch, end
			return out
		}
	}
	res, err := log.Read(fp.fetchOffset, fp.maxBytes, fp.isolation, fp.minOneBatch)
	if err != nil {
		if errors.Is(err, kerr.OffsetOutOfRange) {
			return fetchResult{err: err}
		}
		return fetchResult{err: fmt.Errorf("read %s: %w", p.tp, err)}
	}
	out.res = res
	out.hw, out.lso, out.logStart, out.leo = res.HighWatermark, res.LastStableOffset, res.LogStartOffset, res.LogEndOffset
	if fp.replicaID >= 0 {
		p.updateFollowerFetchStateLocked(fp.replicaID, fp.replicaEpoch, fp.fetchOffset, fp.followerLogStart, out.leo, now)
		out.hw = log.HighWatermark()
	}
	return out
}

// offsetForTimestamp answers ListOffsets for this partition, as Kafka's
// Partition.fetchOffsetForTimestamp: the latest offset is the last offset
// the isolation level may read (the log end for replicas), timestamps
// resolve only below it, and while a new leader's high watermark has not
// yet reached the start of its epoch, answers that could go backwards are
// OFFSET_NOT_AVAILABLE. consumer says the request came from a consumer
// (isolation applies), committed that it asked for READ_COMMITTED.
func (p *Partition) offsetForTimestamp(ts int64, consumer, committed bool, currentLeaderEpoch int32, requireLeader bool) (storage.TimestampOffset, bool, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	log, err := p.localLogLocked(currentLeaderEpoch, requireLeader)
	if err != nil {
		return storage.TimestampOffset{}, false, err
	}
	lastFetchable := log.LogEndOffset()
	if consumer {
		lastFetchable = log.HighWatermark()
		if committed {
			lastFetchable = log.LastStableOffset()
		}
	}
	var lagging error
	if consumer && p.leader && p.epochStartOffset > log.HighWatermark() {
		lagging = errf(kerr.OffsetNotAvailable, "%s: the high watermark %d has not caught up with the start offset %d of leader epoch %d",
			p.tp, log.HighWatermark(), p.epochStartOffset, p.state.LeaderEpoch)
	}
	switch ts {
	case storage.LatestTimestamp:
		if lagging != nil {
			return storage.TimestampOffset{}, false, lagging
		}
		return storage.TimestampOffset{Timestamp: -1, Offset: lastFetchable, LeaderEpoch: p.state.LeaderEpoch}, true, nil
	case storage.EarliestTimestamp, storage.EarliestLocalTimestamp:
		return log.OffsetForTimestamp(ts)
	}
	to, ok, err := log.OffsetForTimestamp(ts)
	if err != nil {
		return storage.TimestampOffset{}, false, err
	}
	if ok && to.Offset < lastFetchable {
		return to, true, nil
	}
	if lagging != nil {
		return storage.TimestampOffset{}, false, lagging
	}
	return storage.TimestampOffset{}, false, nil
}

// deleteRecords moves the log start offset of the partition, as its
// leader, to offset (-1: the high watermark), as Kafka's
// Partition.deleteRecordsOnLeader. It returns the new low watermark.
func (p *Partition) deleteRecords(offset int64) (int64, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	log, err := p.localLogLocked(-1, true)
	if err != nil {
		return -1, err
	}
	if !p.settings.log.CleanupPolicy.Delete {
		return -1, errf(kerr.PolicyViolation, "records of partition %s can not be deleted due to the configured policy", p.tp)
	}
	if p.ReadOnly() != nil {
		// A mirrored partition's log start follows the source's only.
		return -1, readonly.Refusal(p.tp.Topic, p.settings.mirrorRaw, "deleting records", kerr.PolicyViolation)
	}
	if offset == -1 {
		offset = log.HighWatermark()
	}
	if offset < 0 {
		return -1, errf(kerr.OffsetOutOfRange, "%s: the offset %d to delete records before is negative", p.tp, offset)
	}
	low, err := log.DeleteRecordsBefore(offset)
	if err != nil {
		return -1, err
	}
	p.notify.signal()
	return low, nil
}
