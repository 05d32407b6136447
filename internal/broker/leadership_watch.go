package broker

// leadershipWatcher is a subscriber to the leadership of one topic's
// partitions (a coordinator runtime following its internal topic). It
// remembers what it last told fn so that every call is a change.
type leadershipWatcher struct {
	topic string
	fn    func(partition int32, leader bool, leaderEpoch int32)
	last  map[int32]leadershipState
}

type leadershipState struct {
	leader bool
	epoch  int32
}

// WatchLeadership calls fn for every partition of topic this node leads,
// now and whenever it starts or stops leading one or its leader epoch
// changes. Calls for one partition are in order; fn must not block. stop
// ends the watch: no call happens after it returns.
func (rm *ReplicaManager) WatchLeadership(topic string, fn func(partition int32, leader bool, leaderEpoch int32)) (stop func()) {
	w := &leadershipWatcher{topic: topic, fn: fn, last: make(map[int32]leadershipState)}
	rm.watchMu.Lock()
	if rm.watchers[topic] == nil {
		rm.watchers[topic] = make(map[*leadershipWatcher]struct{})
	}
	rm.watchers[topic][w] = struct{}{}
	for _, p := range rm.Partitions() {
		if p.tp.Topic != topic {
			continue
		}
		p.mu.RLock()
		leader, epoch := p.leader && !p.removed && p.log != nil, p.state.LeaderEpoch
		p.mu.RUnlock()
		if leader {
			w.tell(p.tp.Partition, true, epoch)
		}
	}
	rm.watchMu.Unlock()
	return func() {
		rm.watchMu.Lock()
		delete(rm.watchers[topic], w)
		rm.watchMu.Unlock()
	}
}

// tell calls the watcher's fn unless it would repeat the last call, or
// report "not leader" for a partition it was never told it leads.
func (w *leadershipWatcher) tell(partition int32, leader bool, epoch int32) {
	prev, known := w.last[partition]
	if !leader && (!known || !prev.leader) {
		return
	}
	if known && prev.leader == leader && prev.epoch == epoch {
		return
	}
	w.last[partition] = leadershipState{leader: leader, epoch: epoch}
	w.fn(partition, leader, epoch)
}

// notifyWatchers tells the watchers of topic about a partition's new
// leadership.
func (rm *ReplicaManager) notifyWatchers(topic string, partition int32, leader bool, epoch int32) {
	rm.watchMu.Lock()
	defer rm.watchMu.Unlock()
	for w := range rm.watchers[topic] {
		w.tell(partition, leader, epoch)
	}
}
