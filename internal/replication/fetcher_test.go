package replication

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/storage"
)

var (
	topicX = [16]byte{0: 0xAA, 15: 1}
	tpX0   = storage.TopicPartition{Topic: "x", Partition: 0}
	tpX1   = storage.TopicPartition{Topic: "x", Partition: 1}
	srcA   = Source{BrokerID: 1, Addr: "a:1"}
)

func addX(r *rig, tp storage.TopicPartition, epoch int32, target Target, src Source) {
	r.t.Helper()
	if err := r.m.AddPartitions(AddPartition{TopicPartition: tp, TopicID: topicX, LeaderEpoch: epoch, Source: src, Target: target, FetchOffset: -1}); err != nil {
		r.t.Fatal(err)
	}
}

func TestFetcherFollowsTheLeader(t *testing.T) {
	r := newRig(t, nil)
	tgt := &memTarget{}
	addX(r, tpX0, 3, tgt, srcA)
	ep := r.endpoint()

	req := r.request(ep)
	if req.Version != defaultFetchVersion || req.ReplicaState.ID != 7 || req.ReplicaState.Epoch != 42 || req.SessionEpoch != 0 || req.SessionID != 0 {
		t.Fatalf("first request: v%d replica %+v session %d/%d", req.Version, req.ReplicaState, req.SessionID, req.SessionEpoch)
	}
	rp, found := reqPart(req, topicX, 0)
	if !found || rp.FetchOffset != 0 || rp.LastFetchedEpoch != -1 || rp.CurrentLeaderEpoch != 3 || rp.LogStartOffset != 0 {
		t.Fatalf("first request partition %+v (found %v)", rp, found)
	}
	r.answer(ep, response(req.Version, 9, ok(topicX, 0, 2, batch(t, 0, 3, 3))), nil)

	req = r.request(ep)
	if req.SessionID != 9 || req.SessionEpoch != 1 {
		t.Fatalf("second request is not incremental: session %d/%d", req.SessionID, req.SessionEpoch)
	}
	rp, found = reqPart(req, topicX, 0)
	if !found || rp.FetchOffset != 3 || rp.LastFetchedEpoch != 3 {
		t.Fatalf("second request partition %+v (found %v)", rp, found)
	}
	if leo, hw, _, calls := tgt.snapshot(); leo != 3 || hw != 2 || !slices.Equal(calls, []string{"append 2"}) {
		t.Fatalf("target after records: leo %d hw %d calls %v", leo, hw, calls)
	}
	// The leader's high watermark and log start move without new records.
	resp := response(req.Version, 9, ok(topicX, 0, 3, nil))
	resp.Topics[0].Partitions[0].LogStartOffset = 1
	r.answer(ep, resp, nil)
	req = r.request(ep)
	if _, hw, start, _ := tgt.snapshot(); hw != 3 || start != 1 {
		t.Fatalf("target hw %d log start %d, want 3 and 1", hw, start)
	}
	// Only the changed log start brings the partition back into the
	// incremental request.
	if rp, found = reqPart(req, topicX, 0); !found || rp.LogStartOffset != 1 || rp.FetchOffset != 3 {
		t.Fatalf("third request partition %+v (found %v)", rp, found)
	}
	st, _ := r.m.Status(tpX0)
	if st.State != StateFetching || st.SourceHighWatermark != 3 || st.FetchOffset != 3 || st.LastError != nil {
		t.Fatalf("status %+v", st)
	}
}

// TestFetcherPartitionOutcomes drives one partition through one answer
// each and checks what the fetcher did to the target and where it fetches
// next.
func TestFetcherPartitionOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		// local is the target's log before the fetch: batches of
		// (base, epoch, count).
		local [][3]int64
		// answer is the partition's answer.
		answer partResp
		// ranges answers the log range question, if one is expected.
		ranges   *OffsetRange
		appendEr error
		// wantCalls are the target's calls; wantOffset and wantEpoch the
		// next request's fetch position; wantState the state after.
		wantCalls  []string
		wantOffset int64
		wantEpoch  int32
		wantState  State
		wantErr    *kerr.Error
	}{
		{
			name:   "records are appended",
			answer: ok(topicX, 0, 3, batch(t, 0, 5, 3)), wantCalls: []string{"append 2"}, wantOffset: 3, wantEpoch: 5,
		},
		{
			name:   "a diverging epoch truncates where the logs stop agreeing",
			local:  [][3]int64{{0, 1, 5}, {5, 3, 5}},
			answer: partResp{id: topicX, hw: 7, divEpoch: 1, divEnd: 7}, wantCalls: []string{"truncate 5"}, wantOffset: 5, wantEpoch: 1,
		},
		{
			name:   "a diverging epoch we skipped truncates to our older epoch's end",
			local:  [][3]int64{{0, 1, 5}, {5, 3, 5}},
			answer: partResp{id: topicX, hw: 7, divEpoch: 2, divEnd: 9}, wantCalls: []string{"truncate 5"}, wantOffset: 5, wantEpoch: 1,
		},
		{
			name:   "out of range with a shorter leader truncates to its end",
			local:  [][3]int64{{0, 1, 10}},
			answer: fail(topicX, 0, kerr.OffsetOutOfRange), ranges: &OffsetRange{Start: 0, End: 6},
			wantCalls: []string{"truncate 6"}, wantOffset: 6, wantEpoch: 1,
		},
		{
			name:   "out of range below the leader's log start restarts empty there",
			local:  [][3]int64{{0, 1, 10}},
			answer: fail(topicX, 0, kerr.OffsetOutOfRange), ranges: &OffsetRange{Start: 50, End: 60},
			wantCalls: []string{"restart 50"}, wantOffset: 50, wantEpoch: -1,
		},
		{
			name:   "out of range that resolves to nothing backs off",
			local:  [][3]int64{{0, 1, 10}},
			answer: fail(topicX, 0, kerr.OffsetOutOfRange), ranges: &OffsetRange{Start: 0, End: 20},
			wantOffset: 10, wantEpoch: 1, wantErr: kerr.OffsetOutOfRange,
		},
		{
			name:   "not the leader yet: back off and retry",
			answer: fail(topicX, 0, kerr.NotLeaderForPartition), wantOffset: 0, wantEpoch: -1, wantErr: kerr.NotLeaderForPartition,
		},
		{
			name:   "the leader's metadata lags: back off and retry",
			answer: fail(topicX, 0, kerr.UnknownLeaderEpoch), wantOffset: 0, wantEpoch: -1, wantErr: kerr.UnknownLeaderEpoch,
		},
		{
			name:   "a failed append backs off and refetches the same offset",
			answer: ok(topicX, 0, 3, batch(t, 0, 5, 3)), appendEr: kerr.CorruptMessage, wantOffset: 0, wantEpoch: -1, wantErr: kerr.CorruptMessage,
		},
		{
			name:   "fenced: the partition waits for new metadata",
			answer: fail(topicX, 0, kerr.FencedLeaderEpoch), wantState: StateFenced, wantErr: kerr.FencedLeaderEpoch,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil)
			tgt := &memTarget{}
			for _, b := range tc.local {
				if _, err := tgt.Append(batch(t, b[0], int32(b[1]), int(b[2]))); err != nil {
					t.Fatal(err)
				}
			}
			tgt.calls = nil
			addX(r, tpX0, 5, tgt, srcA)
			ep := r.endpoint()
			req := r.request(ep)
			tgt.mu.Lock()
			tgt.appendErr = tc.appendEr
			tgt.mu.Unlock()
			r.answer(ep, response(req.Version, 0, tc.answer), nil)
			if tc.ranges != nil {
				select {
				case asked := <-ep.asked:
					if len(asked) != 1 || asked[0].TopicPartition != tpX0 || asked[0].LeaderEpoch != 5 {
						t.Fatalf("log range asked for %+v", asked)
					}
				case <-time.After(waitLimit):
					t.Fatal("the fetcher did not ask for the log range")
				}
				ep.ranges <- []OffsetRange{*tc.ranges}
			}
			if tc.wantState == StateFenced {
				select {
				case tp := <-r.fenced:
					if tp != tpX0 {
						t.Fatalf("fenced %v", tp)
					}
				case <-time.After(waitLimit):
					t.Fatal("OnFenced was not called")
				}
				st, _ := r.m.Status(tpX0)
				if st.State != StateFenced || !errors.Is(st.LastError, tc.wantErr) {
					t.Fatalf("status %+v", st)
				}
				// No request while fenced; adding it again with newer
				// metadata resumes it.
				select {
				case req := <-ep.reqs:
					t.Fatalf("a fenced partition was fetched: %+v", req)
				case <-time.After(20 * time.Millisecond):
				}
				addX(r, tpX0, 6, tgt, srcA)
				req = r.request(ep)
				if rp, found := reqPart(req, topicX, 0); !found || rp.CurrentLeaderEpoch != 6 {
					t.Fatalf("re-added partition %+v (found %v)", rp, found)
				}
				return
			}
			if tc.wantErr != nil {
				waitFor(t, "the error in the status", func() bool {
					st, _ := r.m.Status(tpX0)
					return errors.Is(st.LastError, tc.wantErr)
				})
				tgt.mu.Lock()
				tgt.appendErr = nil
				tgt.mu.Unlock()
			}
			req = r.request(ep)
			rp, found := reqPart(req, topicX, 0)
			if !found || rp.FetchOffset != tc.wantOffset || rp.LastFetchedEpoch != tc.wantEpoch {
				t.Fatalf("next request partition %+v (found %v), want offset %d epoch %d", rp, found, tc.wantOffset, tc.wantEpoch)
			}
			if _, _, _, calls := tgt.snapshot(); !slices.Equal(calls, tc.wantCalls) {
				t.Fatalf("target calls %v, want %v", calls, tc.wantCalls)
			}
		})
	}
}

func TestFetcherReconnectsAfterANetworkError(t *testing.T) {
	r := newRig(t, nil)
	tgt := &memTarget{}
	addX(r, tpX0, 1, tgt, srcA)
	ep := r.endpoint()
	req := r.request(ep)
	r.answer(ep, response(req.Version, 9, ok(topicX, 0, 3, batch(t, 0, 1, 3))), nil)
	req = r.request(ep)
	if req.SessionEpoch != 1 {
		t.Fatalf("session epoch %d", req.SessionEpoch)
	}
	r.answer(ep, nil, errors.New("connection reset"))
	select {
	case <-ep.closed:
	case <-time.After(waitLimit):
		t.Fatal("the broken endpoint was not closed")
	}
	ep2 := r.endpoint()
	req = r.request(ep2)
	// The session's state is unknown after a failure: a full fetch that
	// closes session 9 and opens a new one, from where it stood.
	if req.SessionID != 9 || req.SessionEpoch != 0 {
		t.Fatalf("request after reconnecting: session %d/%d", req.SessionID, req.SessionEpoch)
	}
	if rp, found := reqPart(req, topicX, 0); !found || rp.FetchOffset != 3 {
		t.Fatalf("request after reconnecting %+v", rp)
	}
}

func TestFetcherDialFailureBacksOff(t *testing.T) {
	r := newRig(t, nil)
	r.mu.Lock()
	r.dialErr = errors.New("connection refused")
	r.mu.Unlock()
	tgt := &memTarget{}
	addX(r, tpX0, 1, tgt, srcA)
	waitFor(t, "the dial error in the status", func() bool {
		st, _ := r.m.Status(tpX0)
		return st.LastError != nil && st.State == StateDelayed
	})
	r.mu.Lock()
	r.dialErr = nil
	r.mu.Unlock()
	ep := r.endpoint()
	if rp, found := reqPart(r.request(ep), topicX, 0); !found || rp.FetchOffset != 0 {
		t.Fatalf("request after the dial error %+v", rp)
	}
}

func TestRemoveStopsTargetCalls(t *testing.T) {
	r := newRig(t, nil)
	tgt := &memTarget{}
	addX(r, tpX0, 1, tgt, srcA)
	ep := r.endpoint()
	req := r.request(ep)
	// The request is in flight; removal does not wait for it.
	r.m.RemovePartitions(tpX0)
	if _, ok := r.m.Status(tpX0); ok {
		t.Fatal("a removed partition has a status")
	}
	// The late answer is dropped, and the idle fetcher stops.
	select {
	case ep.resps <- fetchAnswer{resp: response(req.Version, 0, ok(topicX, 0, 3, batch(t, 0, 1, 3)))}:
	case <-ep.closed:
	case <-time.After(waitLimit):
		t.Fatal("the fetcher neither took the answer nor stopped")
	}
	select {
	case <-ep.closed:
	case <-time.After(waitLimit):
		t.Fatal("the fetcher without partitions kept its endpoint")
	}
	if _, _, _, calls := tgt.snapshot(); len(calls) != 0 {
		t.Fatalf("a removed partition's target was called: %v", calls)
	}
	if n := r.m.NumFetchers(); n != 0 {
		t.Fatalf("%d fetchers left", n)
	}
}

func TestIncrementalSessionSendsChangesAndForgets(t *testing.T) {
	r := newRig(t, nil)
	t0, t1 := &memTarget{}, &memTarget{}
	addX(r, tpX0, 1, t0, srcA)
	ep := r.endpoint()
	req := r.request(ep)
	addX(r, tpX1, 1, t1, srcA)
	r.answer(ep, response(req.Version, 0, ok(topicX, 0, 0, nil)), nil) // no session yet
	req = r.request(ep)
	if req.SessionEpoch != 0 || len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 2 {
		t.Fatalf("full request %+v", req)
	}
	r.answer(ep, response(req.Version, 5, ok(topicX, 0, 3, batch(t, 0, 1, 3))), nil)
	req = r.request(ep)
	if req.SessionID != 5 || req.SessionEpoch != 1 || len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].Partition != 0 {
		t.Fatalf("incremental request should carry only partition 0: %+v", req.Topics)
	}
	r.m.RemovePartitions(tpX1)
	r.answer(ep, response(req.Version, 5), nil)
	req = r.request(ep)
	if len(req.Topics) != 0 || len(req.ForgottenTopics) != 1 || !slices.Equal(req.ForgottenTopics[0].Partitions, []int32{1}) {
		t.Fatalf("request after removing partition 1: topics %+v forgotten %+v", req.Topics, req.ForgottenTopics)
	}
}

func TestFetcherNamesTopicsWithoutIDs(t *testing.T) {
	r := newRig(t, nil)
	tgt := &memTarget{}
	if err := r.m.AddPartitions(AddPartition{TopicPartition: tpX0, LeaderEpoch: 1, Source: srcA, Target: tgt, FetchOffset: -1}); err != nil {
		t.Fatal(err)
	}
	ep := r.endpoint()
	req := r.request(ep)
	if req.Version != 12 || len(req.Topics) != 1 || req.Topics[0].Topic != "x" {
		t.Fatalf("request without topic ids: v%d %+v", req.Version, req.Topics)
	}
	r.answer(ep, response(12, 0, partResp{topic: "x", hw: 1, records: batch(t, 0, 1, 1), divEpoch: -1, divEnd: -1}), nil)
	waitFor(t, "the append", func() bool { leo, _, _, _ := tgt.snapshot(); return leo == 1 })
}

func TestSourceAddressChangeReconnects(t *testing.T) {
	r := newRig(t, nil)
	tgt := &memTarget{}
	addX(r, tpX0, 1, tgt, srcA)
	ep := r.endpoint()
	req := r.request(ep)
	moved := srcA
	moved.Addr = "a:2"
	addX(r, tpX0, 1, tgt, moved)
	r.answer(ep, response(req.Version, 0), nil)
	ep2 := r.endpoint()
	<-ep.closed
	if _, found := reqPart(r.request(ep2), topicX, 0); !found {
		t.Fatal("the moved partition was not fetched from the new address")
	}
	if st, _ := r.m.Status(tpX0); st.Source != moved {
		t.Fatalf("status source %v", st.Source)
	}
}

func TestFetchersPerSource(t *testing.T) {
	r := newRig(t, func(c *Config) { c.NumFetchers = 2 })
	if fetcherID(tpX0, 2) == fetcherID(tpX1, 2) {
		t.Fatal("the test needs partitions on different fetchers")
	}
	addX(r, tpX0, 1, &memTarget{}, srcA)
	addX(r, tpX1, 1, &memTarget{}, srcA)
	addX(r, storage.TopicPartition{Topic: "x", Partition: 2}, 1, &memTarget{}, Source{BrokerID: 2, Addr: "b:1"})
	if n := r.m.NumFetchers(); n != 3 {
		t.Fatalf("%d fetchers, want 2 for broker 1 and 1 for broker 2", n)
	}
	// Moving a partition to another source moves it to that source's
	// fetcher.
	addX(r, tpX1, 2, &memTarget{}, Source{BrokerID: 2, Addr: "b:1"})
	if st, _ := r.m.Status(tpX1); st.Source.BrokerID != 2 || st.LeaderEpoch != 2 {
		t.Fatalf("moved partition status %+v", st)
	}
	r.m.RemovePartitions(tpX0, tpX1, storage.TopicPartition{Topic: "x", Partition: 2})
	if n := r.m.NumFetchers(); n != 0 || len(r.m.Partitions()) != 0 {
		t.Fatalf("%d fetchers and %v left", n, r.m.Partitions())
	}
}

func TestFetcherIDMatchesKafka(t *testing.T) {
	// Java: abs(31 * topic.hashCode() + p) % n in 32-bit arithmetic;
	// "topic".hashCode() = 110546223, and 31 times it overflows to
	// -868034383.
	for _, tc := range []struct {
		tp   storage.TopicPartition
		n    int
		want int
	}{
		{storage.TopicPartition{Topic: "topic", Partition: 0}, 3, 868034383 % 3},
		{storage.TopicPartition{Topic: "__consumer_offsets", Partition: 7}, 5, 16741360 % 5},
		{storage.TopicPartition{Topic: "a", Partition: 1}, 4, (31*97 + 1) % 4},
	} {
		if got := fetcherID(tc.tp, tc.n); got != tc.want {
			t.Errorf("fetcherID(%v, %d) = %d, want %d", tc.tp, tc.n, got, tc.want)
		}
	}
}

func TestThrottledFetcherWaits(t *testing.T) {
	lim := NewRateLimiter(100_000)
	r := newRig(t, func(c *Config) { c.Limiter = lim })
	tgt := &memTarget{}
	addX(r, tpX0, 1, tgt, srcA)
	ep := r.endpoint()
	req := r.request(ep)
	big := batch(t, 0, 1, 1)
	// 120 kB against a 100 kB bucket: 20 kB of debt, 0.2 s at 100 kB/s.
	resp := response(req.Version, 0, ok(topicX, 0, 1, big))
	resp.Topics[0].Partitions[0].RecordBatches = append(big, make([]byte, 120_000-len(big))...)
	start := time.Now()
	r.answer(ep, resp, nil)
	r.request(ep)
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Fatalf("the next request came after %v despite 20 kB of debt at 100 kB/s", el)
	}
}

// TestTopLevelErrorBacksOff: a response error that is not about the
// session delays every partition of the request.
func TestTopLevelErrorBacksOff(t *testing.T) {
	r := newRig(t, nil)
	addX(r, tpX0, 1, &memTarget{}, srcA)
	ep := r.endpoint()
	req := r.request(ep)
	resp := response(req.Version, 0)
	resp.ErrorCode = kerr.UnknownServerError.Code
	r.answer(ep, resp, nil)
	waitFor(t, "the delayed state", func() bool {
		st, _ := r.m.Status(tpX0)
		return errors.Is(st.LastError, kerr.UnknownServerError)
	})
	r.request(ep)
}
