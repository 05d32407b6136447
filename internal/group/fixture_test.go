package group

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/coordinator/coordinatortest"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// testPartitions is the number of __consumer_offsets partitions in tests.
const testPartitions = 4

// fixedMetadata is a MetadataSource whose image tests replace.
type fixedMetadata struct {
	mu  sync.Mutex
	img *metadata.Image
}

func (m *fixedMetadata) Image() *metadata.Image {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.img
}

// testImage builds an image with broker 1 (PLAINTEXT localhost:9092) leading
// every partition of the given topics.
func testImage(t *testing.T, topics map[string]int32) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(metadata.EmptyImage())
	off := uint64(1)
	replay := func(r metadata.Record) {
		t.Helper()
		if err := d.Replay(r, off); err != nil {
			t.Fatal(err)
		}
		off++
	}
	replay(&metadata.RegisterBrokerRecord{BrokerRegistration: metadata.BrokerRegistration{
		ID: 1, Epoch: 1, IncarnationID: metadata.RandomUuid(),
		Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9092}},
	}})
	replay(&metadata.UnfenceBrokerRecord{ID: 1, Epoch: 1})
	for name, n := range topics {
		id := metadata.RandomUuid()
		replay(&metadata.TopicRecord{Name: name, ID: id})
		for p := int32(0); p < n; p++ {
			replay(&metadata.PartitionRecord{TopicID: id, Partition: p, PartitionState: metadata.PartitionState{
				Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1,
			}})
		}
	}
	return d.Apply()
}

// env is a group coordinator over real storage logs, with its handlers
// called directly.
type env struct {
	t     *testing.T
	dir   string
	host  *coordinatortest.Host
	clock *coordinator.ManualClock
	meta  *fixedMetadata
	cfg   Config
	c     *Coordinator
	apis  map[int16]wire.API
	// authz, when set, decides the requests' rights (see authz_test.go).
	authz wire.Authorizer
}

func newEnv(t *testing.T, mod ...func(*Config)) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clock: coordinator.NewManualClock(time.Unix(1_700_000_000, 0))}
	e.meta = &fixedMetadata{img: testImage(t, map[string]int32{OffsetsTopic: testPartitions, "t1": 3, "t2": 2})}
	e.cfg = DefaultConfig()
	e.cfg.OffsetsTopicPartitions = testPartitions
	e.cfg.Clock = e.clock
	e.cfg.Logger = slog.New(slog.DiscardHandler)
	for _, f := range mod {
		f(&e.cfg)
	}
	e.start(true)
	return e
}

// start opens the host and a coordinator leading every partition.
func (e *env) start(lead bool) {
	e.host = coordinatortest.NewHost(e.dir, slog.New(slog.DiscardHandler))
	host := e.host
	e.t.Cleanup(func() { host.Close() })
	e.c = New(e.cfg, Deps{Host: e.host, Metadata: e.meta})
	c := e.c
	e.t.Cleanup(c.Close)
	e.apis = map[int16]wire.API{}
	for _, a := range e.c.APIs() {
		e.apis[a.Key] = a
	}
	e.c.Start()
	if lead {
		for p := int32(0); p < testPartitions; p++ {
			e.host.Lead(OffsetsTopic, p, true, 1)
		}
		e.waitLoaded()
	}
}

// restart stops the coordinator and its logs and starts new ones over the
// same directory, as a node restart does.
func (e *env) restart() {
	e.c.Close()
	if err := e.host.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.start(true)
}

func (e *env) waitLoaded() {
	e.t.Helper()
	waitFor(e.t, "partitions loaded", func() bool {
		n := 0
		for _, ps := range e.c.rt.Partitions() {
			if ps.State == coordinator.PartitionActive {
				n++
			}
		}
		return n == testPartitions
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// do calls the handler of req's key at req's version.
func (e *env) do(req kmsg.Request) kmsg.Response {
	e.t.Helper()
	resp, err := e.doErr(context.Background(), req)
	if err != nil {
		e.t.Fatalf("%T v%d: %v", req, req.GetVersion(), err)
	}
	return resp
}

func (e *env) doErr(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	a, ok := e.apis[req.Key()]
	if !ok {
		e.t.Fatalf("no handler for key %d", req.Key())
	}
	if v := req.GetVersion(); v < a.MinVersion || v > a.MaxVersion {
		e.t.Fatalf("version %d of key %d outside %d-%d", v, req.Key(), a.MinVersion, a.MaxVersion)
	}
	// Round-trip the request through its encoding, as the server does.
	enc := req.AppendTo(nil)
	dec := kmsg.RequestForKey(req.Key())
	dec.SetVersion(req.GetVersion())
	if err := dec.ReadFrom(enc); err != nil {
		e.t.Fatalf("decode %T: %v", req, err)
	}
	clientID := "client-1"
	rc := &wire.RequestContext{
		Header:     wire.RequestHeader{APIKey: req.Key(), APIVersion: req.GetVersion(), ClientID: &clientID},
		Listener:   "PLAINTEXT",
		Principal:  wire.AnonymousPrincipal,
		ClientAddr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 50000},
		Authz:      e.authz,
	}
	resp, err := a.Handle(ctx, rc, dec)
	if err != nil {
		return nil, err
	}
	kr := resp.(kmsg.Response)
	// And the response through its encoding.
	out := kr.AppendTo(nil)
	back := kmsg.ResponseForKey(req.Key())
	back.SetVersion(req.GetVersion())
	if err := back.ReadFrom(out); err != nil {
		e.t.Fatalf("decode response %T: %v", kr, err)
	}
	return back, nil
}

// async calls the handler in a goroutine.
func (e *env) async(req kmsg.Request) <-chan kmsg.Response {
	ch := make(chan kmsg.Response, 1)
	go func() {
		resp, err := e.doErr(context.Background(), req)
		if err != nil {
			e.t.Errorf("%T: %v", req, err)
			close(ch)
			return
		}
		ch <- resp
	}()
	return ch
}

func wantCode(t *testing.T, what string, got int16, want *kerr.Error) {
	t.Helper()
	if got != errCode(want) {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

// describe returns a group's description.
func (e *env) describe(group string) kmsg.DescribeGroupsResponseGroup {
	e.t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = []string{group}
	req.IncludeAuthorizedOperations = true
	resp := e.do(req).(*kmsg.DescribeGroupsResponse)
	return resp.Groups[0]
}

// waitState waits until the group is in state.
func (e *env) waitState(group string, state State) {
	e.t.Helper()
	waitFor(e.t, group+" in "+state.String(), func() bool { return e.describe(group).State == state.String() })
}

func joinReq(version int16, group, member string, instance *string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = version
	req.Group = group
	req.MemberID = member
	req.InstanceID = instance
	req.SessionTimeoutMillis = 10000
	req.RebalanceTimeoutMillis = 30000
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	p.Metadata = subscription("t1")
	req.Protocols = append(req.Protocols, p)
	return req
}

func syncReqMsg(version int16, group, member string, gen int32, assign map[string]string) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = version
	req.Group = group
	req.MemberID = member
	req.Generation = gen
	if version >= 5 {
		pt, pn := "consumer", "range"
		req.ProtocolType, req.Protocol = &pt, &pn
	}
	for m, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID = m
		ga.MemberAssignment = []byte(a)
		req.GroupAssignment = append(req.GroupAssignment, ga)
	}
	return req
}

func heartbeatReq(version int16, group, member string, gen int32) *kmsg.HeartbeatRequest {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = version
	req.Group = group
	req.MemberID = member
	req.Generation = gen
	return req
}

// commitReq commits offsets of topic t1 partitions 0.. as given.
func commitReq(version int16, group, member string, gen int32, offsets ...int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = version
	req.Group = group
	req.MemberID = member
	req.Generation = gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = "t1"
	for i, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = int32(i)
		rp.Offset = o
		rp.LeaderEpoch = 5
		md := "md"
		rp.Metadata = &md
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// fetchOffsetsOf returns the committed offsets of t1's partitions (nil
// topics: all) with OffsetFetch v8.
func (e *env) fetchOffsetsOf(group string, requireStable bool) map[int32]kmsg.OffsetFetchResponseGroupTopicPartition {
	e.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	req.RequireStable = requireStable
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic = "t1"
	rt.Partitions = []int32{0, 1, 2}
	rg.Topics = append(rg.Topics, rt)
	req.Groups = append(req.Groups, rg)
	resp := e.do(req).(*kmsg.OffsetFetchResponse)
	g := resp.Groups[0]
	wantCode(e.t, "offset fetch", g.ErrorCode, nil)
	out := map[int32]kmsg.OffsetFetchResponseGroupTopicPartition{}
	for _, t := range g.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p
		}
	}
	return out
}

// shardContextForTest is a shard context with a manual clock and no timers,
// for tests that drive a shard's replay functions directly.
func shardContextForTest() coordinator.ShardContext[*shard] {
	return coordinator.ShardContext[*shard]{Clock: coordinator.NewManualClock(time.Unix(0, 0))}
}
