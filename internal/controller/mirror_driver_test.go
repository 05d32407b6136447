package controller

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// capturedLog is a goroutine-safe copy of every log line, next to t.Log.
type capturedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *capturedLog) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

func (c *capturedLog) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// captureLogs makes the cluster's nodes log at debug level to both the test
// log and the returned capture. Call it before starting nodes.
func captureLogs(t *testing.T, c *testCluster) *capturedLog {
	capt := &capturedLog{}
	w := &testLog{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	c.log = slog.New(slog.NewTextHandler(io.MultiWriter(w, capt), &slog.HandlerOptions{Level: slog.LevelDebug}))
	return capt
}

// kfakeSource starts a kfake cluster with topics and returns it with an
// admin client.
func kfakeSource(t *testing.T, partitions int32, topics ...string) (*kfake.Cluster, *kadm.Client) {
	t.Helper()
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return src, kadm.NewClient(cl)
}

func mirrorTopicsSend[R kmsg.Response](t *testing.T, s sender, req kmsg.Request) *wire.MirrorTopicsResponse {
	t.Helper()
	r := send[R](t, s, req)
	switch v := any(r).(type) {
	case *wire.AddTopicsToMirrorResponse:
		return (*wire.MirrorTopicsResponse)(v)
	case *wire.RemoveTopicsFromMirrorResponse:
		return (*wire.MirrorTopicsResponse)(v)
	case *wire.PauseMirrorTopicsResponse:
		return (*wire.MirrorTopicsResponse)(v)
	case *wire.ResumeMirrorTopicsResponse:
		return (*wire.MirrorTopicsResponse)(v)
	}
	t.Fatalf("response %T", r)
	return nil
}

// TestMirrorAdminDriverWithKfakeSource drives the mirror admin APIs through
// a Channel on a real quorum, with franz-go's kfake cluster as the source:
// creation (secrets never logged), topics created from the source with its
// id, partition count and configs, the membership transitions and their
// wrong-state errors, and deletion refused until every removed partition is
// STOPPED, after which the name is reusable.
func TestMirrorAdminDriverWithKfakeSource(t *testing.T) {
	const secret = "planted-s3cret-pw"
	src, srcAdm := kfakeSource(t, 3, "orders", "logs")
	ctx := testCtx(t)
	if _, err := srcAdm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1234567")}, {Name: "min.insync.replicas", Value: kmsg.StringPtr("2")}}, "orders"); err != nil {
		t.Fatal(err)
	}
	srcMeta, err := srcAdm.Metadata(ctx, "orders", "logs")
	if err != nil {
		t.Fatal(err)
	}

	c := newTestCluster(t, 1, nil)
	logs := captureLogs(t, c)
	nd := c.start(1)
	ctl := c.active().ctl.Load()
	registerBroker(t, ctl.Handle, nd.q, 1)
	ch := NewChannel(nd.q, ctl, "test", c.log)
	defer ch.Close()
	s := sender(ch.Send)

	create := createMirrorReq("east", "bootstrap.servers", strings.Join(src.ListenAddrs(), ","), "sasl.password", secret, "client.id", "east-mirror")
	if r := send[*wire.CreateMirrorResponse](t, s, create); r.ErrorCode != 0 {
		t.Fatalf("create: %d %s", r.ErrorCode, strp(r.ErrorMessage))
	}
	if r := send[*wire.CreateMirrorResponse](t, s, create); r.ErrorCode != kerr.DuplicateResource.Code {
		t.Fatalf("create again: code %d", r.ErrorCode)
	}
	img := nd.q.Image()
	if got := img.Configs(mirrorRes("east")); got["sasl.password"] != secret || got["client.id"] != "east-mirror" {
		t.Fatalf("stored mirror configs %v", got)
	}
	if _, ok := img.Topic(MirrorStateTopic); !ok {
		t.Fatal("__mirror_state not created with the first mirror")
	}

	// Validate-only changes nothing, but does ask the source.
	v := topicsReq("east", "orders")
	v.ValidateOnly = true
	if r := mirrorTopicsSend[*wire.AddTopicsToMirrorResponse](t, s, (*wire.AddTopicsToMirrorRequest)(v)); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("validate-only add: %+v", r.Topics[0])
	}
	if _, ok := nd.q.Image().Topic("orders"); ok {
		t.Fatal("validate-only add created the topic")
	}

	add := mirrorTopicsSend[*wire.AddTopicsToMirrorResponse](t, s, (*wire.AddTopicsToMirrorRequest)(topicsReq("east", "orders", "logs", "missing")))
	wantCode(t, "add orders", add.Topics[0].ErrorCode, add.Topics[0].ErrorMessage, nil, "")
	wantCode(t, "add logs", add.Topics[1].ErrorCode, add.Topics[1].ErrorMessage, nil, "")
	wantCode(t, "add missing", add.Topics[2].ErrorCode, add.Topics[2].ErrorMessage, kerr.UnknownTopicOrPartition, `topic "missing" does not exist on the source cluster of mirror "east"`)
	img = nd.q.Image()
	for _, name := range []string{"orders", "logs"} {
		ti, ok := img.Topic(name)
		want := srcMeta.Topics[name]
		if !ok || [16]byte(ti.ID) != want.ID || len(ti.Partitions) != len(want.Partitions) {
			t.Fatalf("%s on the destination: %+v, source id %x partitions %d", name, ti, want.ID, len(want.Partitions))
		}
		if mirrorNameOf(img, name) != "east" {
			t.Fatalf("%s mirror.name %q", name, mirrorNameOf(img, name))
		}
	}
	if got := img.Configs(topicRes("orders")); got["retention.ms"] != "1234567" || got["min.insync.replicas"] != "" {
		t.Fatalf("orders configs %v: want the source's retention.ms and no min.insync.replicas", got)
	}
	// Adding again: already in the mirror.
	again := mirrorTopicsSend[*wire.AddTopicsToMirrorResponse](t, s, (*wire.AddTopicsToMirrorRequest)(topicsReq("east", "orders")))
	wantCode(t, "add again", again.Topics[0].ErrorCode, again.Topics[0].ErrorMessage, kerr.InvalidRequest, `already in mirror "east"`)

	// Membership transitions.
	step := func(what string, req kmsg.Request, want *kerr.Error, msgPart, after string) {
		t.Helper()
		var r *wire.MirrorTopicsResponse
		switch req.(type) {
		case *wire.PauseMirrorTopicsRequest:
			r = mirrorTopicsSend[*wire.PauseMirrorTopicsResponse](t, s, req)
		case *wire.ResumeMirrorTopicsRequest:
			r = mirrorTopicsSend[*wire.ResumeMirrorTopicsResponse](t, s, req)
		case *wire.RemoveTopicsFromMirrorRequest:
			r = mirrorTopicsSend[*wire.RemoveTopicsFromMirrorResponse](t, s, req)
		}
		wantCode(t, what, r.Topics[0].ErrorCode, r.Topics[0].ErrorMessage, want, msgPart)
		if got := mirrorNameOf(nd.q.Image(), "orders"); got != after {
			t.Fatalf("%s: mirror.name %q, want %q", what, got, after)
		}
	}
	step("resume mirroring", (*wire.ResumeMirrorTopicsRequest)(topicsReq("east", "orders")), kerr.InvalidRequest, "only PAUSED topics can be resumed", "east")
	step("pause", (*wire.PauseMirrorTopicsRequest)(topicsReq("east", "orders")), nil, "", "east.paused")
	step("pause paused", (*wire.PauseMirrorTopicsRequest)(topicsReq("east", "orders")), kerr.InvalidRequest, "is PAUSED", "east.paused")
	step("resume", (*wire.ResumeMirrorTopicsRequest)(topicsReq("east", "orders")), nil, "", "east")
	step("pause wrong mirror", (*wire.PauseMirrorTopicsRequest)(topicsReq("west", "orders")), kerr.ResourceNotFound, `mirror "west" does not exist`, "east")
	step("remove", (*wire.RemoveTopicsFromMirrorRequest)(topicsReq("east", "orders")), nil, "", "east.removed")
	step("remove removed", (*wire.RemoveTopicsFromMirrorRequest)(topicsReq("east", "orders")), kerr.InvalidRequest, "REMOVED", "east.removed")
	step("resume removed", (*wire.ResumeMirrorTopicsRequest)(topicsReq("east", "orders")), kerr.InvalidRequest, "REMOVED", "east.removed")

	// Deletion: refused while logs is mirroring (no coordinator asked),
	// then while a removed partition is not STOPPED.
	var reads atomic.Int32
	stoppedAll := atomic.Bool{}
	ctl.mirror.readStates = func(_ context.Context, _ *metadata.Image, keys []stateKey) (map[stateKey]wire.MirrorPartitionState, error) {
		reads.Add(1)
		out := map[stateKey]wire.MirrorPartitionState{}
		for _, k := range keys {
			out[k] = wire.MirrorStateStopped
			if k.Partition == 2 && !stoppedAll.Load() {
				out[k] = wire.MirrorStateStopping
			}
		}
		return out, nil
	}
	del := &wire.DeleteMirrorRequest{MirrorName: "east"}
	r := send[*wire.DeleteMirrorResponse](t, s, del)
	wantCode(t, "delete with mirroring topic", r.ErrorCode, r.ErrorMessage, kerr.InvalidRequest, `"logs" (MIRRORING)`)
	if reads.Load() != 0 {
		t.Fatal("coordinators asked although the image alone refuses the deletion")
	}
	step("remove logs", (*wire.RemoveTopicsFromMirrorRequest)(topicsReq("east", "logs")), nil, "", "east.removed")
	r = send[*wire.DeleteMirrorResponse](t, s, del)
	wantCode(t, "delete while stopping", r.ErrorCode, r.ErrorMessage, kerr.InvalidRequest, "logs-2 (STOPPING)")
	if !strings.Contains(*r.ErrorMessage, "orders-2 (STOPPING)") {
		t.Fatalf("message %q does not name orders-2", *r.ErrorMessage)
	}
	stoppedAll.Store(true)
	r = send[*wire.DeleteMirrorResponse](t, s, del)
	wantCode(t, "delete", r.ErrorCode, r.ErrorMessage, nil, "")
	img = nd.q.Image()
	if len(img.Mirrors()) != 0 || mirrorNameOf(img, "orders") != "" || mirrorNameOf(img, "logs") != "" {
		t.Fatalf("after delete: mirrors %v, orders %q, logs %q", img.Mirrors(), mirrorNameOf(img, "orders"), mirrorNameOf(img, "logs"))
	}
	r = send[*wire.DeleteMirrorResponse](t, s, del)
	wantCode(t, "delete again", r.ErrorCode, r.ErrorMessage, kerr.ResourceNotFound, "")

	// The name is reusable, and a failed-over topic can join again
	// (failback): same id as the source.
	if r := send[*wire.CreateMirrorResponse](t, s, createMirrorReq("east", "bootstrap.servers", strings.Join(src.ListenAddrs(), ","))); r.ErrorCode != 0 {
		t.Fatalf("recreate: %d %s", r.ErrorCode, strp(r.ErrorMessage))
	}
	add = mirrorTopicsSend[*wire.AddTopicsToMirrorResponse](t, s, (*wire.AddTopicsToMirrorRequest)(topicsReq("east", "orders")))
	wantCode(t, "re-add orders", add.Topics[0].ErrorCode, add.Topics[0].ErrorMessage, nil, "")

	if strings.Contains(logs.String(), secret) {
		t.Fatal("the mirror's password appears in the logs")
	}
	if !strings.Contains(logs.String(), "mirror created") {
		t.Fatal("log capture did not see the controller's logs")
	}
}

// TestAddTopicsSourceUnreachable checks that a source that does not answer
// fails the topics with a retriable error within the request's timeout.
func TestAddTopicsSourceUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now

	c := newTestCluster(t, 1, nil)
	nd := c.start(1)
	ctl := c.active().ctl.Load()
	registerBroker(t, ctl.Handle, nd.q, 1)
	if r := send[*wire.CreateMirrorResponse](t, ctl.Handle, createMirrorReq("east", "bootstrap.servers", addr)); r.ErrorCode != 0 {
		t.Fatalf("create: %d", r.ErrorCode)
	}
	req := topicsReq("east", "orders")
	req.TimeoutMillis = 1500
	start := time.Now()
	r := mirrorTopicsSend[*wire.AddTopicsToMirrorResponse](t, ctl.Handle, (*wire.AddTopicsToMirrorRequest)(req))
	if code := r.Topics[0].ErrorCode; code != kerr.RequestTimedOut.Code && code != kerr.NetworkException.Code {
		t.Fatalf("code %d (%s), want REQUEST_TIMED_OUT or NETWORK_EXCEPTION", code, strp(r.Topics[0].ErrorMessage))
	}
	if !kerr.IsRetriable(kerr.ErrorForCode(r.Topics[0].ErrorCode)) {
		t.Fatal("a source outage must be retriable")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v with a 1.5 s timeout", d)
	}
	if _, ok := nd.q.Image().Topic("orders"); ok {
		t.Fatal("topic created without the source")
	}
}

// fakeCoordinator serves ReadMirrorStates on a TCP listener: the first
// notCoordinatorFirst requests answer NOT_COORDINATOR, later ones answer
// state for every key.
type fakeCoordinator struct {
	ln                  net.Listener
	notCoordinatorFirst int32
	state               wire.MirrorPartitionState
	requests            atomic.Int32
	wg                  sync.WaitGroup
	mu                  sync.Mutex
	seen                []wire.ReadMirrorStatesRequestPartition
}

func startFakeCoordinator(t *testing.T, notCoordinatorFirst int32, state wire.MirrorPartitionState) *fakeCoordinator {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCoordinator{ln: ln, notCoordinatorFirst: notCoordinatorFirst, state: state}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				defer conn.Close()
				f.serve(conn)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); f.wg.Wait() })
	return f
}

func (f *fakeCoordinator) port() uint16 { return uint16(f.ln.Addr().(*net.TCPAddr).Port) }

func (f *fakeCoordinator) serve(conn net.Conn) {
	reg := wire.NewRegistry()
	reg.Add(wire.KeyReadMirrorStates, 0, 0)
	for {
		frame, err := wire.ReadFrame(conn, 1<<20, nil)
		if err != nil {
			return
		}
		hdr, kreq, err := wire.ParseRequest(frame, reg)
		if err != nil {
			return
		}
		req := kreq.(*wire.ReadMirrorStatesRequest)
		n := f.requests.Add(1)
		resp := &wire.ReadMirrorStatesResponse{}
		for _, p := range req.Partitions {
			f.mu.Lock()
			f.seen = append(f.seen, p)
			f.mu.Unlock()
			rp := wire.ReadMirrorStatesResponsePartition{MirrorName: p.MirrorName, TopicID: p.TopicID, Partition: p.Partition, State: f.state}
			if n <= f.notCoordinatorFirst {
				rp.ErrorCode, rp.State = kerr.NotCoordinator.Code, 0
			}
			resp.Partitions = append(resp.Partitions, rp)
		}
		if _, err := conn.Write(wire.AppendResponse(nil, hdr.CorrelationID, resp)); err != nil {
			return
		}
	}
}

// registerAt registers broker id with its PLAINTEXT (inter-broker) listener
// on port and waits until it is unfenced.
func registerAt(t *testing.T, s sender, q interface{ AppliedOffset() uint64 }, id int32, port uint16) {
	t.Helper()
	req := regReq(id, byte(id))
	req.Listeners[0].Port = port
	reg := send[*kmsg.BrokerRegistrationResponse](t, s, req)
	if reg.ErrorCode != 0 {
		t.Fatalf("register: %d", reg.ErrorCode)
	}
	waitFor(t, 10*time.Second, "broker unfenced", func() bool {
		return !send[*kmsg.BrokerHeartbeatResponse](t, s, hbReq(id, reg.BrokerEpoch, int64(q.AppliedOffset()), false, false)).IsFenced
	})
}

// TestReadMirrorStatesOverWire checks the controller's path to the mirror
// coordinators: ReadMirrorStates to the leader of each key's __mirror_state
// partition on its inter-broker listener, retried while it answers
// NOT_COORDINATOR, and a deadline error when it never becomes coordinator.
func TestReadMirrorStatesOverWire(t *testing.T) {
	c := newTestCluster(t, 1, map[string]string{"mirror.state.topic.num.partitions": "4"})
	nd := c.start(1)
	ctl := c.active().ctl.Load()
	fake := startFakeCoordinator(t, 2, wire.MirrorStateStopped)
	registerAt(t, ctl.Handle, nd.q, 1, fake.port())

	keys := []stateKey{{Mirror: "east", TopicID: metadata.Uuid{1}, Partition: 0}, {Mirror: "east", TopicID: metadata.Uuid{1}, Partition: 1}}
	// No __mirror_state yet: nothing was ever written.
	got, err := ctl.readStatesOverWire(testCtx(t), nil, keys)
	if err != nil || len(got) != 2 || got[keys[0]] != wire.MirrorStateUnknown || fake.requests.Load() != 0 {
		t.Fatalf("without __mirror_state: %v %v (%d requests)", got, err, fake.requests.Load())
	}

	if _, err := ctl.CreateInternalTopic(testCtx(t), MirrorStateTopic, 0, mirrorStateConfigs); err != nil {
		t.Fatal(err)
	}
	got, err = ctl.readStatesOverWire(testCtx(t), nil, keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if got[k] != wire.MirrorStateStopped {
			t.Fatalf("state of %+v: %v", k, got[k])
		}
	}
	if n := fake.requests.Load(); n < 3 {
		t.Fatalf("%d requests: want retries after NOT_COORDINATOR", n)
	}

	never := startFakeCoordinator(t, 1<<30, wire.MirrorStateStopped)
	registerAt(t, ctl.Handle, nd.q, 1, never.port())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = ctl.readStatesOverWire(ctx, nil, keys)
	if !errors.Is(err, kerr.CoordinatorNotAvailable) {
		t.Fatalf("never a coordinator: %v", err)
	}
	if never.requests.Load() == 0 {
		t.Fatal("the re-registered broker's new listener was not asked")
	}
}

// TestBumpLeaderEpochOverChannel bumps a partition's leader epoch through
// Channels: locally on a single node and over TCP from a node whose
// controller is not active; the tag sent by a client (through Channel.Send
// or a non-controller listener) does nothing.
func TestBumpLeaderEpochOverChannel(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	for id := int32(1); id <= 3; id++ {
		c.start(id)
	}
	leader := c.active()
	lctl := leader.ctl.Load()
	for id := int32(1); id <= 3; id++ {
		registerBroker(t, lctl.Handle, c.nodes[id].q, id)
	}
	cr := send[*kmsg.CreateTopicsResponse](t, lctl.Handle, createReq(7, newTopic("orders", 2, 3)))
	wantCode(t, "create", cr.Topics[0].ErrorCode, cr.Topics[0].ErrorMessage, nil, "")
	id := metadata.Uuid(cr.Topics[0].TopicID)
	epochOf := func(q interface{ Image() *metadata.Image }) metadata.PartitionState {
		ti, ok := q.Image().Topic("orders")
		if !ok {
			return metadata.PartitionState{}
		}
		st, _ := ti.Partition(0)
		return st
	}
	before := epochOf(leader.q)

	local := NewChannel(leader.q, lctl, "local", c.log)
	defer local.Close()
	got, err := local.BumpLeaderEpoch(testCtx(t), id, 0, 50)
	if err != nil || got != 50 {
		t.Fatalf("local bump: %d %v", got, err)
	}
	if st := epochOf(leader.q); st.LeaderEpoch != 50 || st.Leader != before.Leader || len(st.ISR) != len(before.ISR) {
		t.Fatalf("after the local bump %+v (before %+v)", st, before)
	}
	// Below the current epoch: nothing changes.
	if got, err := local.BumpLeaderEpoch(testCtx(t), id, 0, 20); err != nil || got != 50 {
		t.Fatalf("lower bump: %d %v", got, err)
	}

	var follower *node
	for id := int32(1); id <= 3; id++ {
		if id != leader.id {
			follower = c.nodes[id]
		}
	}
	remote := NewChannel(follower.q, nil, "remote", c.log)
	defer remote.Close()
	waitFor(t, 10*time.Second, "the follower's image has epoch 50", func() bool { return epochOf(follower.q).LeaderEpoch == 50 })
	conns := leader.kafkaConns.Load()
	got, err = remote.BumpLeaderEpoch(testCtx(t), id, 0, 80)
	if err != nil || got != 80 {
		t.Fatalf("remote bump: %d %v", got, err)
	}
	if leader.kafkaConns.Load() == conns {
		t.Fatal("the remote bump did not go over TCP")
	}
	if st := epochOf(leader.q); st.LeaderEpoch != 80 {
		t.Fatalf("after the remote bump %+v", st)
	}
	if _, err := remote.BumpLeaderEpoch(testCtx(t), metadata.Uuid{9}, 0, 80); !errors.Is(err, kerr.UnknownTopicID) {
		t.Fatalf("unknown topic: %v", err)
	}

	// A client's tagged AlterPartition: through Channel.Send the tag is
	// stripped; on a non-controller listener it is ignored. Either way it
	// is an ordinary (here refused) ISR change and the epoch stays.
	req, err := bumpRequest(leader.q.Image(), id, 0, 500)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Send(testCtx(t), req); err != nil {
		t.Fatal(err)
	}
	req, _ = bumpRequest(leader.q.Image(), id, 0, 500)
	rc := &wire.RequestContext{Listener: "PLAINTEXT"}
	if _, err := lctl.handleWire(testCtx(t), rc, req); err != nil {
		t.Fatal(err)
	}
	if st := epochOf(leader.q); st.LeaderEpoch != 80 {
		t.Fatalf("a client's tag bumped the epoch: %+v", st)
	}
}
