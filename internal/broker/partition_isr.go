package broker

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/metadata"
)

// This file is the leader's side of replication: what the leader knows of
// its followers from their fetches, the high watermark it derives from
// them, and the ISR changes it asks the controller for (AlterPartition),
// following Kafka's Partition:
//
//   - A follower is caught up when its last fetch reached the leader's log
//     end, or reached the log end the leader had at the follower's previous
//     fetch; lastCaughtUp records when. An ISR member that has not been
//     caught up for replica.lag.time.max.ms is dropped from the ISR (the
//     periodic shrink check), unless it has the whole log.
//   - A follower outside the ISR joins it once its log end reaches the high
//     watermark and the start of the current leader epoch, if its broker is
//     unfenced, not shutting down and fetches with its current broker epoch.
//   - The high watermark is the least log end offset of the "maximal" ISR
//     (the ISR plus a member being added) and of every other follower that
//     is caught up and eligible, which therefore joins without losing
//     records that were committed meanwhile.
//   - One ISR change at a time: while one is in flight the ISR is not
//     changed again. The new ISR takes effect when the metadata carrying it
//     arrives (makeLeader with a newer partition epoch); until then the
//     maximal ISR keeps the high watermark safe.

// followerState is what the leader knows about a follower replica from its
// fetches in the current leader epoch.
type followerState struct {
	logEndOffset   int64 // the follower's fetch offset; -1 until it fetched in this leader epoch
	logStartOffset int64 // -1 until known
	lastFetch      time.Time
	// lastFetchLeaderLEO is the leader's log end offset at the follower's
	// previous fetch (the largest seen): reaching it counts as having been
	// caught up at that fetch.
	lastFetchLeaderLEO int64
	lastCaughtUp       time.Time
	brokerEpoch        int64 // from Fetch v15+, -1 unknown
}

// caughtUp is Kafka's ReplicaState.isCaughtUp.
func (f *followerState) caughtUp(leaderLEO int64, now time.Time, maxLag time.Duration) bool {
	return f.logEndOffset == leaderLEO || (!f.lastCaughtUp.IsZero() && now.Sub(f.lastCaughtUp) <= maxLag)
}

// isrUpdate is the leader's ISR change in progress. Guarded by replicaMu.
type isrUpdate struct {
	// pending is the change sent (or queued) to the controller and not yet
	// seen in the metadata; nil when none.
	pending *isrChange
	// retryAt holds new changes back after a refused or failed one.
	retryAt time.Time
	// blockedEpoch, when not -1, is a partition epoch the controller said is
	// stale: no change is proposed until the metadata moves past it.
	blockedEpoch int32
}

// settle applies metadata at partitionEpoch: a pending change based on an
// older partition epoch is decided (ours or somebody else's change won),
// and a block on an older epoch ends.
func (u *isrUpdate) settle(partitionEpoch int32) {
	if u.pending != nil && partitionEpoch > u.pending.partitionEpoch {
		u.pending = nil
	}
	if u.blockedEpoch >= 0 && partitionEpoch != u.blockedEpoch {
		u.blockedEpoch = -1
	}
}

// isrChange is one AlterPartition item: the ISR the leader wants, based on
// the leader and partition epochs it knew.
type isrChange struct {
	isr            []int32
	leaderEpoch    int32
	partitionEpoch int32
	// recovered asks the controller to end leader recovery (after an
	// unclean election).
	recovered bool
	// brokerEpochs are the ISR members' broker epochs (-1 unknown).
	brokerEpochs map[int32]int64
	// committed is set when the controller accepted the change.
	committed bool
}

// isrRetryBackoff paces new ISR change attempts after one failed.
const isrRetryBackoff = 200 * time.Millisecond

// maxLag returns replica.lag.time.max.ms.
func (p *Partition) maxLag() time.Duration {
	return time.Duration(p.rm.Config().ReplicaLagTimeMaxMs) * time.Millisecond
}

// maximalISRLocked is the ISR plus a member being added. Caller holds mu
// and replicaMu.
func (p *Partition) maximalISRLocked() []int32 {
	ch := p.isr.pending
	if ch == nil {
		return p.state.ISR
	}
	out := slices.Clone(p.state.ISR)
	for _, r := range ch.isr {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// maybeIncrementHighWatermarkLocked advances the high watermark as Kafka's
// Partition.maybeIncrementLeaderHW does (see the top of this file). Caller
// holds mu (for reading or writing). It reports whether the high
// watermark moved.
func (p *Partition) maybeIncrementHighWatermarkLocked() bool {
	if !p.leader || p.log == nil {
		return false
	}
	p.replicaMu.Lock()
	defer p.replicaMu.Unlock()
	leo := p.log.LogEndOffset()
	hw := leo
	now, lag := p.rm.now(), p.maxLag()
	img := p.rm.Image()
	maximal := p.maximalISRLocked()
	for _, id := range maximal {
		if id == p.nodeID {
			continue
		}
		if f := p.followers[id]; f == nil || f.logEndOffset < 0 {
			return false // an ISR member that has not fetched in this epoch holds it
		}
	}
	for id, f := range p.followers {
		if f.logEndOffset >= hw {
			continue
		}
		if slices.Contains(maximal, id) || (f.caughtUp(leo, now, lag) && isrEligible(img, id, f.brokerEpoch)) {
			hw = f.logEndOffset
		}
	}
	if hw < 0 || hw <= p.log.HighWatermark() {
		return false
	}
	p.log.SetHighWatermark(hw)
	return true
}

// isrEligible reports whether broker id may join an ISR: registered,
// unfenced, not shutting down, and (when its fetches say) in its current
// broker epoch.
func isrEligible(img *metadata.Image, id int32, fetchEpoch int64) bool {
	reg, ok := img.Broker(id)
	return ok && !reg.Fenced && !reg.InControlledShutdown && (fetchEpoch < 0 || fetchEpoch == reg.Epoch)
}

// updateFollowerFetchStateLocked records a follower's position from its
// fetch: it has everything below fetchOffset; leaderLEO is the leader's log
// end offset when the fetch read. It then advances the high watermark and
// may add the follower to the ISR. Caller holds mu (read).
func (p *Partition) updateFollowerFetchStateLocked(replicaID int32, brokerEpoch, fetchOffset, followerLogStart, leaderLEO int64, now time.Time) {
	p.replicaMu.Lock()
	f := p.followers[replicaID]
	if f == nil {
		f = &followerState{logEndOffset: -1, logStartOffset: -1, lastFetchLeaderLEO: -1, brokerEpoch: -1}
		if p.followers == nil {
			p.followers = make(map[int32]*followerState)
		}
		p.followers[replicaID] = f
	}
	switch {
	case fetchOffset >= leaderLEO:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, now)
	case f.lastFetchLeaderLEO >= 0 && fetchOffset >= f.lastFetchLeaderLEO:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, f.lastFetch)
	}
	startMoved := followerLogStart != f.logStartOffset
	f.logEndOffset = fetchOffset
	f.logStartOffset = followerLogStart
	f.lastFetchLeaderLEO = max(leaderLEO, f.lastFetchLeaderLEO)
	f.lastFetch = now
	if brokerEpoch >= 0 {
		f.brokerEpoch = brokerEpoch
	}
	p.maybeExpandISRLocked(replicaID, f, now)
	p.replicaMu.Unlock()
	if p.maybeIncrementHighWatermarkLocked() || startMoved {
		p.notify.signal()
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// maybeExpandISRLocked proposes adding follower id to the ISR when it has
// caught up with the high watermark and the current epoch. Caller holds mu
// (read) and replicaMu.
func (p *Partition) maybeExpandISRLocked(id int32, f *followerState, now time.Time) {
	if !p.leader || p.log == nil || p.state.InISR(id) || !p.mayProposeLocked(now) {
		return
	}
	if p.state.LeaderRecoveryState == metadata.Recovering {
		return // the ISR stays the leader alone until recovery ends
	}
	if f.logEndOffset < p.log.HighWatermark() || f.logEndOffset < p.epochStartOffset {
		return
	}
	if !isrEligible(p.rm.Image(), id, f.brokerEpoch) {
		return
	}
	isr := append(slices.Clone(p.state.ISR), id)
	p.rm.log.Info("expanding the ISR", "topic", p.tp.Topic, "partition", p.tp.Partition, "isr", p.state.ISR, "adding", id,
		"follower_log_end", f.logEndOffset, "high_watermark", p.log.HighWatermark())
	p.proposeISRLocked(isr, false)
}

// mayProposeLocked reports whether a new ISR change may be proposed now.
// Caller holds mu and replicaMu.
func (p *Partition) mayProposeLocked(now time.Time) bool {
	u := &p.isr
	return u.pending == nil && now.After(u.retryAt) && (u.blockedEpoch < 0 || u.blockedEpoch != p.state.PartitionEpoch)
}

// proposeISRLocked records a change as pending and hands it to the
// AlterPartition sender. Caller holds mu (read) and replicaMu.
func (p *Partition) proposeISRLocked(isr []int32, recovered bool) {
	ch := &isrChange{
		isr: isr, leaderEpoch: p.state.LeaderEpoch, partitionEpoch: p.state.PartitionEpoch,
		recovered:    recovered || p.state.LeaderRecoveryState == metadata.Recovered,
		brokerEpochs: make(map[int32]int64, len(isr)),
	}
	for _, r := range isr {
		e := int64(-1)
		if r == p.nodeID {
			e = p.rm.brokerEpoch()
		} else if f := p.followers[r]; f != nil {
			e = f.brokerEpoch
		}
		ch.brokerEpochs[r] = e
	}
	p.isr.pending = ch
	if s := p.rm.alter; s != nil {
		s.submit(p, p.topicID, ch)
	}
}

// maybeShrinkISR drops from the ISR the followers that have not been
// caught up for replica.lag.time.max.ms (the periodic check of every
// leader partition). It also advances the high watermark when a follower
// outside the ISR stopped holding it back.
func (p *Partition) maybeShrinkISR(now time.Time) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.leader || p.log == nil || p.removed {
		return
	}
	if p.maybeIncrementHighWatermarkLocked() {
		p.notify.signal()
	}
	p.replicaMu.Lock()
	defer p.replicaMu.Unlock()
	if !p.mayProposeLocked(now) {
		return
	}
	leo, lag := p.log.LogEndOffset(), p.maxLag()
	var out []int32
	var behind []string // how long each was not caught up, as this check saw it
	for _, id := range p.state.ISR {
		if id == p.nodeID {
			continue
		}
		if f := p.followers[id]; f == nil || !f.caughtUp(leo, now, lag) {
			out = append(out, id)
			if f == nil || f.lastCaughtUp.IsZero() {
				behind = append(behind, "never caught up")
			} else {
				behind = append(behind, now.Sub(f.lastCaughtUp).String())
			}
		}
	}
	if len(out) == 0 {
		return
	}
	isr := slices.DeleteFunc(slices.Clone(p.state.ISR), func(r int32) bool { return slices.Contains(out, r) })
	p.rm.log.Info("shrinking the ISR: followers out of sync", "topic", p.tp.Topic, "partition", p.tp.Partition,
		"isr", p.state.ISR, "removing", out, "behind_for", behind, "leader_log_end", leo, "high_watermark", p.log.HighWatermark(), "lag_max", lag)
	p.proposeISRLocked(isr, false)
}

// markRecovered ends the leader recovery of a partition this node leads
// after an unclean election: the log it has is the partition's now, so it
// asks the controller to mark the partition recovered (with the ISR it
// has, itself), after which followers may join the ISR again.
func (p *Partition) markRecovered() {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.leader || p.log == nil || p.state.LeaderRecoveryState != metadata.Recovering {
		return
	}
	p.replicaMu.Lock()
	defer p.replicaMu.Unlock()
	if !p.mayProposeLocked(p.rm.now()) {
		return
	}
	p.proposeISRLocked([]int32{p.nodeID}, true)
}

// alterPartitionDone applies the controller's answer to change ch: err nil
// means accepted (the metadata will bring it), otherwise it wraps the
// Kafka error. A refused change is forgotten; stale epochs wait for newer
// metadata, other refusals retry after a backoff.
func (p *Partition) alterPartitionDone(ch *isrChange, err error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	p.replicaMu.Lock()
	defer p.replicaMu.Unlock()
	if p.isr.pending != ch {
		return // the metadata already decided it, or leadership moved
	}
	if err == nil {
		ch.committed = true
		p.rm.stats.isrChanged(len(p.state.ISR), len(ch.isr))
		return
	}
	p.isr.pending = nil
	switch {
	case errors.Is(err, kerr.FencedLeaderEpoch), errors.Is(err, kerr.InvalidUpdateVersion),
		errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
		p.isr.blockedEpoch = ch.partitionEpoch
	default:
		p.isr.retryAt = p.rm.now().Add(isrRetryBackoff)
	}
	p.rm.log.Info("ISR change refused", "topic", p.tp.Topic, "partition", p.tp.Partition, "proposed_isr", ch.isr,
		"leader_epoch", ch.leaderEpoch, "partition_epoch", ch.partitionEpoch, "error", err)
	// A refused expansion no longer holds the high watermark.
	p.replicaMu.Unlock()
	if p.maybeIncrementHighWatermarkLocked() {
		p.notify.signal()
	}
	p.replicaMu.Lock()
}

// pendingChange returns the ISR change in flight, if any (for the sender's
// retries).
func (p *Partition) pendingChange() *isrChange {
	p.replicaMu.Lock()
	defer p.replicaMu.Unlock()
	return p.isr.pending
}

// lowWatermark returns the least log start offset of the leader and its
// ISR followers: DeleteRecords is complete once it reaches the requested
// offset. A follower whose log start is unknown counts as -1.
func (p *Partition) lowWatermark() (int64, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	log, err := p.localLogLocked(-1, true)
	if err != nil {
		return -1, err
	}
	low := log.LogStartOffset()
	p.replicaMu.Lock()
	defer p.replicaMu.Unlock()
	for _, id := range p.state.ISR {
		if id == p.nodeID {
			continue
		}
		f := p.followers[id]
		if f == nil {
			return -1, nil
		}
		low = min(low, f.logStartOffset)
	}
	return low, nil
}

// FollowerPositions returns, for each follower the leader heard from in
// this leader epoch, its log end offset.
func (p *Partition) FollowerPositions() map[int32]int64 {
	p.replicaMu.Lock()
	defer p.replicaMu.Unlock()
	out := make(map[int32]int64, len(p.followers))
	for id, f := range p.followers {
		if f.logEndOffset >= 0 {
			out[id] = f.logEndOffset
		}
	}
	return out
}
