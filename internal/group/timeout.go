package group

// TimeoutEvent is a group timer firing. Timers are advisory: the machine
// acts only if the deadline its state records has passed, so a timer that
// fires late, early or after being replaced changes nothing.
type TimeoutEvent struct {
	Timer TimerKey
}

func (TimeoutEvent) isEvent() {}

// LoadedEvent is delivered once after the group is loaded from the log: the
// sessions of its members start now.
type LoadedEvent struct{}

func (LoadedEvent) isEvent() {}

func (t *tx) timeout(e TimeoutEvent) {
	switch e.Timer.Kind {
	case TimerHeartbeat:
		t.expireHeartbeat(e.Timer.Member)
	case TimerJoin:
		t.expireJoin()
	case TimerSync:
		t.expireSync()
	}
}

// expireHeartbeat removes a member (or pending member id) whose session ran
// out, unless it is waiting in a rebalance it already took part in.
func (t *tx) expireHeartbeat(id string) {
	g := t.g
	if g.state == Dead {
		return
	}
	if deadline, ok := g.pending[id]; ok {
		if !t.now.Before(deadline) {
			t.removePending(id)
		}
		return
	}
	m, ok := g.members[id]
	if !ok || t.now.Before(m.heartbeatDeadline) || m.satisfiedHeartbeat() {
		return
	}
	t.removeMember(id)
}

// expireJoin ends the PreparingRebalance phase at its deadline. During the
// initial delay of an Empty group's rebalance, each member that arrived
// extends the wait by one more delay, up to the rebalance timeout.
func (t *tx) expireJoin() {
	g := t.g
	if g.state != PreparingRebalance || g.join.deadline.IsZero() || t.now.Before(g.join.deadline) {
		return
	}
	if g.join.initial && g.newMemberAdded && g.join.remaining != 0 {
		g.newMemberAdded = false
		step := min(t.cfg.InitialRebalanceDelay, g.join.remaining)
		g.join = joinDelay{
			deadline:  t.now.Add(step),
			initial:   true,
			step:      step,
			remaining: max(g.join.remaining-g.join.step, 0),
		}
		t.setTimer(TimerKey{Kind: TimerJoin}, g.join.deadline)
		return
	}
	t.completeJoin()
}

// expireSync removes the members that did not send SyncGroup within the
// rebalance timeout after the join phase, and rebalances without them.
func (t *tx) expireSync() {
	g := t.g
	if g.syncDeadline.IsZero() || t.now.Before(g.syncDeadline) {
		return
	}
	g.syncDeadline = zeroTime
	if g.state != CompletingRebalance && g.state != Stable {
		return
	}
	if len(g.pendingSync) == 0 {
		return
	}
	for _, id := range append([]string(nil), g.order...) {
		if g.pendingSync[id] {
			g.remove(id)
			t.cancelTimer(TimerKey{Kind: TimerHeartbeat, Member: id})
		}
	}
	t.prepareRebalance()
}

// loaded starts the sessions of a group just loaded from the log.
func (t *tx) loaded() {
	for _, id := range t.g.order {
		t.heartbeatFrom(id)
	}
}
