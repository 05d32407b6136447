package controller

import (
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/quorum"
	"github.com/kmirror/kmirror/internal/wire"
)

// TestChannelFollowsActiveControllerAcrossNodes runs three controller
// nodes. Channels on the followers (one with its own inactive controller,
// one without) reach the active controller over TCP; when the active
// controller's node stops, they follow the new one, and producer-id blocks
// handed out before and after the failover never overlap.
func TestChannelFollowsActiveControllerAcrossNodes(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	for id := int32(1); id <= 3; id++ {
		c.start(id)
	}
	leader := c.active()
	var followers []*node
	for id := int32(1); id <= 3; id++ {
		if id != leader.id {
			followers = append(followers, c.nodes[id])
		}
	}
	withLocal := NewChannel(followers[0].q, followers[0].ctl.Load(), "test-1", c.log)
	defer withLocal.Close()
	remoteOnly := NewChannel(followers[1].q, nil, "test-2", c.log)
	defer remoteOnly.Close()

	// Brokers 1..3 register through the channels (their controllers are
	// elsewhere).
	epochs := map[int32]int64{}
	for _, id := range []int32{followers[0].id, followers[1].id} {
		ch := withLocal
		if id == followers[1].id {
			ch = remoteOnly
		}
		epochs[id] = registerBroker(t, ch.Send, c.nodes[id].q, id)
	}
	epochs[leader.id] = registerBroker(t, leader.ctl.Load().Handle, leader.q, leader.id)
	if leader.kafkaConns.Load() == 0 {
		t.Fatal("no Kafka connection reached the active controller's node")
	}

	cr := send[*kmsg.CreateTopicsResponse](t, remoteOnly.Send, createReq(7, newTopic("replicated", 6, 3)))
	wantCode(t, "create", cr.Topics[0].ErrorCode, cr.Topics[0].ErrorMessage, nil, "")

	var blocks [][2]int64
	alloc := func(ch *Channel, id int32) {
		ar := send[*kmsg.AllocateProducerIDsResponse](t, ch.Send, allocReq(id, epochs[id]))
		if ar.ErrorCode != 0 {
			t.Fatalf("allocate for broker %d: code %d", id, ar.ErrorCode)
		}
		blocks = append(blocks, [2]int64{ar.ProducerIDStart, ar.ProducerIDStart + int64(ar.ProducerIDLen)})
	}
	alloc(withLocal, followers[0].id)
	alloc(remoteOnly, followers[1].id)

	// The active controller's node goes away.
	c.stop(leader.id)
	next := c.active()
	if next.id == leader.id {
		t.Fatal("stopped node still active")
	}
	for _, ch := range []*Channel{withLocal, remoteOnly} {
		id := followers[0].id
		if ch == remoteOnly {
			id = followers[1].id
		}
		alloc(ch, id)
	}
	cr = send[*kmsg.CreateTopicsResponse](t, remoteOnly.Send, createReq(7, newTopic("after-failover", 1, 2)))
	wantCode(t, "create after failover", cr.Topics[0].ErrorCode, cr.Topics[0].ErrorMessage, nil, "")
	for _, nd := range followers {
		waitFor(t, 10*time.Second, "topic replicated to every node", func() bool {
			_, ok := nd.q.Image().Topic("after-failover")
			return ok
		})
	}

	slices.SortFunc(blocks, func(a, b [2]int64) int { return int(a[0] - b[0]) })
	for i := 1; i < len(blocks); i++ {
		if blocks[i][0] < blocks[i-1][1] {
			t.Fatalf("producer id blocks overlap: %v", blocks)
		}
	}
	if len(blocks) != 4 {
		t.Fatalf("%d blocks", len(blocks))
	}

	// The stopped node's broker stops heartbeating: the new active
	// controller gave every session a fresh start, and fences it once the
	// session timeout passes without a heartbeat.
	c.clock.Advance(5 * time.Second)
	for _, nd := range followers {
		send[*kmsg.BrokerHeartbeatResponse](t, remoteOnly.Send, hbReq(nd.id, epochs[nd.id], int64(nd.q.AppliedOffset()), false, false))
	}
	c.clock.Advance(5 * time.Second)
	waitFor(t, 10*time.Second, "the stopped node's broker fenced", func() bool {
		b, _ := next.q.Image().Broker(leader.id)
		return b.Fenced
	})
	tp, _ := next.q.Image().Topic("replicated")
	for _, p := range tp.PartitionIDs() {
		if st := tp.Partitions[p]; st.Leader == leader.id || slices.Contains(st.ISR, leader.id) {
			t.Fatalf("partition %d still counts on the fenced broker: %+v", p, st)
		}
	}
}

// TestChannelLeavesHungLeader pauses the active controller's node the way
// SIGSTOP does: its sockets stay open and take requests that are never
// answered. A request already in flight to it must not wait out its
// deadline once the quorum has elected another leader: the Channel cuts it
// short and the new active controller answers it.
func TestChannelLeavesHungLeader(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	for id := int32(1); id <= 3; id++ {
		c.start(id)
	}
	leader := c.active()
	var follower *node
	for _, nd := range c.nodes {
		if nd != leader {
			follower = nd
			break
		}
	}
	ch := NewChannel(follower.q, nil, "broker", c.log)
	defer ch.Close()
	registerBroker(t, ch.Send, follower.q, follower.id)
	cr := send[*kmsg.CreateTopicsResponse](t, ch.Send, createReq(7, newTopic("before", 1, 1)))
	wantCode(t, "create before the pause", cr.Topics[0].ErrorCode, cr.Topics[0].ErrorMessage, nil, "")

	leader.hung.Store(true)
	type result struct {
		resp kmsg.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := ch.Send(testCtx(t), createReq(7, newTopic("during", 1, 1)))
		done <- result{resp, err}
	}()
	waitFor(t, 10*time.Second, "the request taken by the hung leader", func() bool { return leader.hungRequests.Load() > 0 })
	c.stop(leader.id) // its quorum member and controller stop; the listener hangs on
	next := c.active()
	r := <-done
	if r.err != nil {
		t.Fatalf("request in flight to the hung leader: %v (new leader %d)", r.err, next.id)
	}
	cr = r.resp.(*kmsg.CreateTopicsResponse)
	wantCode(t, "create during the pause", cr.Topics[0].ErrorCode, cr.Topics[0].ErrorMessage, nil, "")
	if _, ok := next.q.Image().Topic("during"); !ok {
		waitFor(t, 10*time.Second, "the topic on the new leader", func() bool {
			_, ok := next.q.Image().Topic("during")
			return ok
		})
	}
}

// TestInternalTopicTag checks the node-only path for internal topics: a
// broker's Channel.CreateInternalTopic creates one through a remote
// controller, while a client's CreateTopics with the same tag, forwarded
// through Channel.Send or sent to a non-controller listener, is refused.
func TestInternalTopicTag(t *testing.T) {
	c := newTestCluster(t, 3, map[string]string{"transaction.state.log.replication.factor": "3"})
	for id := int32(1); id <= 3; id++ {
		c.start(id)
	}
	leader := c.active()
	var follower *node
	for _, nd := range c.nodes {
		if nd != leader {
			follower = nd
			break
		}
	}
	ch := NewChannel(follower.q, follower.ctl.Load(), "broker", c.log)
	defer ch.Close()
	for id := int32(1); id <= 2; id++ {
		registerBroker(t, ch.Send, c.nodes[id].q, id)
	}

	id, err := ch.CreateInternalTopic(testCtx(t), TransactionStateTopic, 4, map[string]string{"cleanup.policy": "compact"})
	wantErr(t, "internal via channel", err, nil)
	tp, ok := leader.q.Image().Topic(TransactionStateTopic)
	if !ok || tp.ID != id || len(tp.Partitions) != 4 || len(tp.Partitions[0].Replicas) != 2 {
		t.Fatalf("internal topic %+v: want 4 partitions, rf min(3, 2 brokers)", tp)
	}
	again, err := ch.CreateInternalTopic(testCtx(t), TransactionStateTopic, 4, nil)
	if err != nil || again != id {
		t.Fatalf("idempotent internal creation: %v %v", again, err)
	}

	tagged := func() *kmsg.CreateTopicsRequest {
		r := internalTopicRequest(OffsetsTopic, 1, nil)
		r.UnknownTags.Set(internalTopicTag, []byte{1})
		return r
	}
	cr := send[*kmsg.CreateTopicsResponse](t, ch.Send, tagged())
	wantCode(t, "client's tagged request", cr.Topics[0].ErrorCode, cr.Topics[0].ErrorMessage, kerr.InvalidRequest, "internal topic")

	resp, err := leader.ctl.Load().handleWire(testCtx(t), &wire.RequestContext{Listener: "PLAINTEXT"}, tagged())
	if err != nil {
		t.Fatal(err)
	}
	r := resp.(*kmsg.CreateTopicsResponse)
	wantCode(t, "tagged on a broker listener", r.Topics[0].ErrorCode, r.Topics[0].ErrorMessage, kerr.InvalidRequest, "internal topic")
	if _, ok := leader.q.Image().Topic(OffsetsTopic); ok {
		t.Fatal("a client created an internal topic")
	}
}

// TestBrokerOnlyNodeJoinsThroughRegistration starts one controller and one
// broker-only node. The broker's quorum member knows no leader until it is
// added, so its Channel reaches the controller through the configured
// voter; registering adds it as a non-voter at its listener's address, the
// metadata log then reaches it, and it gets unfenced once caught up.
func TestBrokerOnlyNodeJoinsThroughRegistration(t *testing.T) {
	c := newMixedCluster(t, 1, 1, nil)
	ctlNode := c.start(1)
	c.active()
	brk := c.startMember(2)
	if _, _, ok := brk.q.Leader(); ok {
		t.Fatal("a node that was never added knows the leader")
	}
	ch := NewChannel(brk.q, nil, "broker-2", c.log, WithVoters(ctlNode.addr()))
	defer ch.Close()

	req := regReq(2, 2)
	host, port := splitHostPort(t, brk.addr())
	req.Listeners[0].Host, req.Listeners[0].Port = host, port
	reg := send[*kmsg.BrokerRegistrationResponse](t, ch.Send, req)
	if reg.ErrorCode != 0 {
		t.Fatalf("registration: code %d", reg.ErrorCode)
	}
	servers, err := ctlNode.q.Servers()
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(servers, func(s quorum.Server) bool { return s.ID == 2 }); i < 0 || servers[i].Voter || servers[i].Addr != brk.addr() {
		t.Fatalf("quorum servers %+v: want node 2 as a non-voter at %s", servers, brk.addr())
	}
	waitFor(t, 10*time.Second, "the broker's member to replicate its registration", func() bool {
		b, ok := brk.q.Image().Broker(2)
		return ok && b.Epoch == reg.BrokerEpoch
	})
	waitFor(t, 10*time.Second, "broker 2 unfenced", func() bool {
		hb := send[*kmsg.BrokerHeartbeatResponse](t, ch.Send, hbReq(2, reg.BrokerEpoch, int64(brk.q.AppliedOffset()), false, false))
		return hb.ErrorCode == 0 && !hb.IsFenced
	})
	if id, _, ok := brk.q.Leader(); !ok || id != 1 {
		t.Fatalf("broker's member does not know the leader: %d %v", id, ok)
	}
}

func splitHostPort(t *testing.T, addr string) (string, uint16) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return h, uint16(n)
}
