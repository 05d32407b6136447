package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/replication"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// The tests run a Broker over a real storage.Manager in a temporary
// directory, a small in-test metadata source that replays records onto a
// metadata.Image and calls publishers synchronously, and an in-test
// controller that turns admin requests into metadata records.

const testNode = 1

func quietLogger() *slog.Logger {
	if os.Getenv("KMIRROR_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testMeta is a MetadataSource over an in-memory image.
type testMeta struct {
	mu       sync.Mutex
	img      *metadata.Image
	offset   uint64
	pubs     []metadata.Publisher
	pubMu    sync.Mutex // serialises publisher calls, as the quorum does
	leaderID int32
	// lagged, when set, takes the publications instead of apply: a
	// goroutine delivers each one late, in order, as the quorum's
	// publisher goroutine may trail the image it applied (lagPublications).
	lagged chan func()
}

// lagPublications makes every later change reach the publishers lag after
// the image shows it.
func (m *testMeta) lagPublications(t testing.TB, lag time.Duration) {
	ch := make(chan func(), 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for publish := range ch {
			time.Sleep(lag)
			publish()
		}
	}()
	m.mu.Lock()
	m.lagged = ch
	m.mu.Unlock()
	t.Cleanup(func() {
		m.mu.Lock()
		m.lagged = nil
		m.mu.Unlock()
		close(ch)
		<-done
	})
}

func (m *testMeta) Image() *metadata.Image {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.img
}

func (m *testMeta) AddPublisher(p metadata.Publisher) {
	m.pubMu.Lock()
	defer m.pubMu.Unlock()
	m.mu.Lock()
	img := m.img
	m.pubs = append(m.pubs, p)
	m.mu.Unlock()
	p.OnMetadataUpdate(metadata.Diff(metadata.EmptyImage(), img), img)
}

func (m *testMeta) Leader() (int32, string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leaderID, "", m.leaderID >= 0
}

// apply replays records as one metadata log entry and publishes the delta.
func (m *testMeta) apply(rs ...metadata.Record) error {
	m.pubMu.Lock()
	defer m.pubMu.Unlock()
	m.mu.Lock()
	d := metadata.NewDelta(m.img)
	m.offset++
	for _, r := range rs {
		if err := d.Replay(r, m.offset); err != nil {
			m.mu.Unlock()
			return err
		}
	}
	img := d.Apply()
	m.img = img
	pubs := append([]metadata.Publisher(nil), m.pubs...)
	lagged := m.lagged
	m.mu.Unlock()
	publish := func() {
		for _, p := range pubs {
			p.OnMetadataUpdate(d, img)
		}
	}
	if lagged != nil {
		lagged <- publish
		return nil
	}
	publish()
	return nil
}

func (m *testMeta) mustApply(t testing.TB, rs ...metadata.Record) {
	t.Helper()
	if err := m.apply(rs...); err != nil {
		t.Fatal(err)
	}
}

// testController answers the controller requests the broker sends by
// writing metadata records.
type testController struct {
	meta *testMeta

	mu        sync.Mutex
	fail      error // every Send fails with it
	allocs    int   // AllocateProducerIds requests served
	creates   int   // CreateTopics requests served
	replicas  []int32
	blockSize int32
	alters    []*kmsg.AlterPartitionRequest // AlterPartition requests served
}

// alterRequests returns the AlterPartition requests served so far.
func (c *testController) alterRequests() []*kmsg.AlterPartitionRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*kmsg.AlterPartitionRequest(nil), c.alters...)
}

// alterPartition applies a leader's ISR change as the controller would
// when it is valid (its partition epoch current), without the rest of the
// controller's checks (package controller tests those).
func (c *testController) alterPartition(r *kmsg.AlterPartitionRequest) *kmsg.AlterPartitionResponse {
	c.mu.Lock()
	c.alters = append(c.alters, r)
	c.mu.Unlock()
	resp := r.ResponseKind().(*kmsg.AlterPartitionResponse)
	img := c.meta.Image()
	for _, t := range r.Topics {
		rt := kmsg.NewAlterPartitionResponseTopic()
		rt.Topic, rt.TopidID = t.Topic, t.TopicID
		top, ok := img.TopicByID(metadata.Uuid(t.TopicID))
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionResponseTopicPartition()
			rp.Partition = p.Partition
			st, exists := metadata.PartitionState{}, false
			if ok {
				st, exists = top.Partition(p.Partition)
			}
			switch {
			case !exists:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case p.LeaderEpoch != st.LeaderEpoch:
				rp.ErrorCode = kerr.FencedLeaderEpoch.Code
			case p.PartitionEpoch != st.PartitionEpoch:
				rp.ErrorCode = kerr.InvalidUpdateVersion.Code
			default:
				var isr []int32
				for _, e := range p.NewEpochISR {
					isr = append(isr, e.BrokerID)
				}
				rs := metadata.LeaderRecoveryState(p.LeaderRecoveryState)
				if err := c.meta.apply(&metadata.PartitionChangeRecord{TopicID: top.ID, Partition: p.Partition, ISR: isr, LeaderRecoveryState: &rs}); err != nil {
					rp.ErrorCode = kerr.InvalidRequest.Code
					break
				}
				rp.LeaderID, rp.LeaderEpoch, rp.ISR, rp.PartitionEpoch = st.Leader, st.LeaderEpoch, isr, st.PartitionEpoch+1
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *testController) setFail(err error) {
	c.mu.Lock()
	c.fail = err
	c.mu.Unlock()
}

func (c *testController) Send(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	switch r := req.(type) {
	case *kmsg.AlterPartitionRequest:
		return c.alterPartition(r), nil
	case *kmsg.CreateTopicsRequest:
		c.mu.Lock()
		c.creates++
		replicas := c.replicas
		c.mu.Unlock()
		resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic = t.Topic
			if _, ok := c.meta.Image().Topic(t.Topic); ok {
				rt.ErrorCode = kerr.TopicAlreadyExists.Code
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			n := t.NumPartitions
			if n <= 0 {
				n = 1
			}
			if n > 64 {
				rt.ErrorCode = kerr.InvalidPartitions.Code
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			id := metadata.RandomUuid()
			rs := []metadata.Record{&metadata.TopicRecord{Name: t.Topic, ID: id}}
			for p := int32(0); p < n; p++ {
				rs = append(rs, &metadata.PartitionRecord{TopicID: id, Partition: p, PartitionState: metadata.PartitionState{
					Replicas: replicas, ISR: replicas, Leader: replicas[0]}})
			}
			for _, cfg := range t.Configs {
				if cfg.Value != nil {
					rs = append(rs, metadata.SetConfig(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: t.Topic}, cfg.Name, *cfg.Value))
				}
			}
			if !r.ValidateOnly {
				if err := c.meta.apply(rs...); err != nil {
					rt.ErrorCode = kerr.InvalidRequest.Code
					msg := err.Error()
					rt.ErrorMessage = &msg
				}
			}
			rt.TopicID = id
			rt.NumPartitions = n
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.AllocateProducerIDsRequest:
		c.mu.Lock()
		c.allocs++
		size := c.blockSize
		c.mu.Unlock()
		if size == 0 {
			size = 1000
		}
		resp := r.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
		next := c.meta.Image().NextProducerID()
		if err := c.meta.apply(&metadata.ProducerIdsRecord{BrokerID: r.BrokerID, BrokerEpoch: r.BrokerEpoch, NextProducerID: next + int64(size)}); err != nil {
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			return resp, nil
		}
		resp.ProducerIDStart, resp.ProducerIDLen = next, size
		return resp, nil
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		var rs []metadata.Record
		for _, res := range r.Resources {
			cr := metadata.ConfigResource{Type: int8(res.ResourceType), Name: res.ResourceName}
			for _, c := range res.Configs {
				switch c.Op {
				case kmsg.IncrementalAlterConfigOpSet:
					if c.Value != nil {
						rs = append(rs, metadata.SetConfig(cr, c.Name, *c.Value))
					}
				case kmsg.IncrementalAlterConfigOpDelete:
					rs = append(rs, metadata.RemoveConfig(cr, c.Name))
				}
			}
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
			resp.Resources = append(resp.Resources, rr)
		}
		if err := c.meta.apply(rs...); err != nil {
			for i := range resp.Resources {
				resp.Resources[i].ErrorCode = kerr.InvalidConfig.Code
			}
		}
		return resp, nil
	case *kmsg.DeleteTopicsRequest:
		resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
		for _, n := range r.TopicNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			name := n
			rt.Topic = &name
			if t, ok := c.meta.Image().Topic(n); ok {
				if err := c.meta.apply(&metadata.RemoveTopicRecord{ID: t.ID}); err != nil {
					rt.ErrorCode = kerr.InvalidRequest.Code
				}
			} else {
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	return nil, fmt.Errorf("test controller: unexpected %T", req)
}

// env is a broker under test.
type env struct {
	t    testing.TB
	dir  string
	cfg  *config.Config
	mgr  *storage.Manager
	meta *testMeta
	ctrl *testController
	b    *Broker
	rc   *wire.RequestContext

	closeOnce sync.Once
}

// newEnv starts a broker (node 1, registered and unfenced, with endpoints
// on PLAINTEXT) with the given config overrides.
func newEnv(t testing.TB, overrides map[string]string) *env {
	t.Helper()
	return newEnvInDir(t, t.TempDir(), overrides)
}

// newEnvWithImage starts a broker over an existing log directory with an
// existing metadata image (a restart).
func newEnvWithImage(t testing.TB, dir string, img *metadata.Image, overrides map[string]string) *env {
	t.Helper()
	return startEnv(t, dir, overrides, img)
}

func newEnvInDir(t testing.TB, dir string, overrides map[string]string) *env {
	t.Helper()
	return startEnv(t, dir, overrides, nil)
}

func startEnv(t testing.TB, dir string, overrides map[string]string, img *metadata.Image) *env {
	t.Helper()
	return startEnvAs(t, dir, overrides, img, metadata.Uuid{})
}

// startEnvAs is startEnv for a broker process of the given incarnation
// (Deps.Incarnation; zero: none), broker 1 registered with it.
func startEnvAs(t testing.TB, dir string, overrides map[string]string, img *metadata.Image, incarnation metadata.Uuid) *env {
	t.Helper()
	reg1 := incarnation
	if reg1.IsZero() {
		reg1 = metadata.RandomUuid()
	}
	ov := map[string]string{"node.id": "1", "log.dirs": dir}
	maps.Copy(ov, overrides)
	cfg, _, err := config.Load("", nil, ov)
	if err != nil {
		t.Fatal(err)
	}
	clusterID := "test-cluster-0000000001"
	mgr, err := storage.NewManager(storage.ManagerConfig{
		Dirs: []string{dir}, Defaults: storage.DefaultLogConfig(), ClusterID: clusterID, NodeID: testNode, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	meta := &testMeta{img: metadata.EmptyImage(), leaderID: -1}
	if img != nil {
		meta.img, meta.offset = img, img.Offset()
	} else {
		meta.mustApply(t,
			&metadata.RegisterBrokerRecord{BrokerRegistration: metadata.BrokerRegistration{
				ID: 1, Epoch: 10, IncarnationID: reg1,
				Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9092}},
			}},
			&metadata.RegisterBrokerRecord{BrokerRegistration: metadata.BrokerRegistration{
				ID: 2, Epoch: 11, IncarnationID: metadata.RandomUuid(), Rack: "rack-b",
				Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "broker2", Port: 9192}},
			}},
		)
	}
	ctrl := &testController{meta: meta, replicas: []int32{testNode}}
	// Follower partitions' fetchers find no leader to connect to: tests
	// drive replication by sending follower fetches themselves.
	noLeaders := func(context.Context, replication.Source) (replication.Endpoint, error) {
		return nil, errors.New("broker tests run no leaders")
	}
	b, err := New(Config{NodeID: testNode, Cfg: cfg, Logger: quietLogger()}, Deps{Logs: mgr, Metadata: meta, Controller: ctrl, ClusterID: clusterID, ReplicaEndpoint: noLeaders,
		Incarnation: incarnation})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, dir: dir, cfg: cfg, mgr: mgr, meta: meta, ctrl: ctrl, b: b,
		rc: &wire.RequestContext{Listener: "PLAINTEXT", Principal: wire.AnonymousPrincipal}}
	t.Cleanup(e.close)
	return e
}

// close stops the broker and shuts the storage manager down cleanly (once).
func (e *env) close() {
	e.closeOnce.Do(func() {
		e.b.Close()
		if err := e.mgr.Shutdown(); err != nil {
			e.t.Errorf("storage shutdown: %v", err)
		}
	})
}

// call serves req with the broker's handler for its key.
func (e *env) call(req kmsg.Request) wire.Response {
	e.t.Helper()
	resp, err := e.callErr(context.Background(), req)
	if err != nil {
		e.t.Fatalf("%T: %v", req, err)
	}
	return resp
}

func (e *env) callErr(ctx context.Context, req kmsg.Request) (wire.Response, error) {
	for _, api := range e.b.APIs() {
		if api.Key == req.Key() {
			if v := req.GetVersion(); v < api.MinVersion || v > api.MaxVersion {
				return nil, fmt.Errorf("version %d of key %d not served", v, req.Key())
			}
			return api.Handle(ctx, e.rc, req)
		}
	}
	return nil, fmt.Errorf("key %d not served", req.Key())
}

// createTopic creates a topic through the broker's CreateTopics handler.
func (e *env) createTopic(name string, partitions int32, configs map[string]string) metadata.Uuid {
	e.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = 5000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, 1
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	resp := e.call(req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		e.t.Fatalf("create %s: %+v", name, resp.Topics)
	}
	if _, ok := e.b.rm.Image().Topic(name); !ok {
		e.t.Fatalf("CreateTopics returned before the broker applied %s", name)
	}
	return metadata.Uuid(resp.Topics[0].TopicID)
}

func (e *env) partition(topic string, p int32) *Partition {
	e.t.Helper()
	part, ok := e.b.rm.Partition(storage.TopicPartition{Topic: topic, Partition: p})
	if !ok {
		e.t.Fatalf("no partition %s-%d", topic, p)
	}
	return part
}

// batchOpts describe a test batch.
type batchOpts struct {
	codec     record.Codec
	pid       int64
	epoch     int16
	seq       int32
	txn       bool
	timestamp int64
}

func plainBatch() batchOpts {
	return batchOpts{pid: -1, epoch: -1, seq: -1, timestamp: 1_700_000_000_000}
}

// makeBatch builds a v2 batch of values.
func makeBatch(t testing.TB, o batchOpts, values ...string) []byte {
	t.Helper()
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v), TimestampDelta: int64(i)}
	}
	record.NumberRecords(recs)
	if o.timestamp == 0 {
		o.timestamp = 1_700_000_000_000
	}
	b, err := record.Build(record.BatchSpec{
		ProducerID: o.pid, ProducerEpoch: o.epoch, BaseSequence: o.seq, Transactional: o.txn,
		Codec: o.codec, BaseTimestamp: o.timestamp,
	}, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// produce sends one batch to one partition.
func (e *env) produce(version int16, acks int16, topic string, p int32, batch []byte) kmsg.ProduceResponseTopicPartition {
	e.t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = p, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := e.call(req).(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		e.t.Fatalf("produce response shape: %+v", resp)
	}
	return resp.Topics[0].Partitions[0]
}

// mustProduce produces and fails the test on an error code.
func (e *env) mustProduce(topic string, p int32, batch []byte) int64 {
	e.t.Helper()
	rp := e.produce(11, -1, topic, p, batch)
	if rp.ErrorCode != 0 {
		e.t.Fatalf("produce to %s-%d: %v %v", topic, p, kerr.ErrorForCode(rp.ErrorCode), deref(rp.ErrorMessage))
	}
	return rp.BaseOffset
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// fetchResponse decodes a streamed Fetch response back through kmsg: it
// proves the encoding and gives the tests kmsg structs to look at.
func decodeFetch(t testing.TB, r wire.Response) *kmsg.FetchResponse {
	t.Helper()
	sr, ok := r.(*wire.StreamResponse)
	if !ok {
		t.Fatalf("fetch answered %T, want a stream", r)
	}
	defer sr.Done()
	body := streamBytes(t, sr)
	out := kmsg.NewPtrFetchResponse()
	out.Version = sr.Version
	if err := out.ReadFrom(body); err != nil {
		t.Fatalf("decode fetch response v%d: %v", sr.Version, err)
	}
	return out
}

// streamBytes concatenates a stream response's parts, reading file ranges.
func streamBytes(t testing.TB, sr *wire.StreamResponse) []byte {
	t.Helper()
	var body []byte
	for _, p := range sr.Parts {
		if p.File == nil {
			body = append(body, p.Bytes...)
			continue
		}
		buf := make([]byte, p.Len)
		if _, err := p.File.ReadAt(buf, p.Pos); err != nil {
			t.Fatalf("read part: %v", err)
		}
		body = append(body, buf...)
	}
	return body
}

// fetchReq builds a consumer fetch of the given partitions at offsets.
type fetchPart struct {
	topic     string
	id        metadata.Uuid
	partition int32
	offset    int64
	maxBytes  int32
	curEpoch  int32
	lastEpoch int32
}

func fp(topic string, partition int32, offset int64) fetchPart {
	return fetchPart{topic: topic, partition: partition, offset: offset, maxBytes: 1 << 20, curEpoch: -1, lastEpoch: -1}
}

func fetchReq(version int16, parts ...fetchPart) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID = -1
	req.ReplicaState.ID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 1
	req.MaxBytes = 50 << 20
	req.SessionEpoch = -1
	for _, p := range parts {
		var rt *kmsg.FetchRequestTopic
		for i := range req.Topics {
			if req.Topics[i].Topic == p.topic && req.Topics[i].TopicID == p.id {
				rt = &req.Topics[i]
			}
		}
		if rt == nil {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = p.topic, p.id
			req.Topics = append(req.Topics, t)
			rt = &req.Topics[len(req.Topics)-1]
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p.partition, p.offset, p.maxBytes
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = p.curEpoch, p.lastEpoch
		rt.Partitions = append(rt.Partitions, rp)
	}
	return req
}

// fetchedValues decodes the record values of a fetched partition.
func fetchedValues(t testing.TB, batches []byte) (values []string, offsets []int64) {
	t.Helper()
	for len(batches) > 0 {
		b, rest, err := record.NextBatch(batches)
		if err != nil {
			if errors.Is(err, record.ErrIncomplete) {
				break
			}
			t.Fatal(err)
		}
		batches = rest
		h, err := record.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		if h.IsControl() {
			continue
		}
		recs, err := record.Records(b, record.DefaultMaxDecompressed)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			values = append(values, string(r.Value))
			offsets = append(offsets, h.BaseOffset+int64(r.OffsetDelta))
		}
	}
	return values, offsets
}

// onlyPartition returns the single partition of a fetch response.
func onlyPartition(t testing.TB, r *kmsg.FetchResponse) kmsg.FetchResponseTopicPartition {
	t.Helper()
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("want one partition, got %+v", r.Topics)
	}
	return r.Topics[0].Partitions[0]
}

// topicID returns the id of an existing topic.
func (e *env) topicID(name string) metadata.Uuid {
	e.t.Helper()
	t, ok := e.b.rm.Image().Topic(name)
	if !ok {
		e.t.Fatalf("no topic %s", name)
	}
	return t.ID
}

// createTopicWith writes a topic's records directly, with the given
// leader, replicas and ISR for every partition.
func (e *env) createTopicWith(name string, partitions int32, leader int32, replicas, isr []int32, configs map[string]string) metadata.Uuid {
	e.t.Helper()
	id := metadata.RandomUuid()
	rs := []metadata.Record{&metadata.TopicRecord{Name: name, ID: id}}
	for p := int32(0); p < partitions; p++ {
		rs = append(rs, &metadata.PartitionRecord{TopicID: id, Partition: p, PartitionState: metadata.PartitionState{
			Replicas: replicas, ISR: isr, Leader: leader}})
	}
	for k, v := range configs {
		rs = append(rs, metadata.SetConfig(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: name}, k, v))
	}
	e.meta.mustApply(e.t, rs...)
	return id
}

// pollUntil polls cond until it holds or the deadline passes.
func pollUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// listOffset asks for one partition's offset at ts.
func listOffset(t testing.TB, e *env, version int16, topic string, p int32, ts int64, isolation int8, curEpoch int32) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID, req.IsolationLevel = version, -1, isolation
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, curEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := e.call(req).(*kmsg.ListOffsetsResponse)
	return resp.Topics[0].Partitions[0]
}

func tpOf(topic string, p int32) storage.TopicPartition {
	return storage.TopicPartition{Topic: topic, Partition: p}
}
