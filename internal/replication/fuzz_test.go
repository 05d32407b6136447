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

// TestWriteFuzzSeeds checks the committed seed corpus of FuzzApplyResponse
// against fuzzSeeds, and rewrites it when KMIRROR_WRITE_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	want := map[string]string{}
	for i, r := range fuzzSeeds(t) {
		want[fmt.Sprintf("seed-%02d", i)] = fmt.Sprintf("go test fuzz v1\nint16(%d)\n[]byte(%s)\n", r.Version, strconv.Quote(string(r.AppendTo(nil))))
	}
	seedCorpus(t, filepath.Join("testdata", "fuzz", "FuzzApplyResponse"), want)
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
