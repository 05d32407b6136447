package controller

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// fuzzImage is a small cluster for FuzzDecisions: three brokers (one
// fenced), a two-partition topic with configs, an internal topic and a
// cluster-wide broker config.
func fuzzImage(t testing.TB) *metadata.Image {
	img := cluster(t, broker{id: 1, rack: "a"}, broker{id: 2, rack: "b"}, broker{id: 3, fenced: true})
	img = withTopic(t, img, "a", metadata.Uuid{0: 7, 15: 1},
		partition(1, []int32{1, 2}, []int32{1, 2}), partition(2, []int32{2, 3}, []int32{2}))
	img = withTopic(t, img, OffsetsTopic, metadata.Uuid{0: 7, 15: 2}, partition(1, []int32{1}, []int32{1}))
	img = withConfig(t, img, topicRes("a"), "retention.ms", "1000", "mirror.name", "m")
	img = withConfig(t, img, brokerRes(""), "log.cleaner.threads", "2")
	img = withConfig(t, img, mirrorRes("m"), "bootstrap.servers", "src:9092")
	return apply(t, img, &metadata.FeatureLevelRecord{Name: metadata.MetadataVersionFeature, Level: 7})
}

// fuzzRegistry serves the controller's APIs.
func fuzzRegistry() *wire.Registry {
	reg := wire.NewRegistry()
	for _, a := range servedAPIs {
		reg.Add(a.key, a.min, a.max)
	}
	return reg
}

// fuzzSeeds are valid requests of every served API.
func fuzzSeeds(t testing.TB) []kmsg.Request {
	ct := createReq(7, newTopic("b", 3, 2, "cleanup.policy", "compact"), manualTopic("c", assignment(0, 1, 2)))
	ct5 := createReq(5, newTopic("a_b", -1, -1))
	dt := deleteByName(5, "a", "zz")
	dt6 := kmsg.NewPtrDeleteTopicsRequest()
	dt6.Version = 6
	dt6.Topics = []kmsg.DeleteTopicsRequestTopic{deleteEntry(nil, metadata.Uuid{0: 7, 15: 1}), deleteEntry(ptr(OffsetsTopic), metadata.Uuid{})}
	cp := partitionsReq(morePartitions("a", 4), morePartitions("a", 3, []int32{1, 2}))
	ac := legacyReq(legacy(topicT, "a", ptr("segment.ms"), ptr("100")), legacy(brokerT, "1", ptr("log.cleaner.threads"), ptr("3")))
	ia := incrReq(incr(topicT, "a", op(appendOp, "cleanup.policy", ptr("compact")), op(del, "retention.ms", nil)),
		incr(brokerT, "", op(set, "log.cleaner.threads", ptr("4"))))
	hb := hbReq(1, 11, 100, false, true)
	ap := apReq(3, 1, 11, metadata.Uuid{0: 7, 15: 1}, 0, 0, 0, metadata.Recovered, m(1))
	ap1 := apReq(1, 2, 12, metadata.Uuid{0: 7, 15: 1}, 1, 0, 0, metadata.Recovered, m(2), m(3))
	el := electReq(2, electPreferred, map[string][]int32{"t": {0, 1}})
	el.Topics[0].Topic = "a"
	el0 := electReq(0, 0, nil)
	return append([]kmsg.Request{ct, ct5, dt, dt6, cp, ac, ia, allocReq(1, 11), regReq(4, 4), hb, ap, ap1, el, el0}, mirrorFuzzSeeds(t)...)
}

// FuzzDecisions feeds arbitrary controller requests (a request frame
// without its size prefix, parsed as the server parses it) to the decision
// functions. None may panic, every record a decision emits must replay
// onto the image it was decided from (a decision never proposes an entry
// the replay rules refuse), and every response must encode and decode at
// its version.
func FuzzDecisions(f *testing.F) {
	for _, req := range fuzzSeeds(f) {
		f.Add(wire.AppendRequest(nil, 1, ptr("seed"), req)[4:])
	}
	reg := fuzzRegistry()
	img := fuzzImage(f)
	cfg := testConfig(f, nil)
	f.Fuzz(func(t *testing.T, frame []byte) { decideFrame(t, img, reg, cfg, frame) })
}

// decideFrame parses frame as the server would and runs its decision,
// checking the properties FuzzDecisions states.
func decideFrame(t *testing.T, img *metadata.Image, reg *wire.Registry, cfg *config.Config, frame []byte) {
	_, req, err := wire.ParseRequest(frame, reg)
	if err != nil {
		return
	}
	v := testView(t, img, cfg)
	var recs []metadata.Record
	var resp kmsg.Response
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		recs, resp = decideCreateTopics(v, r, hasInternalTag(r))
	case *kmsg.DeleteTopicsRequest:
		recs, resp = decideDeleteTopics(v, r)
	case *kmsg.CreatePartitionsRequest:
		recs, resp = decideCreatePartitions(v, r)
	case *kmsg.AlterConfigsRequest:
		recs, resp = decideAlterConfigs(v, r)
	case *kmsg.IncrementalAlterConfigsRequest:
		recs, resp = decideIncrementalAlterConfigs(v, r)
	case *kmsg.AllocateProducerIDsRequest:
		recs, resp = decideAllocateProducerIDs(img, r)
	case *kmsg.BrokerRegistrationRequest:
		var err error
		recs, _, err = decideRegisterBroker(v, r, registerInput{newEpoch: int64(img.Offset()) + 1})
		resp, _ = errorResponse(r, err)
	case *kmsg.BrokerHeartbeatRequest:
		recs, _, resp = decideHeartbeat(v, r, heartbeatInput{registrationOffset: 3, shutdownOffset: 3, lowestActiveOffset: 2})
	case *kmsg.AlterPartitionRequest:
		if isLeaderEpochBump(r) && r.Version >= 2 {
			recs, resp = decideLeaderEpochBumps(img, r)
		} else {
			recs, resp = decideAlterPartition(v, r)
		}
	case *kmsg.ElectLeadersRequest:
		recs, resp = decideElectLeaders(v, r)
	default:
		var ok bool
		if recs, resp, ok = decideMirrorFrame(v, req); !ok {
			t.Fatalf("registry produced %T", req)
		}
	}
	apply(t, img, recs...)
	back := req.ResponseKind()
	back.SetVersion(resp.GetVersion())
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
		t.Fatalf("%T v%d does not round-trip: %v", resp, resp.GetVersion(), err)
	}
}

// TestWriteFuzzSeeds checks the committed seed corpus of FuzzDecisions
// against fuzzSeeds, and rewrites it when KMIRROR_WRITE_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	want := map[string]string{}
	for i, req := range fuzzSeeds(t) {
		frame := wire.AppendRequest(nil, 1, ptr("seed"), req)[4:]
		name := fmt.Sprintf("seed-%02d-%s-v%d", i, strings.ToLower(wire.APIName(req.Key())), req.GetVersion())
		want[name] = "go test fuzz v1\n[]byte(" + strconv.Quote(string(frame)) + ")\n"
	}
	seedCorpus(t, filepath.Join("testdata", "fuzz", "FuzzDecisions"), want)
}

// seedCorpus compares the committed seed corpus in dir with want (file
// name → contents, as the generator writes them) and fails the test on a
// missing or different file; with KMIRROR_WRITE_SEEDS=1 it writes want
// instead. A corpus that no longer matches its generator is a corpus the
// fuzz targets no longer start from.
func seedCorpus(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("no seeds generated for %s", dir)
	}
	if os.Getenv("KMIRROR_WRITE_SEEDS") == "1" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range want {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for name, body := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("seed corpus %s: %v (regenerate with KMIRROR_WRITE_SEEDS=1)", dir, err)
			continue
		}
		if string(got) != body {
			t.Errorf("seed corpus %s: %s differs from what its generator writes (regenerate with KMIRROR_WRITE_SEEDS=1)", dir, name)
		}
	}
}
