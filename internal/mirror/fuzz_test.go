package mirror

import (
	"context"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
	"github.com/kmirror/kmirror/internal/wire"
)

// FuzzHandlers decodes arbitrary bodies as every mirror API this package
// serves (ReadMirrorStates, WriteMirrorStates, ReadLastMirroredEpochs,
// DescribeMirrors) and hands whatever decodes to the handlers of a live
// coordinator: no input may crash them, and every answer must encode.
func FuzzHandlers(f *testing.F) {
	seed := func(req interface{ AppendTo([]byte) []byte }, key int16) {
		f.Add(key, req.AppendTo(nil))
	}
	seed(&wire.ReadMirrorStatesRequest{Partitions: []wire.ReadMirrorStatesRequestPartition{{MirrorName: "west", TopicID: topicA, Partition: 1}}}, wire.KeyReadMirrorStates)
	seed(&wire.WriteMirrorStatesRequest{
		Partitions:         []wire.WriteMirrorStatesRequestPartition{{MirrorName: "west", TopicID: topicA, Partition: 1, State: 2, StateEpoch: 1}},
		LastMirroredEpochs: []wire.WriteMirrorStatesRequestLastMirroredEpoch{{MirrorName: "west", TopicID: topicA, SourceClusterID: "s", LastMirroredEpoch: 1, EndOffset: 5}},
	}, wire.KeyWriteMirrorStates)
	seed(&wire.ReadLastMirroredEpochsRequest{ClusterID: "c", Topics: []wire.ReadLastMirroredEpochsRequestTopic{{TopicID: topicA, Name: "t", Partitions: []int32{0, -1}}}}, wire.KeyReadLastMirroredEpochs)
	seed(&wire.DescribeMirrorsRequest{MirrorNames: []string{"west", "nope"}, IncludePartitions: true}, wire.KeyDescribeMirrors)
	seed(&wire.DescribeMirrorsRequest{IncludePartitions: true}, wire.KeyDescribeMirrors)

	fx := newFuzzFixture(f)
	handlers := map[int16]wire.Handler{}
	for _, api := range fx.c.APIs() {
		handlers[api.Key] = api.Handle
	}
	for _, api := range fx.d.APIs() {
		handlers[api.Key] = api.Handle
	}
	f.Fuzz(func(t *testing.T, key int16, body []byte) {
		h, ok := handlers[key]
		if !ok {
			return
		}
		req := wire.NewMirrorRequest(key)
		if req.ReadFrom(body) != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := h(ctx, &wire.RequestContext{}, req)
		if err != nil {
			t.Fatalf("handler %s failed instead of answering: %v", wire.APIName(key), err)
		}
		out := wire.NewMirrorResponse(key)
		if err := out.ReadFrom(resp.(interface{ AppendTo([]byte) []byte }).AppendTo(nil)); err != nil {
			t.Fatalf("%s answer does not decode: %v", wire.APIName(key), err)
		}
	})
}

// fuzzFixture is a coordinator leading every __mirror_state partition, with
// a mirrored topic in its metadata, and a DescribeMirrors service.
type fuzzFixture struct {
	c *Coordinator
	d *Describer
}

func newFuzzFixture(tb testing.TB) *fuzzFixture {
	cf := newCoordFixture(tb)
	stateID := metadata.RandomUuid()
	recs := []metadata.Record{
		&metadata.TopicRecord{Name: mirrorstate.Topic, ID: stateID},
		&metadata.TopicRecord{Name: "t", ID: topicA},
		&metadata.PartitionRecord{TopicID: topicA, Partition: 0, PartitionState: metadata.PartitionState{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}},
		metadata.SetConfig(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: "t"}, metadata.MirrorNameConfig, "west"),
	}
	for p := range int32(testStatePartitions) {
		recs = append(recs, &metadata.PartitionRecord{TopicID: stateID, Partition: p, PartitionState: metadata.PartitionState{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}})
	}
	cf.meta.apply(tb, recs...)
	store := NewRoutedStore(1, "PLAINTEXT", cf.meta, cf.c, testStatePartitions, nil)
	tb.Cleanup(store.Close)
	d := NewDescriber(1, "PLAINTEXT", cf.meta, nil, store, nil, time.Second)
	tb.Cleanup(d.Close)
	return &fuzzFixture{c: cf.c, d: d}
}
