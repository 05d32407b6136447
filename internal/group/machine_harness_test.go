package group

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// runner drives a Group the way the coordinator's driver does: it installs
// each transition, keeps the timers it sets and fires them when the test
// moves the clock, and records replies by request id. Every transition is
// checked for purity (the old group is unchanged) and for the Group
// invariants.
type runner struct {
	t        *testing.T
	cfg      MachineConfig
	g        *Group
	start    time.Time
	now      time.Time
	timers   map[TimerKey]time.Time
	replies  map[RequestID]Reply
	stores   int
	failNext *kerr.Error // the next store fails cleanly with this error
	last     Transition
}

func newRunner(t *testing.T, cfg MachineConfig) *runner {
	t.Helper()
	start := time.Unix(1_700_000_000, 0)
	return &runner{
		t: t, cfg: cfg, g: NewGroup("g", start), start: start, now: start,
		timers: map[TimerKey]time.Time{}, replies: map[RequestID]Reply{},
	}
}

func defaultMachineConfig() MachineConfig {
	return MachineConfig{InitialRebalanceDelay: 3 * time.Second, NewMemberJoinTimeout: DefaultNewMemberJoinTimeout}
}

// fingerprint renders everything in g, to check that Handle does not modify
// its receiver.
func fingerprint(g *Group) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %v %v %q %q %d %q %v %v %v %v %v %v %v\n", g.id, g.state, g.stateTime, g.protocolType, g.protocol,
		g.generation, g.leader, g.order, g.static, g.pending, g.subscribed, g.join, g.newMemberAdded, g.syncDeadline)
	keys := make([]string, 0, len(g.pendingSync))
	for k := range g.pendingSync {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(&b, "%v\n", keys)
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(&b, "%+v\n", *g.members[id])
	}
	return b.String()
}

func checkInvariants(t *testing.T, g *Group) {
	t.Helper()
	if len(g.order) != len(g.members) {
		t.Fatalf("order %v and members %d differ", g.order, len(g.members))
	}
	for _, id := range g.order {
		if _, ok := g.members[id]; !ok {
			t.Fatalf("order has %q, members do not", id)
		}
	}
	if (g.leader == "") != (len(g.members) == 0) {
		t.Fatalf("leader %q with %d members", g.leader, len(g.members))
	}
	if g.leader != "" && !g.has(g.leader) {
		t.Fatalf("leader %q is not a member", g.leader)
	}
	for inst, id := range g.static {
		if m, ok := g.members[id]; !ok || m.InstanceID != inst {
			t.Fatalf("static %q → %q is not that member", inst, id)
		}
	}
	if (g.state == Empty || g.state == Dead) && len(g.members) > 0 {
		t.Fatalf("%v group with members", g.state)
	}
}

// apply handles ev at the current time and installs the outcome.
func (r *runner) apply(ev Event) Transition {
	r.t.Helper()
	before := fingerprint(r.g)
	tr := r.g.Handle(r.now, &r.cfg, ev)
	if after := fingerprint(r.g); after != before {
		r.t.Fatalf("Handle modified its receiver:\nbefore %s\nafter %s", before, after)
	}
	if tr.Store {
		r.stores++
		if r.failNext != nil {
			err := r.failNext
			r.failNext = nil
			if tr.OnStoreError == nil {
				r.t.Fatalf("a store without OnStoreError")
			}
			tr = tr.OnStoreError(err)
			if tr.Store {
				r.t.Fatalf("OnStoreError asks for another store")
			}
		}
	}
	r.install(tr)
	return tr
}

func (r *runner) install(tr Transition) {
	r.t.Helper()
	checkInvariants(r.t, tr.Group)
	r.g = tr.Group
	r.last = tr
	for _, rep := range tr.Replies {
		if _, dup := r.replies[rep.Request]; dup {
			r.t.Fatalf("request %d answered twice", rep.Request)
		}
		r.replies[rep.Request] = rep
	}
	for _, tc := range tr.Timers {
		if tc.At.IsZero() {
			delete(r.timers, tc.Key)
		} else {
			r.timers[tc.Key] = tc.At
		}
	}
}

// advance moves the clock by d, firing due timers in deadline order.
func (r *runner) advance(d time.Duration) {
	r.t.Helper()
	end := r.now.Add(d)
	for {
		var next TimerKey
		var at time.Time
		found := false
		for k, a := range r.timers {
			if !a.After(end) && (!found || a.Before(at) || (a.Equal(at) && timerLess(k, next))) {
				next, at, found = k, a, true
			}
		}
		if !found {
			break
		}
		delete(r.timers, next)
		if at.After(r.now) {
			r.now = at
		}
		r.apply(TimeoutEvent{Timer: next})
	}
	r.now = end
}

func timerLess(a, b TimerKey) bool {
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	return a.Member < b.Member
}

func (r *runner) reply(req RequestID) Reply {
	r.t.Helper()
	rep, ok := r.replies[req]
	if !ok {
		r.t.Fatalf("request %d not answered", req)
	}
	return rep
}

func (r *runner) noReply(req RequestID) {
	r.t.Helper()
	if rep, ok := r.replies[req]; ok {
		r.t.Fatalf("request %d answered early: %+v", req, rep)
	}
}

// Steps of table tests.

type step func(r *runner)

var consumerProtocols = []Protocol{{Name: "range", Metadata: subscription("t1")}, {Name: "roundrobin", Metadata: subscription("t1")}}

// subscription encodes a version-0 consumer subscription of topics.
func subscription(topics ...string) []byte {
	b := []byte{0, 0, 0, 0, 0, byte(len(topics))}
	for _, t := range topics {
		b = append(b, 0, byte(len(t)))
		b = append(b, t...)
	}
	return append(b, 0xff, 0xff, 0xff, 0xff) // null user data
}

func joinEv(req RequestID, member string) JoinEvent {
	return JoinEvent{
		Request: req, MemberID: member, NewMemberID: fmt.Sprintf("m%d", req), ClientID: "c", ClientHost: "/127.0.0.1",
		ProtocolType: "consumer", Protocols: consumerProtocols,
		SessionTimeout: 10 * time.Second, RebalanceTimeout: 60 * time.Second,
	}
}

// join sends a JoinGroup; a new member gets id "m<req>".
func join(req RequestID, member string, mod ...func(*JoinEvent)) step {
	return func(r *runner) {
		e := joinEv(req, member)
		for _, f := range mod {
			f(&e)
		}
		r.apply(e)
	}
}

func static(inst string) func(*JoinEvent) { return func(e *JoinEvent) { e.InstanceID = inst } }
func requireKnown(e *JoinEvent)           { e.RequireKnownMemberID = true }
func skipAssignment(e *JoinEvent)         { e.SupportsSkipAssignment = true }
func protocols(ps ...Protocol) func(*JoinEvent) {
	return func(e *JoinEvent) { e.Protocols = ps }
}
func rebalanceTimeout(d time.Duration) func(*JoinEvent) {
	return func(e *JoinEvent) { e.RebalanceTimeout = d }
}

func syncReq(req RequestID, member string, gen int32, assign map[string][]byte) step {
	return func(r *runner) {
		r.apply(SyncEvent{Request: req, MemberID: member, Generation: gen, Assignments: assign})
	}
}

func syncInst(req RequestID, member, inst string, gen int32) step {
	return func(r *runner) {
		r.apply(SyncEvent{Request: req, MemberID: member, InstanceID: inst, Generation: gen})
	}
}

func heartbeat(req RequestID, member string, gen int32) step {
	return func(r *runner) { r.apply(HeartbeatEvent{Request: req, MemberID: member, Generation: gen}) }
}

func heartbeatInst(req RequestID, member, inst string, gen int32) step {
	return func(r *runner) {
		r.apply(HeartbeatEvent{Request: req, MemberID: member, InstanceID: inst, Generation: gen})
	}
}

func leave(req RequestID, members ...LeavingMember) step {
	return func(r *runner) { r.apply(LeaveEvent{Request: req, Members: members}) }
}

func commit(req RequestID, member, inst string, gen int32, txn bool) step {
	return func(r *runner) {
		r.apply(CommitEvent{Request: req, MemberID: member, InstanceID: inst, Generation: gen, Transactional: txn})
	}
}

func advance(d time.Duration) step { return func(r *runner) { r.advance(d) } }

func failNextStore(err *kerr.Error) step { return func(r *runner) { r.failNext = err } }

func wantErr(req RequestID, want *kerr.Error) step {
	return func(r *runner) {
		r.t.Helper()
		if got := r.reply(req).Err; got != want {
			r.t.Fatalf("request %d: error %v, want %v", req, got, want)
		}
	}
}

func wantPending(req RequestID) step { return func(r *runner) { r.t.Helper(); r.noReply(req) } }

// wantJoin checks a JoinGroup answer: success with member id, generation,
// leader, and the member list the leader gets (nil for followers).
func wantJoin(req RequestID, member string, gen int32, leader string, members ...string) step {
	return func(r *runner) {
		r.t.Helper()
		rep := r.reply(req)
		if rep.Err != nil || rep.Join == nil {
			r.t.Fatalf("join %d: %+v, want success", req, rep)
		}
		j := rep.Join
		var got []string
		for _, m := range j.Members {
			got = append(got, m.ID)
		}
		if j.MemberID != member || j.Generation != gen || j.Leader != leader || !slices.Equal(got, members) {
			r.t.Fatalf("join %d: member %q gen %d leader %q members %v; want %q %d %q %v",
				req, j.MemberID, j.Generation, j.Leader, got, member, gen, leader, members)
		}
	}
}

func wantJoinError(req RequestID, member string, err *kerr.Error) step {
	return func(r *runner) {
		r.t.Helper()
		rep := r.reply(req)
		if rep.Err != err || rep.Join == nil || rep.Join.MemberID != member {
			r.t.Fatalf("join %d: %+v (%+v), want %v for member %q", req, rep, rep.Join, err, member)
		}
	}
}

func wantSync(req RequestID, assignment string) step {
	return func(r *runner) {
		r.t.Helper()
		rep := r.reply(req)
		if rep.Err != nil || rep.Sync == nil || string(rep.Sync.Assignment) != assignment {
			r.t.Fatalf("sync %d: %+v, want assignment %q", req, rep, assignment)
		}
	}
}

func wantLeave(req RequestID, errs ...*kerr.Error) step {
	return func(r *runner) {
		r.t.Helper()
		rep := r.reply(req)
		if rep.Err != nil || len(rep.Leave) != len(errs) {
			r.t.Fatalf("leave %d: %+v, want %d member results", req, rep, len(errs))
		}
		for i, e := range errs {
			if rep.Leave[i].Err != e {
				r.t.Fatalf("leave %d member %d: %v, want %v", req, i, rep.Leave[i].Err, e)
			}
		}
	}
}

func wantState(s State, gen int32) step {
	return func(r *runner) {
		r.t.Helper()
		if r.g.state != s || r.g.generation != gen {
			r.t.Fatalf("state %v generation %d, want %v %d", r.g.state, r.g.generation, s, gen)
		}
	}
}

func wantMembers(ids ...string) step {
	return func(r *runner) {
		r.t.Helper()
		if !slices.Equal(r.g.order, ids) {
			r.t.Fatalf("members %v, want %v", r.g.order, ids)
		}
	}
}

func wantLeader(id string) step {
	return func(r *runner) {
		r.t.Helper()
		if r.g.leader != id {
			r.t.Fatalf("leader %q, want %q", r.g.leader, id)
		}
	}
}

func wantStores(n int) step {
	return func(r *runner) {
		r.t.Helper()
		if r.stores != n {
			r.t.Fatalf("%d stores, want %d", r.stores, n)
		}
	}
}

func wantProtocol(p string) step {
	return func(r *runner) {
		r.t.Helper()
		if r.g.protocol != p {
			r.t.Fatalf("protocol %q, want %q", r.g.protocol, p)
		}
	}
}

// stable builds a Stable group of the given new members (ids m<req>) with
// assignments "a-<id>": they join during the initial delay, the leader
// syncs. Requests use ids from base on.
func stable(base RequestID, n int) []step {
	var steps []step
	var ids []string
	for i := 0; i < n; i++ {
		steps = append(steps, join(base+RequestID(i), ""))
		ids = append(ids, fmt.Sprintf("m%d", base+RequestID(i)))
	}
	// With several members joining at once, the initial delay runs twice.
	steps = append(steps, advance(3*time.Second))
	if n > 1 {
		steps = append(steps, advance(3*time.Second))
	}
	assign := map[string][]byte{}
	for _, id := range ids {
		assign[id] = []byte("a-" + id)
	}
	for i, id := range ids[1:] {
		steps = append(steps, syncReq(base+100+RequestID(i), id, 1, nil))
	}
	steps = append(steps, syncReq(base+99, ids[0], 1, assign), wantState(Stable, 1))
	return steps
}

func run(t *testing.T, cfg MachineConfig, steps ...[]step) *runner {
	t.Helper()
	r := newRunner(t, cfg)
	for _, group := range steps {
		for _, s := range group {
			s(r)
		}
	}
	return r
}

func seq(s ...step) []step { return s }
