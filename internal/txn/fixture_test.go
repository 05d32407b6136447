package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/coordinator/coordinatortest"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/storage/producerstate"
	"github.com/kmirror/kmirror/internal/wire"
)

// testPartitions is the number of __transaction_state partitions in tests.
const testPartitions = 4

// localNode is the node id of the coordinator under test.
const localNode = 1

// fixedMetadata is a MetadataSource whose image tests replace.
type fixedMetadata struct {
	mu  sync.Mutex
	img *metadata.Image
}

func (m *fixedMetadata) Image() *metadata.Image {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.img
}

func (m *fixedMetadata) set(img *metadata.Image) {
	m.mu.Lock()
	m.img = img
	m.mu.Unlock()
}

// topicSpec is a topic of a test image, every partition led by leader.
type topicSpec struct {
	name       string
	partitions int32
	leader     int32
}

// buildImage returns an image with the brokers (id → host:port of their
// PLAINTEXT listener) and topics.
func buildImage(t *testing.T, brokers map[int32]string, topics ...topicSpec) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(metadata.EmptyImage())
	off := uint64(1)
	replay := func(r metadata.Record) {
		t.Helper()
		if err := d.Replay(r, off); err != nil {
			t.Fatal(err)
		}
		off++
	}
	ids := make([]int32, 0, len(brokers))
	for id := range brokers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		host, port, err := net.SplitHostPort(brokers[id])
		if err != nil {
			t.Fatal(err)
		}
		p, _ := strconv.Atoi(port)
		replay(&metadata.RegisterBrokerRecord{BrokerRegistration: metadata.BrokerRegistration{
			ID: id, Epoch: 1, IncarnationID: metadata.RandomUuid(),
			Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: host, Port: uint16(p)}},
		}})
		replay(&metadata.UnfenceBrokerRecord{ID: id, Epoch: 1})
	}
	for _, ts := range topics {
		id := metadata.RandomUuid()
		replay(&metadata.TopicRecord{Name: ts.name, ID: id})
		for p := int32(0); p < ts.partitions; p++ {
			replay(&metadata.PartitionRecord{TopicID: id, Partition: p, PartitionState: metadata.PartitionState{
				Replicas: []int32{ts.leader}, ISR: []int32{ts.leader}, Leader: ts.leader, LeaderEpoch: 1,
			}})
		}
	}
	return d.Apply()
}

// defaultTopics are the topics of a test cluster: the internal topics and
// two data topics, all led by the local node.
func defaultTopics() []topicSpec {
	return []topicSpec{
		{TransactionStateTopic, testPartitions, localNode},
		{OffsetsTopic, 3, localNode},
		{"a", 3, localNode},
		{"b", 2, localNode},
	}
}

// pidSeq hands out producer ids 1000, 1001, ...
type pidSeq struct {
	mu   sync.Mutex
	next int64
	err  error
}

func (p *pidSeq) NextProducerID(context.Context) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return -1, p.err
	}
	id := 1000 + p.next
	p.next++
	return id, nil
}

// markerInfo is a transaction marker found in a log.
type markerInfo struct {
	offset           int64
	pid              int64
	epoch            int16
	commit           bool
	coordinatorEpoch int32
}

// dataLogs are partitions of a broker's data topics as real storage logs:
// the MarkerTarget (and, for __consumer_offsets, the GroupCompleter) of
// tests. Failures can be injected per partition.
type dataLogs struct {
	t   *testing.T
	dir string

	mu     sync.Mutex
	logs   map[storage.TopicPartition]*storage.Log
	fail   map[storage.TopicPartition]error
	failed map[storage.TopicPartition]int // appends refused by fail
	groups []groupCall
}

type groupCall struct {
	partition int32
	pid       int64
	epoch     int16
	coordEp   int32
	commit    bool
}

func newDataLogs(t *testing.T) *dataLogs {
	d := &dataLogs{t: t, dir: t.TempDir(), logs: map[storage.TopicPartition]*storage.Log{},
		fail: map[storage.TopicPartition]error{}, failed: map[storage.TopicPartition]int{}}
	t.Cleanup(func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, l := range d.logs {
			l.Close()
		}
	})
	return d
}

func (d *dataLogs) log(tp storage.TopicPartition) *storage.Log {
	d.mu.Lock()
	defer d.mu.Unlock()
	if l, ok := d.logs[tp]; ok {
		return l
	}
	l, err := storage.Open(filepath.Join(d.dir, tp.String()), tp, storage.DefaultLogConfig(), storage.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		d.t.Fatal(err)
	}
	d.logs[tp] = l
	return l
}

// failWith makes markers for tp fail with err (nil: succeed again).
func (d *dataLogs) failWith(tp storage.TopicPartition, err error) {
	d.mu.Lock()
	if err == nil {
		delete(d.fail, tp)
	} else {
		d.fail[tp] = err
	}
	d.mu.Unlock()
}

func (d *dataLogs) failure(tp storage.TopicPartition) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	err := d.fail[tp]
	if err != nil {
		d.failed[tp]++
	}
	return err
}

// refused returns how many markers for tp failed by failWith.
func (d *dataLogs) refused(tp storage.TopicPartition) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.failed[tp]
}

// AppendMarker implements MarkerTarget.
func (d *dataLogs) AppendMarker(_ context.Context, topic string, partition int32, batch []byte) error {
	tp := storage.TopicPartition{Topic: topic, Partition: partition}
	if err := d.failure(tp); err != nil {
		return err
	}
	l := d.log(tp)
	if _, err := l.AppendAsLeader(batch, 0, storage.OriginCoordinator); err != nil {
		return err
	}
	l.SetHighWatermark(l.LogEndOffset())
	return nil
}

// CompleteTransaction implements GroupCompleter: it writes the marker into
// the __consumer_offsets partition's log, as the group coordinator does.
func (d *dataLogs) CompleteTransaction(ctx context.Context, partition int32, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool) error {
	tp := storage.TopicPartition{Topic: OffsetsTopic, Partition: partition}
	if err := d.failure(tp); err != nil {
		return err
	}
	d.mu.Lock()
	d.groups = append(d.groups, groupCall{partition, producerID, producerEpoch, coordinatorEpoch, commit})
	d.mu.Unlock()
	batch := record.BuildEndTxnMarker(producerID, producerEpoch, record.EndTxnMarker{Commit: commit, CoordinatorEpoch: coordinatorEpoch}, time.Now().UnixMilli(), 0)
	l := d.log(tp)
	if _, err := l.AppendAsLeader(batch, 0, storage.OriginCoordinator); err != nil {
		return err
	}
	l.SetHighWatermark(l.LogEndOffset())
	return nil
}

func (d *dataLogs) groupCalls() []groupCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]groupCall(nil), d.groups...)
}

// produce appends a transactional batch of values for the producer, as a
// producer's Produce request does.
func (d *dataLogs) produce(tp storage.TopicPartition, pid int64, epoch int16, seq int32, values ...string) error {
	recs := make([]record.Record, len(values))
	for i, v := range values {
		recs[i] = record.Record{OffsetDelta: int32(i), Value: []byte(v)}
	}
	b, err := record.Build(record.BatchSpec{
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Transactional: true, BaseTimestamp: time.Now().UnixMilli(),
	}, recs)
	if err != nil {
		return err
	}
	l := d.log(tp)
	if _, err := l.AppendAsLeader(b, 0, storage.OriginClient); err != nil {
		return err
	}
	l.SetHighWatermark(l.LogEndOffset())
	return nil
}

// batches returns every batch of tp up to bound, and the read result.
func (d *dataLogs) read(tp storage.TopicPartition, isolation storage.FetchIsolation) ([][]byte, *storage.ReadResult) {
	d.t.Helper()
	l := d.log(tp)
	res, err := l.Read(l.LogStartOffset(), 64<<20, isolation, true)
	if err != nil {
		d.t.Fatal(err)
	}
	defer res.Release()
	buf, err := res.Bytes()
	if err != nil {
		d.t.Fatal(err)
	}
	var out [][]byte
	for len(buf) > 0 {
		b, rest, err := record.NextBatch(buf)
		if err != nil {
			d.t.Fatal(err)
		}
		out = append(out, b)
		buf = rest
	}
	return out, res
}

// markers returns the transaction markers in tp.
func (d *dataLogs) markers(tp storage.TopicPartition) []markerInfo {
	d.t.Helper()
	bs, _ := d.read(tp, storage.FetchLogEnd)
	var out []markerInfo
	for _, b := range bs {
		h, err := record.ParseHeader(b)
		if err != nil {
			d.t.Fatal(err)
		}
		if !h.IsControl() {
			continue
		}
		m, err := record.ParseEndTxnMarker(b)
		if err != nil {
			d.t.Fatal(err)
		}
		out = append(out, markerInfo{h.BaseOffset, h.ProducerID, h.ProducerEpoch, m.Commit, m.CoordinatorEpoch})
	}
	return out
}

// values returns the record values of tp a consumer sees: READ_COMMITTED
// (up to the LSO, without aborted transactions, as a consumer filters them
// with the aborted-transaction list) or READ_UNCOMMITTED.
func (d *dataLogs) values(tp storage.TopicPartition, committed bool) []string {
	d.t.Helper()
	iso := storage.FetchHighWatermark
	if committed {
		iso = storage.FetchTxnCommitted
	}
	bs, res := d.read(tp, iso)
	aborted := append([]producerstate.AbortedTxn(nil), res.AbortedTxns...)
	sort.Slice(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
	active := map[int64]bool{}
	var out []string
	for _, b := range bs {
		h, err := record.ParseHeader(b)
		if err != nil {
			d.t.Fatal(err)
		}
		for len(aborted) > 0 && aborted[0].FirstOffset <= h.LastOffset() {
			active[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		if h.IsControl() {
			if m, err := record.ParseEndTxnMarker(b); err == nil && !m.Commit {
				delete(active, h.ProducerID)
			}
			continue
		}
		if h.IsTransactional() && active[h.ProducerID] {
			continue
		}
		recs, err := record.Records(b, 1<<20)
		if err != nil {
			d.t.Fatal(err)
		}
		for _, r := range recs {
			out = append(out, string(r.Value))
		}
	}
	return out
}

// env is a transaction coordinator over real storage logs, with its
// handlers called directly.
type env struct {
	t       *testing.T
	dir     string
	clock   *coordinator.ManualClock
	meta    *fixedMetadata
	data    *dataLogs
	pids    *pidSeq
	cfg     Config
	host    *coordinatortest.Host
	markers *MarkerService
	c       *Coordinator
	apis    map[int16]wire.API
	// authz, when set, decides the requests' rights (see authz_test.go).
	authz wire.Authorizer
}

func newEnv(t *testing.T, mod ...func(*Config)) *env {
	t.Helper()
	e := &env{
		t:     t,
		dir:   t.TempDir(),
		clock: coordinator.NewManualClock(time.Unix(1_700_000_000, 0)),
		meta:  &fixedMetadata{},
		data:  newDataLogs(t),
		pids:  &pidSeq{},
	}
	e.meta.set(buildImage(t, map[int32]string{localNode: "127.0.0.1:1"}, defaultTopics()...))
	e.cfg = DefaultConfig()
	e.cfg.NodeID = localNode
	e.cfg.TopicPartitions = testPartitions
	e.cfg.Clock = e.clock
	e.cfg.Logger = slog.New(slog.DiscardHandler)
	e.cfg.RequestTimeout = 10 * time.Second
	for _, f := range mod {
		f(&e.cfg)
	}
	e.start(true)
	return e
}

// start opens the host and a coordinator, leading every partition if lead.
func (e *env) start(lead bool) {
	e.host = coordinatortest.NewHost(e.dir, slog.New(slog.DiscardHandler))
	host := e.host
	e.t.Cleanup(func() { host.Close() })
	e.markers = NewMarkerService(e.data, e.data)
	e.markers.now = e.clock.Now
	e.c = New(e.cfg, Deps{Host: e.host, Metadata: e.meta, ProducerIDs: e.pids, Markers: e.markers})
	c := e.c
	e.t.Cleanup(c.Close)
	e.apis = map[int16]wire.API{}
	for _, a := range append(e.c.APIs(), e.markers.APIs()...) {
		e.apis[a.Key] = a
	}
	e.c.Start()
	if lead {
		for p := int32(0); p < testPartitions; p++ {
			e.host.Lead(TransactionStateTopic, p, true, 1)
		}
		e.waitLoaded()
	}
}

// restart stops the coordinator and its logs and starts new ones over the
// same directory, as a node restart does.
func (e *env) restart() {
	e.c.Close()
	if err := e.host.Close(); err != nil {
		e.t.Fatal(err)
	}
	e.start(true)
}

func (e *env) waitLoaded() {
	e.t.Helper()
	waitFor(e.t, "partitions loaded", func() bool {
		n := 0
		for _, ps := range e.c.rt.Partitions() {
			if ps.State == coordinator.PartitionActive {
				n++
			}
		}
		return n == testPartitions
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// do calls the handler of req's key at req's version, round-tripping the
// request and the response through their encodings as the server does.
func (e *env) do(req kmsg.Request) kmsg.Response {
	e.t.Helper()
	return callAPIAs(e.t, e.apis, e.authz, req)
}

func callAPI(t *testing.T, apis map[int16]wire.API, req kmsg.Request) kmsg.Response {
	t.Helper()
	return callAPIAs(t, apis, nil, req)
}

// callAPIAs is callAPI for a principal whose rights authz decides (nil:
// every right).
func callAPIAs(t *testing.T, apis map[int16]wire.API, authz wire.Authorizer, req kmsg.Request) kmsg.Response {
	t.Helper()
	a, ok := apis[req.Key()]
	if !ok {
		t.Fatalf("no handler for key %d", req.Key())
	}
	if v := req.GetVersion(); v < a.MinVersion || v > a.MaxVersion {
		t.Fatalf("version %d of key %d outside %d-%d", v, req.Key(), a.MinVersion, a.MaxVersion)
	}
	enc := req.AppendTo(nil)
	dec := kmsg.RequestForKey(req.Key())
	dec.SetVersion(req.GetVersion())
	if err := dec.ReadFrom(enc); err != nil {
		t.Fatalf("decode %T: %v", req, err)
	}
	clientID := "client-1"
	rc := &wire.RequestContext{
		Header:    wire.RequestHeader{APIKey: req.Key(), APIVersion: req.GetVersion(), ClientID: &clientID},
		Listener:  "PLAINTEXT",
		Principal: wire.AnonymousPrincipal,
		Authz:     authz,
	}
	resp, err := a.Handle(context.Background(), rc, dec)
	if err != nil {
		t.Fatalf("%T v%d: %v", req, req.GetVersion(), err)
	}
	kr := resp.(kmsg.Response)
	out := kr.AppendTo(nil)
	back := kmsg.ResponseForKey(req.Key())
	back.SetVersion(req.GetVersion())
	if err := back.ReadFrom(out); err != nil {
		t.Fatalf("decode response %T: %v", kr, err)
	}
	return back
}

// producer is a transactional producer driving the coordinator the way a
// client does.
type producer struct {
	e     *env
	id    string
	pid   int64
	epoch int16
	seq   map[storage.TopicPartition]int32
}

// initProducer runs InitProducerId for id (v4) and fails the test on error.
func (e *env) initProducer(id string, timeout time.Duration) *producer {
	e.t.Helper()
	r := e.initPID(4, id, timeout, -1, -1)
	if r.ErrorCode != 0 {
		e.t.Fatalf("InitProducerId %s: %v", id, kerr.ErrorForCode(r.ErrorCode))
	}
	return &producer{e: e, id: id, pid: r.ProducerID, epoch: r.ProducerEpoch, seq: map[storage.TopicPartition]int32{}}
}

func (e *env) initPID(version int16, id string, timeout time.Duration, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = version
	req.TransactionalID = &id
	req.TransactionTimeoutMillis = int32(timeout.Milliseconds())
	req.ProducerID, req.ProducerEpoch = pid, epoch
	// Round-trip as the broker's handler would receive it.
	dec := kmsg.NewPtrInitProducerIDRequest()
	dec.Version = version
	if err := dec.ReadFrom(req.AppendTo(nil)); err != nil {
		e.t.Fatal(err)
	}
	return e.c.InitProducerID(context.Background(), dec)
}

// add adds partitions with AddPartitionsToTxn (v3) and returns the error of
// each.
func (p *producer) addVersion(version int16, tps ...storage.TopicPartition) map[storage.TopicPartition]error {
	p.e.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = p.id, p.pid, p.epoch
	for _, g := range groupByTopic(sortedPartitions(append([]storage.TopicPartition(nil), tps...))) {
		t := kmsg.NewAddPartitionsToTxnRequestTopic()
		t.Topic, t.Partitions = g.topic, g.partitions
		req.Topics = append(req.Topics, t)
	}
	resp := p.e.do(req).(*kmsg.AddPartitionsToTxnResponse)
	out := map[storage.TopicPartition]error{}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			out[storage.TopicPartition{Topic: t.Topic, Partition: rp.Partition}] = kerr.ErrorForCode(rp.ErrorCode)
		}
	}
	if len(out) != len(sortedPartitions(append([]storage.TopicPartition(nil), tps...))) {
		p.e.t.Fatalf("AddPartitionsToTxn answered %d partitions for %d", len(out), len(tps))
	}
	return out
}

// mustAdd adds partitions and fails the test unless all succeed.
func (p *producer) mustAdd(tps ...storage.TopicPartition) {
	p.e.t.Helper()
	for tp, err := range p.addVersion(3, tps...) {
		if err != nil {
			p.e.t.Fatalf("add %s: %v", tp, err)
		}
	}
}

// send appends a transactional batch to tp.
func (p *producer) send(tp storage.TopicPartition, values ...string) {
	p.e.t.Helper()
	if err := p.e.data.produce(tp, p.pid, p.epoch, p.seq[tp], values...); err != nil {
		p.e.t.Fatalf("produce to %s: %v", tp, err)
	}
	p.seq[tp] += int32(len(values))
}

func (p *producer) addOffsets(version int16, group string) error {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = p.id, p.pid, p.epoch, group
	return kerr.ErrorForCode(p.e.do(req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode)
}

func (p *producer) end(version int16, commit bool) error {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version = version
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = p.id, p.pid, p.epoch, commit
	return kerr.ErrorForCode(p.e.do(req).(*kmsg.EndTxnResponse).ErrorCode)
}

// describe returns DescribeTransactions' answer for id.
func (e *env) describe(id string) kmsg.DescribeTransactionsResponseTransactionState {
	e.t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	resp := e.do(req).(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 1 {
		e.t.Fatalf("DescribeTransactions: %d states", len(resp.TransactionStates))
	}
	return resp.TransactionStates[0]
}

// waitState waits until id is in state, advancing the clock by step (0: not
// at all) between looks, so that timers and marker retries run.
func (e *env) waitState(id string, st State, step time.Duration) kmsg.DescribeTransactionsResponseTransactionState {
	e.t.Helper()
	var last kmsg.DescribeTransactionsResponseTransactionState
	waitFor(e.t, fmt.Sprintf("%s in state %s", id, st), func() bool {
		last = e.describe(id)
		if last.ErrorCode == 0 && last.State == st.String() {
			return true
		}
		if step > 0 {
			e.clock.Advance(step)
		}
		return false
	})
	return last
}

// isErr reports whether err is the Kafka error want (nil for success).
func isErr(err error, want *kerr.Error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want)
}
