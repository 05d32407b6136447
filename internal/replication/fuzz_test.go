package replication

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzSeeds are responses of every kind a fetcher handles.
func fuzzSeeds(t testing.TB) []*kmsg.FetchResponse {
	div := ok(topicX, 0, 4, nil)
	div.divEpoch, div.divEnd = 1, 3
	return []*kmsg.FetchResponse{
		response(16, 3, ok(topicX, 0, 3, batch(t, 0, 1, 3)), ok(topicX, 1, 0, nil)),
		response(16, 3, div, fail(topicX, 1, kerr.OffsetOutOfRange)),
		response(16, 0, fail(topicX, 0, kerr.FencedLeaderEpoch), fail(topicX, 1, kerr.NotLeaderForPartition)),
		response(12, 0, partResp{topic: "x", hw: 1, records: batch(t, 5, 2, 2), divEpoch: -1, divEnd: -1}),
	}
}

// FuzzApplyResponse feeds arbitrary Fetch response bodies (what a source
// broker controls) to a fetcher's response processing for two partitions:
// nothing may panic, whatever the records, offsets, epochs and errors.
func FuzzApplyResponse(f *testing.F) {
	for _, r := range fuzzSeeds(f) {
		f.Add(r.Version, r.AppendTo(nil))
	}
	f.Fuzz(func(t *testing.T, version int16, body []byte) {
		if version < 12 || version > 17 {
			return
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = version
		if err := resp.ReadFrom(body); err != nil {
			return
		}
		// The fetcher's goroutine never starts: the test drives plan and
		// apply itself.
		m, err := NewManager(Config{ReplicaID: 1, FetchVersion: version, Logger: testLogger(), NewEndpoint: (&rig{}).dialNothing})
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
		p, _ := fe.plan(nil)
		if p == nil {
			t.Fatal("no plan for ready partitions")
		}
		resets, _ := fe.apply(p, resp)
		fe.mu.Lock()
		for _, st := range resets {
			_ = fe.applyRange(st, OffsetRange{Start: 0, End: 1})
		}
		fe.mu.Unlock()
	})
}

// TestWriteFuzzSeeds rewrites the committed seed corpus when
// KMIRROR_WRITE_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("KMIRROR_WRITE_SEEDS") != "1" {
		t.Log("set KMIRROR_WRITE_SEEDS=1 to rewrite testdata/fuzz/FuzzApplyResponse")
		return
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzApplyResponse")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, r := range fuzzSeeds(t) {
		body := fmt.Sprintf("go test fuzz v1\nint16(%d)\n[]byte(%s)\n", r.Version, strconv.Quote(string(r.AppendTo(nil))))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
