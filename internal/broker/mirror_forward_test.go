package broker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/replication"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

func mirrorTopics(mirror string, topics ...string) *wire.MirrorTopicsRequest {
	r := &wire.MirrorTopicsRequest{MirrorName: mirror, TimeoutMillis: 5000}
	for _, t := range topics {
		r.Topics = append(r.Topics, wire.MirrorTopicsRequestTopic{Name: t})
	}
	return r
}

func TestListMirrorsFromImage(t *testing.T) {
	e := newEnv(t, nil)
	res := func(typ int8, name string) metadata.ConfigResource {
		return metadata.ConfigResource{Type: typ, Name: name}
	}
	e.meta.mustApply(t,
		metadata.SetConfig(res(metadata.ResourceMirror, "west"), "bootstrap.servers", "w1:9092,w2:9092"),
		metadata.SetConfig(res(metadata.ResourceMirror, "east"), "bootstrap.servers", "e:9092"),
		metadata.SetConfig(res(metadata.ResourceMirror, "east"), "sasl.password", "secret"),
	)
	for i, name := range []string{"a", "b", "c", "d"} {
		id := metadata.Uuid{0: 0x31, 15: byte(i + 1)}
		e.meta.mustApply(t, &metadata.TopicRecord{Name: name, ID: id},
			&metadata.PartitionRecord{TopicID: id, PartitionState: metadata.PartitionState{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}})
	}
	e.meta.mustApply(t,
		metadata.SetConfig(res(metadata.ResourceTopic, "a"), config.MirrorNameConfig, "east"),
		metadata.SetConfig(res(metadata.ResourceTopic, "b"), config.MirrorNameConfig, "east.paused"),
		metadata.SetConfig(res(metadata.ResourceTopic, "c"), config.MirrorNameConfig, "east.removed"),
		metadata.SetConfig(res(metadata.ResourceTopic, "d"), config.MirrorNameConfig, "west"),
	)
	r := e.call(&wire.ListMirrorsRequest{}).(*wire.ListMirrorsResponse)
	want := []wire.ListMirrorsResponseMirror{
		{Name: "east", SourceBootstrapServers: "e:9092", TopicCount: 3},
		{Name: "west", SourceBootstrapServers: "w1:9092,w2:9092", TopicCount: 1},
	}
	if r.ErrorCode != 0 || len(r.Mirrors) != len(want) {
		t.Fatalf("ListMirrors = %+v", r)
	}
	for i := range want {
		if got := r.Mirrors[i]; got.Name != want[i].Name || got.SourceBootstrapServers != want[i].SourceBootstrapServers || got.TopicCount != want[i].TopicCount {
			t.Fatalf("mirror %d = %+v, want %+v", i, got, want[i])
		}
	}
	// It round-trips on the wire.
	back := &wire.ListMirrorsResponse{}
	if err := back.ReadFrom(r.AppendTo(nil)); err != nil || len(back.Mirrors) != 2 {
		t.Fatalf("round trip: %v %+v", err, back)
	}
}

func TestMirrorWritesWithoutController(t *testing.T) {
	e := newEnv(t, nil)
	for _, fail := range []struct {
		err  error
		code int16
	}{{errors.New("no controller reachable"), kerr.NotController.Code}, {context.DeadlineExceeded, kerr.RequestTimedOut.Code}} {
		e.ctrl.setFail(fail.err)
		reqs := []kmsg.Request{
			&wire.CreateMirrorRequest{MirrorName: "m"},
			&wire.DeleteMirrorRequest{MirrorName: "m"},
			(*wire.AddTopicsToMirrorRequest)(mirrorTopics("m", "a", "b", "a")),
			(*wire.RemoveTopicsFromMirrorRequest)(mirrorTopics("m", "a")),
			(*wire.PauseMirrorTopicsRequest)(mirrorTopics("m", "a")),
			(*wire.ResumeMirrorTopicsRequest)(mirrorTopics("m", "a")),
		}
		for _, req := range reqs {
			resp := e.call(req)
			var code int16
			topics := -1
			switch r := resp.(type) {
			case *wire.CreateMirrorResponse:
				code = r.ErrorCode
			case *wire.DeleteMirrorResponse:
				code = r.ErrorCode
			default:
				body := mirrorTopicsResults(resp.(kmsg.Response))
				if body == nil {
					t.Fatalf("%T answered %T", req, resp)
				}
				code, topics = body.ErrorCode, len(body.Topics)
				for _, tp := range body.Topics {
					if tp.ErrorCode != fail.code || tp.ErrorMessage == nil {
						t.Fatalf("%T topic %+v", req, tp)
					}
				}
			}
			if code != fail.code {
				t.Fatalf("%T with %v: code %d, want %d", req, fail.err, code, fail.code)
			}
			if _, ok := req.(*wire.AddTopicsToMirrorRequest); ok && topics != 2 {
				t.Fatalf("AddTopicsToMirror answered %d topics, want one per distinct name", topics)
			}
		}
	}
}

// mirrorController answers mirror admin writes with success and applies
// their effect to the metadata only when the test releases it.
type mirrorController struct {
	meta     *testMeta
	answered chan struct{}
	release  chan []metadata.Record
}

func (c *mirrorController) Send(_ context.Context, req kmsg.Request) (kmsg.Response, error) {
	go func() {
		if recs, ok := <-c.release; ok {
			_ = c.meta.apply(recs...)
		}
	}()
	defer func() { c.answered <- struct{}{} }()
	switch r := req.(type) {
	case *wire.CreateMirrorRequest:
		return &wire.CreateMirrorResponse{}, nil
	case *wire.PauseMirrorTopicsRequest:
		resp := &wire.PauseMirrorTopicsResponse{}
		for _, t := range r.Topics {
			resp.Topics = append(resp.Topics, wire.MirrorTopicsResponseTopic{Name: t.Name})
		}
		return resp, nil
	}
	return nil, errors.New("unexpected request")
}

// TestMirrorWriteWaitsUntilVisible checks that a forwarded mirror write is
// answered once this broker's metadata shows its effect, so that the
// client's next request to the same broker sees it.
func TestMirrorWriteWaitsUntilVisible(t *testing.T) {
	dir := t.TempDir()
	cfg, _, err := config.Load("", nil, map[string]string{"node.id": "1", "log.dirs": dir})
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := storage.NewManager(storage.ManagerConfig{Dirs: []string{dir}, Defaults: storage.DefaultLogConfig(), ClusterID: "test-cluster-0000000001", NodeID: testNode, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	meta := &testMeta{img: metadata.EmptyImage(), leaderID: -1}
	ctrl := &mirrorController{meta: meta, answered: make(chan struct{}, 1), release: make(chan []metadata.Record)}
	noLeaders := func(context.Context, replication.Source) (replication.Endpoint, error) {
		return nil, errors.New("no leaders")
	}
	b, err := New(Config{NodeID: testNode, Cfg: cfg, Logger: quietLogger()}, Deps{Logs: mgr, Metadata: meta, Controller: ctrl, ClusterID: "c", ReplicaEndpoint: noLeaders})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		close(ctrl.release)
		b.Close()
		_ = mgr.Shutdown()
	}()
	handler := func(key int16) wire.Handler {
		for _, a := range b.APIs() {
			if a.Key == key {
				return a.Handle
			}
		}
		t.Fatalf("key %d not served", key)
		return nil
	}
	mres := metadata.ConfigResource{Type: metadata.ResourceMirror, Name: "east"}
	steps := []struct {
		req  kmsg.Request
		recs []metadata.Record
		seen func(*metadata.Image) bool
	}{
		{&wire.CreateMirrorRequest{MirrorName: "east", TimeoutMillis: 5000},
			[]metadata.Record{metadata.SetConfig(mres, "bootstrap.servers", "s:1")},
			func(img *metadata.Image) bool { return len(img.Mirrors()) == 1 }},
		{(*wire.PauseMirrorTopicsRequest)(mirrorTopics("east", "t")),
			[]metadata.Record{&metadata.TopicRecord{Name: "t", ID: metadata.Uuid{1}},
				metadata.SetConfig(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: "t"}, config.MirrorNameConfig, "east.paused")},
			func(img *metadata.Image) bool { return len(img.MirrorTopics("east.paused")) == 1 }},
	}
	for _, st := range steps {
		done := make(chan wire.Response, 1)
		go func() {
			resp, err := handler(st.req.Key())(ctx, nil, st.req)
			if err != nil {
				t.Error(err)
			}
			done <- resp
		}()
		<-ctrl.answered
		select {
		case <-done:
			t.Fatalf("%T answered before its effect reached the broker's metadata", st.req)
		default:
		}
		ctrl.release <- st.recs
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatalf("%T never answered", st.req)
		}
		if !st.seen(b.rm.Image()) {
			t.Fatalf("%T answered but the broker's image lacks its effect", st.req)
		}
	}
}
