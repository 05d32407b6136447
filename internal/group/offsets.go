package group

import (
	"time"
)

// committedOffset is a committed offset with the log offset of the record
// that committed it: between a transactional commit and a plain one for
// the same partition, the later record wins.
type committedOffset struct {
	OffsetCommit
	recordOffset int64
}

// Offsets are the committed offsets of one group, and the offsets its
// transactional producers committed in transactions not yet ended. They
// change only by replaying committed records, at load and after writes.
type Offsets struct {
	committed map[TopicPartition]committedOffset
	pending   map[int64]map[TopicPartition]committedOffset // producer id → offsets
}

func newOffsets() *Offsets {
	return &Offsets{committed: map[TopicPartition]committedOffset{}, pending: map[int64]map[TopicPartition]committedOffset{}}
}

// Len is the number of committed offsets.
func (o *Offsets) Len() int { return len(o.committed) }

// Empty reports whether the group has neither committed nor pending
// offsets.
func (o *Offsets) Empty() bool { return len(o.committed) == 0 && len(o.pending) == 0 }

// Get returns the committed offset of tp.
func (o *Offsets) Get(tp TopicPartition) (OffsetCommit, bool) {
	c, ok := o.committed[tp]
	return c.OffsetCommit, ok
}

// Partitions lists the partitions with a committed offset.
func (o *Offsets) Partitions() []TopicPartition {
	tps := make([]TopicPartition, 0, len(o.committed))
	for tp := range o.committed {
		tps = append(tps, tp)
	}
	return tps
}

// HasPending reports whether a transaction not yet ended committed an
// offset for tp (OffsetFetch with RequireStable answers
// UNSTABLE_OFFSET_COMMIT then).
func (o *Offsets) HasPending(tp TopicPartition) bool {
	for _, p := range o.pending {
		if _, ok := p[tp]; ok {
			return true
		}
	}
	return false
}

type pendingOffsets = map[TopicPartition]committedOffset

// commit records a committed offset replayed at recordOffset.
func (o *Offsets) commit(tp TopicPartition, c OffsetCommit, recordOffset int64) {
	o.committed[tp] = committedOffset{OffsetCommit: c, recordOffset: recordOffset}
}

// remove drops tp's committed offset (a tombstone).
func (o *Offsets) remove(tp TopicPartition) {
	delete(o.committed, tp)
}

// commitPending records an offset committed in producer's transaction.
func (o *Offsets) commitPending(producer int64, tp TopicPartition, c OffsetCommit, recordOffset int64) {
	p := o.pending[producer]
	if p == nil {
		p = pendingOffsets{}
		o.pending[producer] = p
	}
	p[tp] = committedOffset{OffsetCommit: c, recordOffset: recordOffset}
}

// removePending drops tp from producer's pending offsets (a transactional
// tombstone).
func (o *Offsets) removePending(producer int64, tp TopicPartition) {
	if p := o.pending[producer]; p != nil {
		delete(p, tp)
	}
}

// completeTxn ends producer's transaction: on commit its offsets become the
// committed ones, unless a plain commit written after them is newer.
func (o *Offsets) completeTxn(producer int64, commit bool) {
	p, ok := o.pending[producer]
	if !ok {
		return
	}
	delete(o.pending, producer)
	if !commit {
		return
	}
	for tp, c := range p {
		if cur, ok := o.committed[tp]; !ok || cur.recordOffset < c.recordOffset {
			o.committed[tp] = c
		}
	}
}

// ExpiredOffsets returns the committed offsets of a group that
// offsets.retention.minutes removes at now, by Kafka's (2.1+) rules:
//   - a group with a protocol that is Empty loses all its offsets once the
//     retention passed since it became Empty;
//   - a Stable consumer group whose subscriptions are known loses the
//     offsets of topics it no longer subscribes to, retention after their
//     commit;
//   - a group without protocol (offsets only) loses each offset retention
//     after its commit;
//   - an offset committed with an explicit retention (OffsetCommit v2-v4)
//     expires at its expire time instead, in the cases above.
func ExpiredOffsets(g *Group, o *Offsets, now time.Time, retention time.Duration) []TopicPartition {
	nowMs, retMs := now.UnixMilli(), retention.Milliseconds()
	expired := func(base func(committedOffset) int64, skipTopics map[string]bool) []TopicPartition {
		var out []TopicPartition
		for tp, c := range o.committed {
			if skipTopics[tp.Topic] {
				continue
			}
			if c.ExpireTime >= 0 {
				if nowMs >= c.ExpireTime {
					out = append(out, tp)
				}
			} else if nowMs-base(c) >= retMs {
				out = append(out, tp)
			}
		}
		return out
	}
	commitTime := func(c committedOffset) int64 { return c.CommitTime }
	switch {
	case g.protocolType != "" && g.state == Empty:
		if g.stateTime.IsZero() {
			return expired(commitTime, nil)
		}
		since := g.stateTime.UnixMilli()
		return expired(func(committedOffset) int64 { return since }, nil)
	case g.protocolType == ConsumerProtocolType && g.subscribed != nil && g.state == Stable:
		return expired(commitTime, g.subscribed)
	case g.protocolType == "":
		return expired(commitTime, nil)
	}
	return nil
}
