package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/mirror/readonly"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// The hooks of this file let the mirror data plane (package mirror) run a
// mirrored partition on its leader. A partition is mirrored while its
// topic's mirror.name config is set: "<m>" (mirroring), "<m>.paused" or
// "<m>.removed" (failing over, or failed over), "<m>.stopped" (failed
// over, recorded as complete: an ordinary topic again).

// keepsSourceEpochsLocked reports whether the partition's epoch cache must
// hold only the source cluster's leader epochs: a mirrored partition stores
// the source's batches with their epochs, and an entry for a destination
// epoch at the log end would make the source's divergence checks compare
// epochs of two clusters. The failover (STOPPING) makes the destination's
// epochs take over by bumping the leader epoch above every mirrored one and
// appending its barrier batch in it; appends record their epochs in the
// cache as usual, so skipping the proactive assignment at a leader change
// loses nothing once the partition is writable. Caller holds mu.
func (p *Partition) keepsSourceEpochsLocked() bool {
	_, m := wire.ParseMirrorName(p.settings.mirrorRaw)
	return m.ReadOnly()
}

// mirrorDefaultReadOnly is how client produces to a mirrored partition are
// answered until the mirror manager has read the partition's state: a
// partition that is mirrored or paused refuses them for good
// (INVALID_TOPIC_EXCEPTION, as Kafka refuses produces to its internal
// topics: clients fail fast instead of retrying), one being failed over
// asks clients to retry (NOT_LEADER_OR_FOLLOWER) since it becomes writable
// once the failover completes. The mirror manager replaces the reason (or
// clears it) with SetReadOnly.
func mirrorDefaultReadOnly(topic, raw string) error {
	switch _, m := wire.ParseMirrorName(raw); m {
	case wire.NotMirrored, wire.MembershipStopped:
		return nil
	case wire.MembershipRemoved:
		return readonly.Refusal(topic, raw, "producing", kerr.NotLeaderForPartition)
	}
	return readonly.Refusal(topic, raw, "producing", kerr.InvalidTopicException)
}

// applyMirrorReadOnlyLocked sets the default read-only reason of a mirrored
// partition when its leadership begins or its mirror.name changes, before
// any client produce can reach it; for a topic that left its mirror it
// makes the partition writable. Caller holds mu for writing.
func (p *Partition) applyMirrorReadOnlyLocked() {
	p.SetReadOnly(mirrorDefaultReadOnly(p.tp.Topic, p.settings.mirrorRaw))
}

// FollowerFetch is what a leader knows of one follower from its fetches in
// the current leader epoch.
type FollowerFetch struct {
	// LogEndOffset is the follower's fetch offset (its log end), -1 before
	// its first fetch in this epoch.
	LogEndOffset int64
	// LogStartOffset is the follower's log start offset.
	LogStartOffset int64
	// LastFetch is when its last fetch was processed (zero if none).
	LastFetch time.Time
}

// FollowerFetches returns what the leader knows of each follower replica:
// the mirror's PREPARING waits until every in-sync follower has fetched
// after the truncation, inside the leader's log.
func (p *Partition) FollowerFetches() map[int32]FollowerFetch {
	p.replicaMu.Lock()
	defer p.replicaMu.Unlock()
	out := make(map[int32]FollowerFetch, len(p.followers))
	for id, f := range p.followers {
		out[id] = FollowerFetch{LogEndOffset: f.logEndOffset, LogStartOffset: f.logStartOffset, LastFetch: f.lastFetch}
	}
	return out
}

// MirrorName returns the topic's raw mirror.name config as the partition
// last saw it ("" when the topic is in no mirror).
func (p *Partition) MirrorName() string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.settings.mirrorRaw
}

// Now is the broker's clock (the one follower fetch times are taken with).
func (rm *ReplicaManager) Now() time.Time { return rm.now() }

// AppendInEpoch appends batches with origin as the partition's leader if it
// still leads in leaderEpoch (otherwise nothing is written and the error
// wraps NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH), then waits until
// they are committed or ctx ends. The mirror appends its failover barrier
// this way, so that a driver of an older leadership cannot write it.
func (p *Partition) AppendInEpoch(ctx context.Context, batches []byte, origin storage.AppendOrigin, leaderEpoch int32) (storage.AppendInfo, error) {
	info, epoch, err := p.appendAsLeader(batches, origin, -1, leaderEpoch, false)
	if err != nil || info.LastOffset < 0 {
		return info, err
	}
	return info, p.waitCommitted(ctx, time.Time{}, info.LastOffset+1, epoch)
}

// WaitCommittedInEpoch waits until the high watermark reaches offset while
// this node leads the partition in leaderEpoch, or ctx ends. The mirror's
// failover declares a partition STOPPED only once its barrier is committed
// this way: every in-sync replica has it, so no clean election loses it.
func (p *Partition) WaitCommittedInEpoch(ctx context.Context, offset int64, leaderEpoch int32) error {
	return p.waitCommitted(ctx, time.Time{}, offset, leaderEpoch)
}

// leaderTruncatedLocked keeps the leader's epoch start offset inside its
// log after a truncation. Only a mirrored partition's leader truncates its
// own log (PREPARING, a DivergingEpoch answer from the source, STOPPING's
// cut to the last stable offset); the leader epoch then effectively starts
// where the log now ends, and an epoch start left beyond it would make
// ListOffsets answer OFFSET_NOT_AVAILABLE and keep followers out of the ISR
// until the log grew past it again. Caller holds mu for writing.
func (p *Partition) leaderTruncatedLocked(log *storage.Log) {
	if p.leader && p.epochStartOffset > log.LogEndOffset() {
		p.epochStartOffset = log.LogEndOffset()
	}
}

// TruncateInEpoch is TruncateTo for the mirror: it truncates only while
// this node still leads the partition in leaderEpoch (otherwise nothing
// changes and the error wraps NOT_LEADER_OR_FOLLOWER or
// FENCED_LEADER_EPOCH), so that the work of a mirror driver whose
// leadership ended cannot cut a log another driver now owns.
func (p *Partition) TruncateInEpoch(offset int64, leaderEpoch int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	log, err := p.leaderLogInEpochLocked(leaderEpoch)
	if err != nil {
		return err
	}
	err = log.TruncateTo(offset)
	p.leaderTruncatedLocked(log)
	p.notify.signal()
	return err
}

// TruncateFullyInEpoch is TruncateFullyAndStartAt for the mirror, fenced
// like TruncateInEpoch.
func (p *Partition) TruncateFullyInEpoch(offset int64, leaderEpoch int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	log, err := p.leaderLogInEpochLocked(leaderEpoch)
	if err != nil {
		return err
	}
	err = log.TruncateFullyAndStartAt(offset)
	p.leaderTruncatedLocked(log)
	p.notify.signal()
	return err
}

// leaderLogInEpochLocked returns the log if this node leads the partition
// in leaderEpoch. Caller holds mu.
func (p *Partition) leaderLogInEpochLocked(leaderEpoch int32) (*storage.Log, error) {
	log, err := p.localLogLocked(-1, true)
	if err != nil {
		return nil, err
	}
	if p.state.LeaderEpoch != leaderEpoch {
		return nil, errf(kerr.FencedLeaderEpoch, "%s: leader epoch %d is not the current %d", p.tp, leaderEpoch, p.state.LeaderEpoch)
	}
	return log, nil
}

// RaiseLogStartInEpoch moves the log start offset up to offset once the
// high watermark has reached it (false, nil: not yet), while this node
// leads the partition in leaderEpoch. The mirror restores the source's log
// start with it after restarting an empty log at the base of a batch that
// holds it (fetchTarget.restartInsideBatch).
func (p *Partition) RaiseLogStartInEpoch(offset int64, leaderEpoch int32) (bool, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	log, err := p.leaderLogInEpochLocked(leaderEpoch)
	if err != nil {
		return false, err
	}
	if log.HighWatermark() < offset {
		return false, nil
	}
	if _, err := log.DeleteRecordsBefore(offset); err != nil {
		return false, err
	}
	p.notify.signal()
	return true, nil
}
