package group

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/coordinator"
)

// shard is the group coordinator's state for one __consumer_offsets
// partition: its groups and their offsets. It runs on the runtime's shard
// goroutine; see package coordinator.
type shard struct {
	c         *Coordinator
	ctx       coordinator.ShardContext[*shard]
	groups    map[string]*Group
	offsets   map[string]*Offsets
	txnGroups map[int64]map[string]bool // producer id → groups with its pending offsets
}

func (c *Coordinator) newShard(ctx coordinator.ShardContext[*shard]) *shard {
	return &shard{
		c:         c,
		ctx:       ctx,
		groups:    map[string]*Group{},
		offsets:   map[string]*Offsets{},
		txnGroups: map[int64]map[string]bool{},
	}
}

func (s *shard) now() time.Time { return s.ctx.Clock.Now() }

// Replay applies one record of the partition.
func (s *shard) Replay(r coordinator.LoggedRecord) error {
	k, err := DecodeKey(r.Key)
	if err != nil {
		return err
	}
	switch k.Kind {
	case OffsetKey:
		tp := TopicPartition{Topic: k.Topic, Partition: k.Partition}
		if r.Value == nil {
			s.removeOffset(k.Group, tp, r.Transactional, r.ProducerID)
			return nil
		}
		oc, err := DecodeOffsetValue(r.Value)
		if err != nil {
			return err
		}
		s.applyOffset(k.Group, tp, oc, r.Offset, r.Transactional, r.ProducerID)
	case GroupKey:
		if r.Value == nil {
			delete(s.groups, k.Group)
			return nil
		}
		snap, err := DecodeGroupValue(r.Value)
		if err != nil {
			return err
		}
		g, err := Restore(k.Group, snap, s.now())
		if err != nil {
			return err
		}
		s.groups[k.Group] = g
	}
	return nil
}

// ReplayMarker ends a transaction's pending offsets.
func (s *shard) ReplayMarker(offset int64, m coordinator.Marker) error {
	s.completeTxn(m.ProducerID, m.Commit)
	return nil
}

// Loaded gives every group with offsets a Group, starts the sessions of
// loaded members and the offset expiry timer.
func (s *shard) Loaded() {
	now := s.now()
	for id := range s.offsets {
		if s.groups[id] == nil {
			s.groups[id] = NewGroup(id, now)
		}
	}
	for _, id := range s.groupIDs() {
		s.install(id, s.groups[id].Handle(now, &s.c.machine, LoadedEvent{}))
	}
	s.scheduleExpiry(now.Add(s.c.cfg.OffsetsRetentionCheckInterval))
}

// Unloaded fails every request waiting on a group of the partition.
func (s *shard) Unloaded() {
	for _, g := range s.groups {
		for _, id := range g.Waiting() {
			s.c.waiters.deliver(Reply{Request: id, Err: kerr.NotCoordinator})
		}
	}
}

// groupIDs returns the group ids in order (deterministic iteration).
func (s *shard) groupIDs() []string {
	ids := make([]string, 0, len(s.groups))
	for id := range s.groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (s *shard) offsetsOf(group string) *Offsets {
	o := s.offsets[group]
	if o == nil {
		o = newOffsets()
		s.offsets[group] = o
	}
	return o
}

// applyOffset records a committed (or, transactional, pending) offset.
func (s *shard) applyOffset(group string, tp TopicPartition, oc OffsetCommit, recordOffset int64, txn bool, producer int64) {
	o := s.offsetsOf(group)
	if txn {
		o.commitPending(producer, tp, oc, recordOffset)
		gs := s.txnGroups[producer]
		if gs == nil {
			gs = map[string]bool{}
			s.txnGroups[producer] = gs
		}
		gs[group] = true
		return
	}
	o.commit(tp, oc, recordOffset)
}

// removeOffset applies an offset tombstone.
func (s *shard) removeOffset(group string, tp TopicPartition, txn bool, producer int64) {
	o := s.offsets[group]
	if o == nil {
		return
	}
	if txn {
		o.removePending(producer, tp)
	} else {
		o.remove(tp)
	}
	if o.Empty() {
		delete(s.offsets, group)
	}
}

// completeTxn commits or aborts producer's pending offsets in every group.
func (s *shard) completeTxn(producer int64, commit bool) {
	for id := range s.txnGroups[producer] {
		if o := s.offsets[id]; o != nil {
			o.completeTxn(producer, commit)
			if o.Empty() {
				delete(s.offsets, id)
			}
		}
	}
	delete(s.txnGroups, producer)
}

// hasOffsets reports whether group has committed or pending offsets.
func (s *shard) hasOffsets(group string) bool {
	o := s.offsets[group]
	return o != nil && !o.Empty()
}

// group returns the group, nil if unknown.
func (s *shard) group(id string) *Group { return s.groups[id] }

// transition turns a state machine transition into a runtime result: the
// group metadata record to write if it asks for one, and its installation
// after the commit (or its error transition if the write is refused).
func (s *shard) transition(id string, tr Transition) coordinator.Result {
	res := coordinator.Result{Apply: func(int64) { s.install(id, tr) }}
	if tr.Store {
		res.Records = []coordinator.Record{s.groupRecord(id, tr.Group)}
		if tr.OnStoreError != nil {
			res.OnError = func(err error) { s.install(id, tr.OnStoreError(groupStoreError(err))) }
		}
	}
	return res
}

// groupRecord is the metadata record of g.
func (s *shard) groupRecord(id string, g *Group) coordinator.Record {
	return coordinator.Record{Key: EncodeGroupKey(id), Value: EncodeGroupValue(g.Snapshot())}
}

// install makes tr current: the group replaces the old one (or goes, when
// Dead or when a group that never held anything stays empty), timers are
// set and replies delivered.
func (s *shard) install(id string, tr Transition) {
	g := tr.Group
	switch {
	case g.State() == Dead:
		delete(s.groups, id)
	case pristine(g) && !s.hasOffsets(id):
		delete(s.groups, id)
	default:
		s.groups[id] = g
	}
	for _, tc := range tr.Timers {
		key := groupTimerKey(id, tc.Key)
		if tc.At.IsZero() {
			s.ctx.Timers.Cancel(key)
			continue
		}
		s.ctx.Timers.Schedule(key, tc.At, s.timerOp(id, tc.Key))
	}
	for _, r := range tr.Replies {
		s.c.waiters.deliver(r)
	}
}

// pristine reports whether g holds nothing worth keeping: a group created by
// a request that did not make it a member.
func pristine(g *Group) bool {
	return g.State() == Empty && g.Generation() == 0 && g.Len() == 0 && len(g.pending) == 0 && g.ProtocolType() == ""
}

// groupTimerKey names a group timer in the shard's timer set.
func groupTimerKey(group string, k TimerKey) string {
	return "group\x00" + group + "\x00" + string(rune('0'+k.Kind)) + "\x00" + k.Member
}

// timerOp is the operation a group timer runs.
func (s *shard) timerOp(id string, k TimerKey) coordinator.Op[*shard] {
	return func(s *shard) (coordinator.Result, error) {
		g := s.group(id)
		if g == nil {
			return coordinator.Result{}, nil
		}
		return s.transition(id, g.Handle(s.now(), &s.c.machine, TimeoutEvent{Timer: k})), nil
	}
}
