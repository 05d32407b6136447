package mirror

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator/coordinatortest"
	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
	"github.com/kmirror/kmirror/internal/wire"
)

func testLogger() *slog.Logger {
	if os.Getenv("KMIRROR_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

const testStatePartitions = 3

// coordFixture is a mirror coordinator over real logs, leading every
// partition of __mirror_state.
type coordFixture struct {
	t    testing.TB
	host *coordinatortest.Host
	meta *fakeMeta
	c    *Coordinator
}

func newCoordFixture(t testing.TB) *coordFixture {
	t.Helper()
	f := &coordFixture{t: t, host: coordinatortest.NewHost(t.TempDir(), testLogger()), meta: newFakeMeta()}
	t.Cleanup(func() { _ = f.host.Close() })
	f.meta.apply(t, createMirrorRecords("west")...)
	f.start()
	for p := range int32(testStatePartitions) {
		f.host.Lead(mirrorstate.Topic, p, true, 1)
	}
	f.waitLoaded()
	return f
}

func (f *coordFixture) start() {
	f.c = NewCoordinator(CoordinatorConfig{NodeID: 1, TopicPartitions: testStatePartitions, Logger: testLogger()}, f.host, f.meta, nil)
	f.meta.AddPublisher(f.c)
	f.c.Start()
	f.t.Cleanup(f.c.Close)
}

// waitLoaded polls until every led partition is active.
func (f *coordFixture) waitLoaded() {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		active := 0
		for _, ps := range f.c.rt.Partitions() {
			if ps.State == 1 {
				active++
			}
		}
		if active == testStatePartitions {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.t.Fatalf("partitions did not load: %+v", f.c.rt.Partitions())
}

var topicA = [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

func key(mirror string, p int32) mirrorstate.PartitionKey {
	return mirrorstate.PartitionKey{Mirror: mirror, TopicID: topicA, Partition: p}
}

func write(state wire.MirrorPartitionState, epoch, leaderEpoch int32, src string, p int32) StateWrite {
	return StateWrite{Key: key("west", p), Value: mirrorstate.PartitionValue{State: state, StateEpoch: epoch, SourceClusterID: src}, LeaderEpoch: leaderEpoch}
}

func TestCoordinatorWriteReadReload(t *testing.T) {
	f := newCoordFixture(t)
	ctx := ctxT(t)
	errs, lmeErr := f.c.WriteStates(ctx, []StateWrite{
		write(sPreparing, 1, 0, "", 0),
		write(sMirroring, 1, 0, "A", 1),
		write(sFailed, 1, 0, "A", 2),
	}, []LMEWrite{{Key: mirrorstate.LMEKey{TopicID: topicA, Partition: 1}, Value: mirrorstate.LMEValue{Mirror: "west", SourceClusterID: "A", LastMirroredEpoch: 4, EndOffset: 90}}})
	if lmeErr != nil {
		t.Fatal(lmeErr)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	check := func() {
		t.Helper()
		got, errs := f.c.ReadStates(ctx, []mirrorstate.PartitionKey{key("west", 0), key("west", 1), key("west", 9)})
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if !got[0].Found || got[0].Value.State != sPreparing || got[0].Value.StateEpoch != 1 {
			t.Fatalf("partition 0: %+v", got[0])
		}
		if !got[1].Found || got[1].Value.State != sMirroring || got[1].Value.SourceClusterID != "A" || got[1].Value.UpdateMillis <= 0 {
			t.Fatalf("partition 1: %+v", got[1])
		}
		if got[2].Found {
			t.Fatalf("never written partition found: %+v", got[2])
		}
		e, end, err := f.c.ReadLME(ctx, mirrorstate.LMEKey{TopicID: topicA, Partition: 1}, "A")
		if err != nil || e != 4 || end != 90 {
			t.Fatalf("LME for A: %d %d %v", e, end, err)
		}
		if e, end, err := f.c.ReadLME(ctx, mirrorstate.LMEKey{TopicID: topicA, Partition: 1}, "B"); err != nil || e != -1 || end != -1 {
			t.Fatalf("LME for another cluster: %d %d %v", e, end, err)
		}
	}
	check()
	// A new leader epoch reloads every partition from its log.
	for p := range int32(testStatePartitions) {
		f.host.Lead(mirrorstate.Topic, p, true, 2)
	}
	f.waitLoaded()
	check()
}

func TestCoordinatorFencing(t *testing.T) {
	f := newCoordFixture(t)
	ctx := ctxT(t)
	if errs, _ := f.c.WriteStates(ctx, []StateWrite{write(sMirroring, 3, 5, "A", 0)}, nil); errs[0] != nil {
		t.Fatal(errs[0])
	}
	for _, tc := range []struct {
		name string
		w    StateWrite
		want *kerr.Error
	}{
		{"same state epoch", write(sPaused, 3, 5, "A", 0), kerr.FencedStateEpoch},
		{"older state epoch", write(sPaused, 2, 6, "A", 0), kerr.FencedStateEpoch},
		{"older leader epoch", write(sPaused, 4, 4, "A", 0), kerr.FencedLeaderEpoch},
		{"unknown mirror", StateWrite{Key: key("east", 0), Value: mirrorstate.PartitionValue{State: sPaused, StateEpoch: 1}}, kerr.ResourceNotFound},
		{"bad state", write(wire.MirrorPartitionState(42), 9, 9, "A", 0), kerr.InvalidRequest},
	} {
		errs, _ := f.c.WriteStates(ctx, []StateWrite{tc.w}, nil)
		if !errors.Is(errs[0], tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, errs[0], tc.want)
		}
	}
	// Refused writes changed nothing; a good one still goes through.
	got, _ := f.c.ReadStates(ctx, []mirrorstate.PartitionKey{key("west", 0)})
	if got[0].Value.State != sMirroring || got[0].Value.StateEpoch != 3 || got[0].Value.LeaderEpoch != 5 {
		t.Fatalf("after refused writes: %+v", got[0])
	}
	if errs, _ := f.c.WriteStates(ctx, []StateWrite{write(sPausing, 4, 6, "A", 0)}, nil); errs[0] != nil {
		t.Fatal(errs[0])
	}
	// LMEs of an unknown mirror are refused together.
	_, lmeErr := f.c.WriteStates(ctx, nil, []LMEWrite{{Key: mirrorstate.LMEKey{TopicID: topicA}, Value: mirrorstate.LMEValue{Mirror: "nope"}}})
	if !errors.Is(lmeErr, kerr.ResourceNotFound) {
		t.Fatalf("LME of unknown mirror: %v", lmeErr)
	}
}

func TestCoordinatorNotCoordinator(t *testing.T) {
	f := newCoordFixture(t)
	ctx := ctxT(t)
	p := mirrorstate.PartitionFor("west", topicA, 0, testStatePartitions)
	f.host.Lead(mirrorstate.Topic, p, false, 1)
	_, errs := f.c.ReadStates(ctx, []mirrorstate.PartitionKey{key("west", 0)})
	if !errors.Is(errs[0], kerr.NotCoordinator) {
		t.Fatalf("read of a partition not led: %v", errs[0])
	}
	werrs, _ := f.c.WriteStates(ctx, []StateWrite{write(sPreparing, 1, 0, "", 0)}, nil)
	if !errors.Is(werrs[0], kerr.NotCoordinator) {
		t.Fatalf("write to a partition not led: %v", werrs[0])
	}
}

// TestCoordinatorDeletedMirror checks that deleting a mirror tombstones its
// records, both on a coordinator that sees the deletion and on one that
// loads the partition only afterwards.
func TestCoordinatorDeletedMirror(t *testing.T) {
	f := newCoordFixture(t)
	ctx := ctxT(t)
	f.meta.apply(t, createMirrorRecords("east")...)
	lme := func(m string, p int32) LMEWrite {
		return LMEWrite{Key: mirrorstate.LMEKey{TopicID: topicA, Partition: p}, Value: mirrorstate.LMEValue{Mirror: m, SourceClusterID: "A", LastMirroredEpoch: 1, EndOffset: 1}}
	}
	var ws []StateWrite
	for p := range int32(6) {
		ws = append(ws, write(sStopped, 1, 0, "", p))
		w := write(sStopped, 1, 0, "", p)
		w.Key.Mirror = "east"
		ws = append(ws, w)
	}
	errs, lmeErr := f.c.WriteStates(ctx, ws, []LMEWrite{lme("west", 0), lme("east", 1)})
	if lmeErr != nil {
		t.Fatal(lmeErr)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	f.meta.apply(t, deleteMirrorRecords("west")...)
	gone := func() bool {
		var keys []mirrorstate.PartitionKey
		for p := range int32(6) {
			keys = append(keys, key("west", p))
		}
		got, _ := f.c.ReadStates(ctx, keys)
		for _, g := range got {
			if g.Found {
				return false
			}
		}
		e, _, _ := f.c.ReadLME(ctx, mirrorstate.LMEKey{TopicID: topicA, Partition: 0}, "A")
		return e == -1
	}
	waitFor(t, "west's records removed", gone)
	if e, _, _ := f.c.ReadLME(ctx, mirrorstate.LMEKey{TopicID: topicA, Partition: 1}, "A"); e != 1 {
		t.Fatal("east's LME was removed with west's")
	}
	k := key("east", 3)
	if got, _ := f.c.ReadStates(ctx, []mirrorstate.PartitionKey{k}); !got[0].Found {
		t.Fatal("east's state was removed with west's")
	}

	// east is deleted while nobody leads its partitions: the next load
	// removes its records.
	for p := range int32(testStatePartitions) {
		f.host.Lead(mirrorstate.Topic, p, false, 1)
	}
	f.meta.apply(t, deleteMirrorRecords("east")...)
	f.meta.apply(t, createMirrorRecords("west")...) // the name is reusable
	for p := range int32(testStatePartitions) {
		f.host.Lead(mirrorstate.Topic, p, true, 3)
	}
	f.waitLoaded()
	waitFor(t, "east's records removed on load", func() bool {
		got, _ := f.c.ReadStates(ctx, []mirrorstate.PartitionKey{k})
		e, _, _ := f.c.ReadLME(ctx, mirrorstate.LMEKey{TopicID: topicA, Partition: 1}, "A")
		return !got[0].Found && e == -1
	})
	// The recreated west starts from nothing.
	if got, _ := f.c.ReadStates(ctx, []mirrorstate.PartitionKey{key("west", 0)}); got[0].Found {
		t.Fatalf("recreated mirror sees old state %+v", got[0])
	}
}

// TestCoordinatorHandlers drives the wire handlers with requests encoded and
// decoded as on the network, so that kmirror's tags survive the trip.
func TestCoordinatorHandlers(t *testing.T) {
	f := newCoordFixture(t)
	ctx := ctxT(t)
	handlers := map[int16]wire.Handler{}
	for _, api := range f.c.APIs() {
		handlers[api.Key] = api.Handle
	}
	call := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		// Through the bytes, as a remote broker would send it.
		dec := wire.NewMirrorRequest(req.Key())
		if err := dec.ReadFrom(req.AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
		resp, err := handlers[req.Key()](ctx, &wire.RequestContext{}, dec)
		if err != nil {
			t.Fatal(err)
		}
		kresp := resp.(kmsg.Response)
		out := wire.NewMirrorResponse(req.Key())
		if err := out.ReadFrom(kresp.AppendTo(nil)); err != nil {
			t.Fatal(err)
		}
		return out
	}
	w := &wire.WriteMirrorStatesRequest{
		Partitions: []wire.WriteMirrorStatesRequestPartition{stateWriteToWire(write(sMirroring, 1, 2, "src-A", 4))},
		LastMirroredEpochs: []wire.WriteMirrorStatesRequestLastMirroredEpoch{
			{MirrorName: "west", TopicID: topicA, Partition: 4, SourceClusterID: "src-A", LastMirroredEpoch: 7, EndOffset: 70},
		},
	}
	wresp := call(w).(*wire.WriteMirrorStatesResponse)
	if wresp.ErrorCode != 0 || len(wresp.Partitions) != 1 || wresp.Partitions[0].ErrorCode != 0 {
		t.Fatalf("write: %+v", wresp)
	}
	stale := call(w).(*wire.WriteMirrorStatesResponse)
	if stale.Partitions[0].ErrorCode != kerr.FencedStateEpoch.Code || stale.Partitions[0].ErrorMessage == nil {
		t.Fatalf("stale write: %+v", stale.Partitions[0])
	}
	r := call(&wire.ReadMirrorStatesRequest{Partitions: []wire.ReadMirrorStatesRequestPartition{
		{MirrorName: "west", TopicID: topicA, Partition: 4},
		{MirrorName: "west", TopicID: topicA, Partition: 5},
	}}).(*wire.ReadMirrorStatesResponse)
	p4, p5 := r.Partitions[0], r.Partitions[1]
	if p4.ErrorCode != 0 || p4.State != sMirroring || p4.StateEpoch != 1 || p4.LeaderEpoch != 2 || stringTag(p4.UnknownTags, tagSourceCluster) != "src-A" {
		t.Fatalf("read p4: %+v", p4)
	}
	if p5.ErrorCode != 0 || p5.State != sUnknown || p5.UpdateMillis != -1 || p5.LeaderEpoch != -1 {
		t.Fatalf("read p5: %+v", p5)
	}
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
