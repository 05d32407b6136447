package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// mirrorFuzzSeeds are valid mirror admin requests and a leader epoch bump
// for FuzzDecisions.
func mirrorFuzzSeeds(t testing.TB) []kmsg.Request {
	bump, err := bumpRequest(fuzzImage(t), metadata.Uuid{0: 7, 15: 1}, 0, 9)
	if err != nil {
		t.Fatal(err)
	}
	return []kmsg.Request{
		createMirrorReq("n", "bootstrap.servers", "x:1", "sasl.password", "p"),
		(*wire.AddTopicsToMirrorRequest)(topicsReq("m", "b", "a", "gone")),
		(*wire.PauseMirrorTopicsRequest)(topicsReq("m", "a")),
		(*wire.ResumeMirrorTopicsRequest)(topicsReq("m", "a")),
		(*wire.RemoveTopicsFromMirrorRequest)(topicsReq("m", "a", "b")),
		&wire.DeleteMirrorRequest{MirrorName: "m"},
		bump,
	}
}

// decideMirrorFrame runs the decision of a mirror admin request for
// decideFrame, with a fixed source answer (topic b exists on the source,
// others do not) and every partition STOPPED.
func decideMirrorFrame(v *view, req kmsg.Request) ([]metadata.Record, kmsg.Response, bool) {
	img := v.img
	switch r := req.(type) {
	case *wire.CreateMirrorRequest:
		recs, err := decideCreateMirror(v, r)
		resp, _ := mirrorErrorResponse(r, err)
		return recs, resp, true
	case *wire.AddTopicsToMirrorRequest:
		src := map[string]sourceTopic{"b": srcTopic(2, 3, "retention.ms", "5")}
		for _, t := range r.Topics {
			if _, ok := src[t.Name]; !ok {
				src[t.Name] = sourceTopic{Err: kerr.UnknownTopicOrPartition}
			}
		}
		recs, resp := decideAddTopics(v, (*wire.MirrorTopicsRequest)(r), addTopicsInput{source: src, states: allStopped(img)})
		return recs, (*wire.AddTopicsToMirrorResponse)(resp), true
	case *wire.PauseMirrorTopicsRequest:
		recs, resp := decideMirrorTopics(img, opPause, (*wire.MirrorTopicsRequest)(r))
		return recs, (*wire.PauseMirrorTopicsResponse)(resp), true
	case *wire.ResumeMirrorTopicsRequest:
		recs, resp := decideMirrorTopics(img, opResume, (*wire.MirrorTopicsRequest)(r))
		return recs, (*wire.ResumeMirrorTopicsResponse)(resp), true
	case *wire.RemoveTopicsFromMirrorRequest:
		recs, resp := decideMirrorTopics(img, opRemove, (*wire.MirrorTopicsRequest)(r))
		return recs, (*wire.RemoveTopicsFromMirrorResponse)(resp), true
	case *wire.DeleteMirrorRequest:
		recs, err := decideDeleteMirror(img, r.MirrorName, allStopped(img), nil)
		resp, _ := mirrorErrorResponse(r, err)
		return recs, resp, true
	}
	return nil, nil, false
}

// allStopped returns a STOPPED state for every partition of every topic
// under every mirror name in img.
func allStopped(img *metadata.Image) map[stateKey]wire.MirrorPartitionState {
	out := map[stateKey]wire.MirrorPartitionState{}
	for _, t := range img.Topics() {
		in, _ := topicMembership(img, t.Name)
		for _, k := range partitionKeys(in, t) {
			out[k] = wire.MirrorStateStopped
		}
	}
	return out
}
