package replication

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// gatedTarget is a memTarget whose first gated appends wait until the test
// opens the gate; entered tells the test an append started. failFirst
// makes the first append fail.
type gatedTarget struct {
	*memTarget
	gates     int32 // appends still to gate
	entered   chan struct{}
	gate      chan struct{}
	failFirst bool
	appends   atomic.Int32
	returned  atomic.Int32 // appends that returned
}

func newGatedTarget(gates int32) *gatedTarget {
	return &gatedTarget{memTarget: &memTarget{}, gates: gates, entered: make(chan struct{}, 16), gate: make(chan struct{})}
}

func (g *gatedTarget) Append(batches []byte) (int64, error) {
	defer g.returned.Add(1)
	n := g.appends.Add(1)
	if n <= g.gates {
		g.entered <- struct{}{}
		<-g.gate
	}
	if n == 1 && g.failFirst {
		return -1, errors.New("disk full")
	}
	return g.memTarget.Append(batches)
}

func (g *gatedTarget) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(waitLimit):
		t.Fatal("no append started")
	}
}

func pipelined(c *Config) { c.ReplicaID, c.Pipeline = -1, true }

// TestPipelineFetchesWhileAppending: with Pipeline, the next request goes
// out while the previous response is being appended, asking from where
// that response's batches end, in their epoch.
func TestPipelineFetchesWhileAppending(t *testing.T) {
	r := newRig(t, pipelined)
	tgt := newGatedTarget(1)
	addX(r, tpX0, 3, tgt, srcA)
	ep := r.endpoint()
	req := r.request(ep)
	r.answer(ep, response(req.Version, 9, ok(topicX, 0, 5, batch(t, 0, 4, 3))), nil)
	tgt.waitEntered(t)

	req = r.request(ep) // while the append waits at the gate
	rp, found := reqPart(req, topicX, 0)
	if !found || rp.FetchOffset != 3 || rp.LastFetchedEpoch != 4 || req.SessionID != 9 || req.SessionEpoch != 1 {
		t.Fatalf("pipelined request: %+v (found %v), session %d/%d", rp, found, req.SessionID, req.SessionEpoch)
	}
	if leo, _, _, _ := tgt.snapshot(); leo != 0 {
		t.Fatalf("the first response was appended (log end %d) before the next request went out", leo)
	}
	close(tgt.gate)
	r.answer(ep, response(req.Version, 9, ok(topicX, 0, 5, batch(t, 3, 4, 2))), nil)
	req = r.request(ep)
	if rp, found = reqPart(req, topicX, 0); !found || rp.FetchOffset != 5 {
		t.Fatalf("third request: %+v (found %v)", rp, found)
	}
	waitFor(t, "both responses appended", func() bool { leo, _, _, _ := tgt.snapshot(); return leo == 5 })
	if _, _, _, calls := tgt.snapshot(); !slices.Equal(calls, []string{"append 2", "append 4"}) {
		t.Fatalf("target calls %v", calls)
	}
}

// TestPipelineDropsAnswersAfterAFailedAppend: a request sent ahead of a
// failed append asked from an offset the log never reached; its answer is
// dropped and the partition is fetched again from its real log end.
func TestPipelineDropsAnswersAfterAFailedAppend(t *testing.T) {
	r := newRig(t, pipelined)
	tgt := newGatedTarget(1)
	tgt.failFirst = true
	addX(r, tpX0, 3, tgt, srcA)
	ep := r.endpoint()
	req := r.request(ep)
	r.answer(ep, response(req.Version, 9, ok(topicX, 0, 5, batch(t, 0, 4, 3))), nil)
	tgt.waitEntered(t)
	req = r.request(ep)
	if rp, _ := reqPart(req, topicX, 0); rp.FetchOffset != 3 {
		t.Fatalf("pipelined request asks from %d, want 3", rp.FetchOffset)
	}
	close(tgt.gate) // the append fails
	r.answer(ep, response(req.Version, 9, ok(topicX, 0, 5, batch(t, 3, 4, 2))), nil)

	req = r.request(ep) // after the backoff
	if rp, found := reqPart(req, topicX, 0); !found || rp.FetchOffset != 0 || rp.LastFetchedEpoch != -1 {
		t.Fatalf("request after the failed append: %+v (found %v)", rp, found)
	}
	r.answer(ep, response(req.Version, 9, ok(topicX, 0, 5, batch(t, 0, 4, 3))), nil)
	r.request(ep)
	waitFor(t, "the refetched batch appended", func() bool { leo, _, _, _ := tgt.snapshot(); return leo == 3 })
	if _, _, _, calls := tgt.snapshot(); !slices.Equal(calls, []string{"append 2"}) {
		t.Fatalf("target calls %v: the answer fetched ahead of the failed append was used", calls)
	}
}

// TestPipelineNotForFollowers: a follower's fetch offset tells its leader
// what it holds, so Pipeline does not apply to replica fetchers: no request
// leaves while an append is in progress. The held append fails: a request
// sent during it would ask from where the data was to end (a pipelined
// prediction, which tells the leader the follower holds what it does not),
// so the next request must ask from where the follower's log really ends,
// and must have left after the append returned.
func TestPipelineNotForFollowers(t *testing.T) {
	r := newRig(t, func(c *Config) { c.Pipeline = true })
	tgt := newGatedTarget(1)
	tgt.failFirst = true
	addX(r, tpX0, 3, tgt, srcA)
	ep := r.endpoint()
	req := r.request(ep)
	// Each later request records, as it is sent, how many appends had
	// returned.
	appendedBefore := make(chan int32, 16)
	h := func() { appendedBefore <- tgt.returned.Load() }
	ep.onFetch.Store(&h)
	r.answer(ep, response(req.Version, 9, ok(topicX, 0, 5, batch(t, 0, 4, 3))), nil)
	tgt.waitEntered(t)
	close(tgt.gate) // the append fails
	req = r.request(ep)
	if rp, _ := reqPart(req, topicX, 0); rp.FetchOffset != 0 {
		t.Fatalf("the request after the failed append asks from %d in epoch %d: it was sent ahead of the append", rp.FetchOffset, rp.LastFetchedEpoch)
	}
	if n := <-appendedBefore; n < 1 {
		t.Fatal("a follower sent a request while its append was in progress")
	}
	r.answer(ep, response(req.Version, 9, ok(topicX, 0, 5, batch(t, 0, 4, 3))), nil)
	req = r.request(ep)
	if rp, _ := reqPart(req, topicX, 0); rp.FetchOffset != 3 {
		t.Fatalf("next request asks from %d", rp.FetchOffset)
	}
}

// pipelineSeeds are pairs of responses a pipelined fetcher receives back
// to back.
func pipelineSeeds(t testing.TB) [][2]*kmsg.FetchResponse {
	s := fuzzSeeds(t)
	next := response(16, 3, ok(topicX, 0, 6, batch(t, 3, 1, 3)), ok(topicX, 1, 2, batch(t, 0, 1, 2)))
	return [][2]*kmsg.FetchResponse{{s[0], next}, {s[1], s[0]}, {s[2], next}, {s[0], s[0]}}
}

// FuzzPipelined feeds two arbitrary Fetch response bodies (what a source
// broker controls) to a pipelined consumer fetcher the way runPipelined
// does: the second request is planned from the first response's predicted
// positions before that response is applied. Nothing may panic.
func FuzzPipelined(f *testing.F) {
	for _, pair := range pipelineSeeds(f) {
		f.Add(pair[0].Version, pair[0].AppendTo(nil), pair[1].AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, version int16, body1, body2 []byte) {
		if version < 12 || version > 17 {
			return
		}
		var resps [2]*kmsg.FetchResponse
		for i, body := range [][]byte{body1, body2} {
			resps[i] = kmsg.NewPtrFetchResponse()
			resps[i].Version = version
			if err := resps[i].ReadFrom(body); err != nil {
				return
			}
		}
		m, err := NewManager(Config{ReplicaID: -1, Pipeline: true, FetchVersion: version, Logger: testLogger(), NewEndpoint: (&rig{}).dialNothing})
		if err != nil {
			t.Fatal(err)
		}
		fe := newFetcher(m, fetcherKey{}, srcA)
		t0 := &memTarget{}
		if _, err := t0.Append(batch(t, 0, 1, 2)); err != nil {
			t.Fatal(err)
		}
		fe.add(AddPartition{TopicPartition: tpX0, TopicID: topicX, LeaderEpoch: 1, Source: srcA, Target: t0, FetchOffset: -1})
		fe.add(AddPartition{TopicPartition: tpX1, LeaderEpoch: 1, Source: srcA, Target: &memTarget{}, FetchOffset: -1})
		p1, _ := fe.plan(nil)
		if p1 == nil || !fe.received(p1, resps[0]) {
			return
		}
		ahead := fe.predict(p1, resps[0])
		p2, _ := fe.plan(ahead)
		fe.applyData(p1, resps[0])
		if p2 != nil && fe.received(p2, resps[1]) {
			fe.applyData(p2, resps[1])
		}
	})
}

// TestWritePipelineSeeds checks the committed seed corpus of FuzzPipelined
// against pipelineSeeds, and rewrites it when KMIRROR_WRITE_SEEDS=1.
func TestWritePipelineSeeds(t *testing.T) {
	want := map[string]string{}
	for i, pair := range pipelineSeeds(t) {
		want[fmt.Sprintf("seed-%02d", i)] = fmt.Sprintf("go test fuzz v1\nint16(%d)\n[]byte(%s)\n[]byte(%s)\n", pair[0].Version,
			strconv.Quote(string(pair[0].AppendTo(nil))), strconv.Quote(string(pair[1].AppendTo(nil))))
	}
	seedCorpus(t, filepath.Join("testdata", "fuzz", "FuzzPipelined"), want)
}
