package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/storage"
)

// The operations of this file are the partition side of replication
// (issue 4: follower fetchers) and cluster mirroring (issue 6: mirror
// fetchers append the source's batches as they are, on the leader). They
// keep the Partition the only writer of its log, so that leadership checks,
// the high watermark and waiters stay consistent.

// AppendAsFollower appends batches fetched from the leader, keeping their
// offsets and leader epochs. The partition must be a follower: a leader
// refuses with NOT_LEADER_OR_FOLLOWER (mirrors use AppendMirrored).
func (p *Partition) AppendAsFollower(batches []byte) (storage.AppendInfo, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	log, err := p.localLogLocked(-1, false)
	if err != nil {
		return storage.AppendInfo{}, err
	}
	if p.leader {
		return storage.AppendInfo{}, errf(kerr.NotLeaderForPartition, "%s: broker %d leads it and does not append as a follower", p.tp, p.nodeID)
	}
	info, err := log.AppendAsFollower(batches)
	if err == nil && info.FirstOffset >= 0 {
		p.notify.signal()
	}
	return info, err
}

// SetFollowerHighWatermark records the leader's high watermark on a
// follower (bounded by the follower's log end). As in Kafka's follower it
// only moves forward: a new leader may report a lower high watermark for
// a while after an election, which does not uncommit anything.
func (p *Partition) SetFollowerHighWatermark(hw int64) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.leader || p.log == nil || hw <= p.log.HighWatermark() {
		return
	}
	// The log clamps the value to its own end: a follower behind the leader
	// knows only its own records to be committed.
	p.log.SetHighWatermark(hw)
	p.notify.signal()
}

// AppendMirrored appends batches of a source cluster as they are (offsets,
// producer ids, sequences, leader epochs, markers) on the partition's
// leader, which must still be at leaderEpoch: a mirror fetcher's append.
// The high watermark advances as for any leader append.
func (p *Partition) AppendMirrored(batches []byte, leaderEpoch int32) (storage.AppendInfo, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	log, err := p.localLogLocked(leaderEpoch, true)
	if err != nil {
		return storage.AppendInfo{}, err
	}
	info, err := log.AppendAsFollower(batches)
	if err == nil && info.FirstOffset >= 0 {
		p.maybeIncrementHighWatermarkLocked()
		p.notify.signal()
	}
	return info, err
}

// TruncateTo removes every offset >= offset (a follower diverging from its
// leader, a mirror truncating to the last mirrored epoch). It excludes
// appends and reads of the partition while it runs. Waiters wake up.
func (p *Partition) TruncateTo(offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	log, err := p.localLogLocked(-1, false)
	if err != nil {
		return err
	}
	err = log.TruncateTo(offset)
	p.leaderTruncatedLocked(log)
	p.notify.signal()
	return err
}

// TruncateFullyAndStartAt empties the log and restarts it at offset (a
// mirror starting from the source's log start).
func (p *Partition) TruncateFullyAndStartAt(offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	log, err := p.localLogLocked(-1, false)
	if err != nil {
		return err
	}
	err = log.TruncateFullyAndStartAt(offset)
	p.leaderTruncatedLocked(log)
	p.notify.signal()
	return err
}
