package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/quorum"
)

// sender is Controller.Handle or Channel.Send.
type sender func(ctx context.Context, req kmsg.Request) (kmsg.Response, error)

func send[R kmsg.Response](t *testing.T, s sender, req kmsg.Request) R {
	t.Helper()
	resp, err := s(testCtx(t), req)
	if err != nil {
		t.Fatalf("%T: %v", req, err)
	}
	r, ok := resp.(R)
	if !ok {
		t.Fatalf("response %T", resp)
	}
	return r
}

// registerBroker registers broker id and heartbeats until it is unfenced;
// it returns the broker epoch.
func registerBroker(t *testing.T, s sender, q *quorum.Quorum, id int32) int64 {
	t.Helper()
	reg := send[*kmsg.BrokerRegistrationResponse](t, s, regReq(id, byte(id)))
	if reg.ErrorCode != 0 || reg.BrokerEpoch <= 0 {
		t.Fatalf("register broker %d: code %d epoch %d", id, reg.ErrorCode, reg.BrokerEpoch)
	}
	waitFor(t, 10*time.Second, "broker unfenced", func() bool {
		hb := send[*kmsg.BrokerHeartbeatResponse](t, s, hbReq(id, reg.BrokerEpoch, int64(q.AppliedOffset()), false, false))
		if hb.ErrorCode != 0 {
			t.Fatalf("heartbeat of broker %d: code %d", id, hb.ErrorCode)
		}
		return !hb.IsFenced
	})
	return reg.BrokerEpoch
}

func TestControllerSingleNode(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	nd := c.start(1)
	ctl := c.active().ctl.Load()
	h := sender(ctl.Handle)

	epoch := registerBroker(t, h, nd.q, 1)
	if b, _ := nd.q.Image().Broker(1); b.Fenced || b.Epoch != epoch {
		t.Fatalf("broker in the image: %+v, epoch %d", b, epoch)
	}
	// The epoch is the registration record's offset when nothing else
	// intervenes.
	if epoch > int64(nd.q.Image().Offset()) {
		t.Fatalf("epoch %d is beyond the log (offset %d)", epoch, nd.q.Image().Offset())
	}

	// Validate-only creates nothing.
	vreq := createReq(7, newTopic("orders", 3, 1))
	vreq.ValidateOnly = true
	if r := send[*kmsg.CreateTopicsResponse](t, h, vreq); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("validate-only: %d", r.Topics[0].ErrorCode)
	}
	if _, ok := nd.q.Image().Topic("orders"); ok {
		t.Fatal("validate-only created the topic")
	}

	cr := send[*kmsg.CreateTopicsResponse](t, h, createReq(7, newTopic("orders", 3, -1, "retention.ms", "60000")))
	wantCode(t, "create", cr.Topics[0].ErrorCode, cr.Topics[0].ErrorMessage, nil, "")
	tp, ok := nd.q.Image().Topic("orders")
	if !ok || tp.ID != metadata.Uuid(cr.Topics[0].TopicID) || len(tp.Partitions) != 3 {
		t.Fatalf("topic in the image: %+v, response id %x", tp, cr.Topics[0].TopicID)
	}
	for _, p := range tp.PartitionIDs() {
		if st := tp.Partitions[p]; st.Leader != 1 || st.LeaderEpoch != 0 || !slices.Equal(st.Replicas, []int32{1}) {
			t.Fatalf("partition %d: %+v", p, st)
		}
	}
	cr = send[*kmsg.CreateTopicsResponse](t, h, createReq(7, newTopic("orders", 3, -1)))
	wantCode(t, "again", cr.Topics[0].ErrorCode, nil, kerr.TopicAlreadyExists, "")

	// Configs.
	ir := send[*kmsg.IncrementalAlterConfigsResponse](t, h, incrReq(incr(topicT, "orders", op(set, "retention.ms", ptr("120000")))))
	wantCode(t, "alter", ir.Resources[0].ErrorCode, ir.Resources[0].ErrorMessage, nil, "")
	if v, _ := nd.q.Image().Config(topicRes("orders"), "retention.ms"); v != "120000" {
		t.Fatalf("retention.ms %q", v)
	}
	vi := incrReq(incr(topicT, "orders", op(set, "retention.ms", ptr("1"))))
	vi.ValidateOnly = true
	send[*kmsg.IncrementalAlterConfigsResponse](t, h, vi)
	if v, _ := nd.q.Image().Config(topicRes("orders"), "retention.ms"); v != "120000" {
		t.Fatalf("validate-only alter changed retention.ms to %q", v)
	}

	// Partitions.
	pr := send[*kmsg.CreatePartitionsResponse](t, h, partitionsReq(morePartitions("orders", 5)))
	wantCode(t, "partitions", pr.Topics[0].ErrorCode, pr.Topics[0].ErrorMessage, nil, "")
	if tp, _ := nd.q.Image().Topic("orders"); len(tp.Partitions) != 5 {
		t.Fatalf("%d partitions after CreatePartitions", len(tp.Partitions))
	}

	// Producer ids.
	var last int64 = -1
	for i := 0; i < 3; i++ {
		ar := send[*kmsg.AllocateProducerIDsResponse](t, h, allocReq(1, epoch))
		if ar.ErrorCode != 0 || ar.ProducerIDStart <= last || ar.ProducerIDLen != ProducerIDBlockSize {
			t.Fatalf("allocate: %+v after block starting %d", ar, last)
		}
		last = ar.ProducerIDStart + int64(ar.ProducerIDLen) - 1
	}

	// Internal topics: the node's own path, idempotent.
	id, err := ctl.CreateInternalTopic(testCtx(t), OffsetsTopic, 0, map[string]string{"cleanup.policy": "compact"})
	wantErr(t, "internal", err, nil)
	it, ok := nd.q.Image().Topic(OffsetsTopic)
	if !ok || it.ID != id || len(it.Partitions) != 50 || len(it.Partitions[0].Replicas) != 1 {
		t.Fatalf("internal topic %+v", it)
	}
	id2, err := ctl.CreateInternalTopic(testCtx(t), OffsetsTopic, 0, nil)
	if err != nil || id2 != id {
		t.Fatalf("second internal creation: %v %v", id2, err)
	}
	if _, err := ctl.CreateInternalTopic(testCtx(t), "orders", 1, nil); err == nil {
		t.Fatal("CreateInternalTopic accepted a non-internal topic")
	}
	// Through a Channel on the active node (the local path).
	ch := NewChannel(nd.q, ctl, "local", c.log)
	defer ch.Close()
	if _, err := ch.CreateInternalTopic(testCtx(t), MirrorStateTopic, 3, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatalf("internal topic through the local channel: %v", err)
	}
	if mt, ok := nd.q.Image().Topic(MirrorStateTopic); !ok || len(mt.Partitions) != 3 {
		t.Fatalf("mirror state topic %+v", mt)
	}
	tagged := internalTopicRequest(TransactionStateTopic, 1, nil)
	tagged.UnknownTags.Set(internalTopicTag, []byte{1})
	tr := send[*kmsg.CreateTopicsResponse](t, ch.Send, tagged)
	wantCode(t, "tag through Send", tr.Topics[0].ErrorCode, tr.Topics[0].ErrorMessage, kerr.InvalidRequest, "internal topic")

	// Mirror names.
	wantErr(t, "mirror name", ctl.SetMirrorNames(testCtx(t), map[string]string{"orders": "m"}), nil)
	if got := nd.q.Image().MirrorTopics("m"); !slices.Equal(got, []string{"orders"}) {
		t.Fatalf("mirror topics %v", got)
	}

	// A mirrored topic cannot be deleted; once failed over it can.
	dreq := kmsg.NewPtrDeleteTopicsRequest()
	dreq.Version = 6
	dreq.Topics = []kmsg.DeleteTopicsRequestTopic{deleteEntry(nil, tp.ID)}
	dr := send[*kmsg.DeleteTopicsResponse](t, h, dreq)
	wantCode(t, "delete mirrored", dr.Topics[0].ErrorCode, dr.Topics[0].ErrorMessage, kerr.PolicyViolation, "remove-topics m orders")
	wantErr(t, "mirror name", ctl.SetMirrorNames(testCtx(t), map[string]string{"orders": "m.stopped"}), nil)
	dr = send[*kmsg.DeleteTopicsResponse](t, h, dreq)
	wantCode(t, "delete", dr.Topics[0].ErrorCode, dr.Topics[0].ErrorMessage, nil, "")
	if _, ok := nd.q.Image().Topic("orders"); ok {
		t.Fatal("topic survived deletion")
	}
}

func TestControllerInactiveAnswersNotController(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	nd := c.start(1)
	c.active()
	ctl := nd.ctl.Load()
	ctl.Close()
	if ctl.IsActive() {
		t.Fatal("closed controller is active")
	}
	cr := send[*kmsg.CreateTopicsResponse](t, ctl.Handle, createReq(7, newTopic("a", 1, 1), newTopic("b", 1, 1)))
	for _, r := range cr.Topics {
		wantCode(t, r.Topic, r.ErrorCode, nil, kerr.NotController, "")
	}
	hb := send[*kmsg.BrokerHeartbeatResponse](t, ctl.Handle, hbReq(1, 1, 0, false, false))
	wantCode(t, "heartbeat", hb.ErrorCode, nil, kerr.NotController, "")
	if _, err := ctl.CreateInternalTopic(testCtx(t), OffsetsTopic, 0, nil); !isCode(err, kerr.NotController) {
		t.Fatalf("internal topic on an inactive controller: %v", err)
	}
	if _, err := ctl.Handle(testCtx(t), kmsg.NewPtrMetadataRequest()); err == nil {
		t.Fatal("an API the controller does not serve was answered")
	}
	bad := createReq(8, newTopic("a", 1, 1))
	if _, err := ctl.Handle(testCtx(t), bad); err == nil {
		t.Fatal("an unsupported version was answered")
	}
}

func isCode(err error, want *kerr.Error) bool {
	return err != nil && kerr.ErrorForCode(codeOf(err)) == want
}

func TestControllerFencesBrokerOnSessionTimeout(t *testing.T) {
	c := newTestCluster(t, 1, map[string]string{"broker.session.timeout.ms": "2000"})
	nd := c.start(1)
	ctl := c.active().ctl.Load()
	h := sender(ctl.Handle)
	e1 := registerBroker(t, h, nd.q, 1)
	e2 := registerBroker(t, h, nd.q, 2)

	cr := send[*kmsg.CreateTopicsResponse](t, h, createReq(7, manualTopic("t", assignment(0, 1, 2), assignment(1, 2, 1))))
	wantCode(t, "create", cr.Topics[0].ErrorCode, cr.Topics[0].ErrorMessage, nil, "")

	// Broker 2 keeps heartbeating; broker 1 goes silent.
	c.clock.Advance(1500 * time.Millisecond)
	send[*kmsg.BrokerHeartbeatResponse](t, h, hbReq(2, e2, int64(nd.q.AppliedOffset()), false, false))
	c.clock.Advance(1000 * time.Millisecond)
	waitFor(t, 10*time.Second, "broker 1 fenced", func() bool {
		b, _ := nd.q.Image().Broker(1)
		return b.Fenced
	})
	if b, _ := nd.q.Image().Broker(2); b.Fenced {
		t.Fatal("broker 2 fenced despite its heartbeat")
	}
	tp, _ := nd.q.Image().Topic("t")
	p0, p1 := tp.Partitions[0], tp.Partitions[1]
	if p0.Leader != 2 || p0.LeaderEpoch != 1 || !slices.Equal(p0.ISR, []int32{2}) {
		t.Fatalf("p0 after fencing its leader: %+v", p0)
	}
	if p1.Leader != 2 || p1.LeaderEpoch != 0 || !slices.Equal(p1.ISR, []int32{2}) {
		t.Fatalf("p1 after fencing its follower: %+v", p1)
	}

	// Broker 1 comes back caught up and is unfenced; it is out of every
	// ISR, so it leads nothing until it rejoins one.
	hb := send[*kmsg.BrokerHeartbeatResponse](t, h, hbReq(1, e1, int64(nd.q.AppliedOffset()), false, false))
	if hb.IsFenced {
		t.Fatal("caught-up broker not unfenced")
	}
	if b, _ := nd.q.Image().Broker(1); b.Fenced {
		t.Fatal("broker 1 still fenced in the image")
	}
}

func TestControllerControlledShutdown(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	nd := c.start(1)
	h := sender(c.active().ctl.Load().Handle)
	e1 := registerBroker(t, h, nd.q, 1)
	e2 := registerBroker(t, h, nd.q, 2)
	cr := send[*kmsg.CreateTopicsResponse](t, h, createReq(7, manualTopic("t", assignment(0, 1, 2))))
	wantCode(t, "create", cr.Topics[0].ErrorCode, cr.Topics[0].ErrorMessage, nil, "")

	hb := send[*kmsg.BrokerHeartbeatResponse](t, h, hbReq(1, e1, int64(nd.q.AppliedOffset()), false, true))
	if hb.ShouldShutdown {
		t.Fatal("leader allowed to stop before its leadership moved")
	}
	tp, _ := nd.q.Image().Topic("t")
	if st := tp.Partitions[0]; st.Leader != 2 || st.LeaderEpoch != 1 {
		t.Fatalf("leadership not moved away: %+v", st)
	}
	// Broker 2 has not reported the new offset yet: not yet.
	hb = send[*kmsg.BrokerHeartbeatResponse](t, h, hbReq(1, e1, int64(nd.q.AppliedOffset()), false, true))
	if hb.ShouldShutdown {
		t.Fatal("shutdown granted before the other broker saw it")
	}
	send[*kmsg.BrokerHeartbeatResponse](t, h, hbReq(2, e2, int64(nd.q.AppliedOffset()), false, false))
	hb = send[*kmsg.BrokerHeartbeatResponse](t, h, hbReq(1, e1, int64(nd.q.AppliedOffset()), false, true))
	if !hb.ShouldShutdown || !hb.IsFenced {
		t.Fatalf("shutdown not granted: %+v", hb)
	}
	if b, _ := nd.q.Image().Broker(1); !b.Fenced {
		t.Fatal("stopped broker not fenced")
	}
}

func TestControllerDuplicateRegistration(t *testing.T) {
	c := newTestCluster(t, 1, map[string]string{"broker.session.timeout.ms": "2000"})
	nd := c.start(1)
	h := sender(c.active().ctl.Load().Handle)
	e1 := registerBroker(t, h, nd.q, 1)
	r := send[*kmsg.BrokerRegistrationResponse](t, h, regReq(1, 77))
	wantCode(t, "duplicate", r.ErrorCode, nil, kerr.DuplicateBrokerRegistration, "")
	// Once the old session expired (and the broker was fenced), the new
	// incarnation registers with a higher epoch and starts fenced.
	c.clock.Advance(2500 * time.Millisecond)
	waitFor(t, 10*time.Second, "old incarnation fenced", func() bool {
		b, _ := nd.q.Image().Broker(1)
		return b.Fenced
	})
	r = send[*kmsg.BrokerRegistrationResponse](t, h, regReq(1, 77))
	if r.ErrorCode != 0 || r.BrokerEpoch <= e1 {
		t.Fatalf("re-registration: code %d epoch %d (old %d)", r.ErrorCode, r.BrokerEpoch, e1)
	}
	if b, _ := nd.q.Image().Broker(1); !b.Fenced || b.Epoch != r.BrokerEpoch {
		t.Fatalf("new incarnation %+v", b)
	}
}
