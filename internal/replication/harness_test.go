package replication

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
)

func testLogger() *slog.Logger {
	if os.Getenv("KMIRROR_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// memTarget is an in-memory replica: batch boundaries, an epoch cache and
// the calls made to it.
type memTarget struct {
	mu        sync.Mutex
	logStart  int64
	leo       int64
	hw        int64
	epochs    []storage.EpochEntry
	calls     []string
	appendErr error
}

func (m *memTarget) record(format string, args ...any) {
	m.calls = append(m.calls, fmt.Sprintf(format, args...))
}

func (m *memTarget) Append(batches []byte) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.appendErr != nil {
		return -1, m.appendErr
	}
	last := int64(-1)
	for len(batches) > 0 {
		b, rest, err := record.NextBatch(batches)
		if errors.Is(err, record.ErrIncomplete) {
			break
		}
		if err != nil {
			return -1, err
		}
		batches = rest
		h, err := record.ParseHeader(b)
		if err != nil {
			return -1, err
		}
		if h.BaseOffset < m.leo {
			return -1, fmt.Errorf("batch at %d below the log end %d: %w", h.BaseOffset, m.leo, kerr.OffsetOutOfRange)
		}
		if n := len(m.epochs); n == 0 || m.epochs[n-1].Epoch < h.PartitionLeaderEpoch {
			m.epochs = append(m.epochs, storage.EpochEntry{Epoch: h.PartitionLeaderEpoch, StartOffset: h.BaseOffset})
		}
		m.leo = h.LastOffset() + 1
		last = h.LastOffset()
	}
	m.record("append %d", last)
	return last, nil
}

func (m *memTarget) Truncate(offset int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.record("truncate %d", offset)
	if offset >= m.leo {
		return nil
	}
	m.leo = offset
	for len(m.epochs) > 0 && m.epochs[len(m.epochs)-1].StartOffset >= offset {
		m.epochs = m.epochs[:len(m.epochs)-1]
	}
	m.hw = min(m.hw, m.leo)
	return nil
}

func (m *memTarget) TruncateFullyAndStartAt(offset int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.record("restart %d", offset)
	m.logStart, m.leo, m.hw, m.epochs = offset, offset, offset, nil
	return nil
}

func (m *memTarget) LogStartOffset() int64 { m.mu.Lock(); defer m.mu.Unlock(); return m.logStart }
func (m *memTarget) LogEndOffset() int64   { m.mu.Lock(); defer m.mu.Unlock(); return m.leo }

func (m *memTarget) LatestEpoch() (int32, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.epochs) == 0 {
		return 0, false
	}
	return m.epochs[len(m.epochs)-1].Epoch, true
}

func (m *memTarget) EndOffsetForEpoch(epoch int32) (int32, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := epochs{leo: m.leo}
	for _, e := range m.epochs {
		c.ents = append(c.ents, struct {
			epoch int32
			start int64
		}{e.Epoch, e.StartOffset})
	}
	return c.endOffsetFor(epoch)
}

func (m *memTarget) SetHighWatermark(hw int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hw = min(hw, m.leo)
}

func (m *memTarget) MaybeIncrementLogStartOffset(offset int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if offset > m.logStart && offset <= m.hw {
		m.logStart = offset
		m.record("log start %d", offset)
	}
}

func (m *memTarget) snapshot() (leo, hw, logStart int64, calls []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leo, m.hw, m.logStart, append([]string(nil), m.calls...)
}

// scriptEndpoint hands every request to the test and returns the answer
// the test gives: the test drives the fetcher one request at a time.
type scriptEndpoint struct {
	reqs   chan *kmsg.FetchRequest
	resps  chan fetchAnswer
	ranges chan []OffsetRange
	asked  chan []PartitionRef
	closed chan struct{}
	once   sync.Once
	// onFetch, when set, is called as each Fetch begins, before the test
	// sees the request.
	onFetch atomic.Pointer[func()]
}

type fetchAnswer struct {
	resp *kmsg.FetchResponse
	err  error
}

func newScriptEndpoint() *scriptEndpoint {
	return &scriptEndpoint{
		reqs: make(chan *kmsg.FetchRequest), resps: make(chan fetchAnswer),
		ranges: make(chan []OffsetRange), asked: make(chan []PartitionRef), closed: make(chan struct{}),
	}
}

func (e *scriptEndpoint) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	if h := e.onFetch.Load(); h != nil {
		(*h)()
	}
	select {
	case e.reqs <- req:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case a := <-e.resps:
		return a.resp, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e *scriptEndpoint) EarliestLatest(ctx context.Context, parts []PartitionRef) ([]OffsetRange, error) {
	select {
	case e.asked <- parts:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-e.ranges:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e *scriptEndpoint) Close() error {
	e.once.Do(func() { close(e.closed) })
	return nil
}

// rig is a manager whose endpoints are script endpoints the test drives.
type rig struct {
	t       *testing.T
	m       *Manager
	mu      sync.Mutex
	eps     []*scriptEndpoint
	dialErr error
	newEp   chan *scriptEndpoint
	fenced  chan storage.TopicPartition
}

func newRig(t *testing.T, mod func(*Config)) *rig {
	t.Helper()
	r := &rig{t: t, newEp: make(chan *scriptEndpoint, 16), fenced: make(chan storage.TopicPartition, 16)}
	cfg := Config{
		ReplicaID: 7, BrokerEpoch: func() int64 { return 42 }, ClientID: "test",
		MaxWait: 100 * time.Millisecond, Backoff: 5 * time.Millisecond, RequestTimeout: 10 * time.Second,
		Logger: testLogger(),
		NewEndpoint: func(ctx context.Context, s Source) (Endpoint, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.dialErr != nil {
				return nil, r.dialErr
			}
			ep := newScriptEndpoint()
			r.eps = append(r.eps, ep)
			r.newEp <- ep
			return ep, nil
		},
		OnFenced: func(tp storage.TopicPartition, err error) { r.fenced <- tp },
	}
	if mod != nil {
		mod(&cfg)
	}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.m = m
	t.Cleanup(func() { m.Close() })
	return r
}

const waitLimit = 10 * time.Second

// endpoint waits for the fetcher to open its next endpoint.
func (r *rig) endpoint() *scriptEndpoint {
	r.t.Helper()
	select {
	case ep := <-r.newEp:
		return ep
	case <-time.After(waitLimit):
		r.t.Fatal("no endpoint was opened")
	}
	return nil
}

// request waits for the fetcher's next request on ep.
func (r *rig) request(ep *scriptEndpoint) *kmsg.FetchRequest {
	r.t.Helper()
	select {
	case req := <-ep.reqs:
		return req
	case <-time.After(waitLimit):
		r.t.Fatal("no fetch request")
	}
	return nil
}

func (r *rig) answer(ep *scriptEndpoint, resp *kmsg.FetchResponse, err error) {
	r.t.Helper()
	select {
	case ep.resps <- fetchAnswer{resp: resp, err: err}:
	case <-time.After(waitLimit):
		r.t.Fatal("the fetcher did not take the answer")
	}
}

// batch builds a batch of n records at base in leader epoch epoch.
func batch(t testing.TB, base int64, epoch int32, n int) []byte {
	t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{Value: []byte(fmt.Sprintf("v%d", base+int64(i)))}
	}
	record.NumberRecords(recs)
	b, err := record.Build(record.BatchSpec{BaseOffset: base, PartitionLeaderEpoch: epoch, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		BaseTimestamp: 1_700_000_000_000}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// partResp is one partition of a scripted response.
type partResp struct {
	id        [16]byte
	topic     string
	partition int32
	code      int16
	hw        int64
	logStart  int64
	records   []byte
	divEpoch  int32
	divEnd    int64
}

func ok(id [16]byte, p int32, hw int64, records []byte) partResp {
	return partResp{id: id, partition: p, hw: hw, logStart: 0, records: records, divEpoch: -1, divEnd: -1}
}

func fail(id [16]byte, p int32, code *kerr.Error) partResp {
	return partResp{id: id, partition: p, code: code.Code, hw: -1, logStart: -1, divEpoch: -1, divEnd: -1}
}

func response(version int16, sessionID int32, parts ...partResp) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	resp.SessionID = sessionID
	for _, p := range parts {
		var rt *kmsg.FetchResponseTopic
		for i := range resp.Topics {
			if resp.Topics[i].TopicID == p.id && resp.Topics[i].Topic == p.topic {
				rt = &resp.Topics[i]
			}
		}
		if rt == nil {
			t := kmsg.NewFetchResponseTopic()
			t.TopicID, t.Topic = p.id, p.topic
			resp.Topics = append(resp.Topics, t)
			rt = &resp.Topics[len(resp.Topics)-1]
		}
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.ErrorCode, rp.HighWatermark, rp.LogStartOffset, rp.RecordBatches = p.partition, p.code, p.hw, p.logStart, p.records
		rp.LastStableOffset = p.hw
		rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = p.divEpoch, p.divEnd
		rt.Partitions = append(rt.Partitions, rp)
	}
	return resp
}

// reqPart finds a partition in a request.
func reqPart(req *kmsg.FetchRequest, id [16]byte, p int32) (kmsg.FetchRequestTopicPartition, bool) {
	for _, t := range req.Topics {
		if t.TopicID != id {
			continue
		}
		for _, rp := range t.Partitions {
			if rp.Partition == p {
				return rp, true
			}
		}
	}
	return kmsg.FetchRequestTopicPartition{}, false
}

// waitFor polls cond until it holds (the fetcher works on its own
// goroutine; there is no event to wait on for "the response was applied"
// other than the next request, which not every case produces).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// dialNothing is a NewEndpoint for managers whose fetchers never run.
func (r *rig) dialNothing(context.Context, Source) (Endpoint, error) {
	return nil, errors.New("no endpoints in this test")
}
