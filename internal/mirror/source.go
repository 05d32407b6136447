package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/replication"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// ClientOpts builds the franz-go options of a mirror's source client from
// the mirror's configs (bootstrap servers, client id, security); the node
// passes mirrorconfig.SourceClientOpts.
type ClientOpts func(cfg map[string]string) ([]kgo.Opt, error)

// maxMirrorFetchVersion is the highest Fetch version the mirror sends: v13+
// names topics by id (a mirrored topic keeps its source id, so a topic
// recreated on the source under the same name is not mirrored by mistake),
// v12+ carries LastFetchedEpoch and the DivergingEpoch answer.
const (
	maxMirrorFetchVersion int16 = 16
	minMirrorFetchVersion int16 = 12
)

// source is one mirror's link to its source cluster on this broker: a
// franz-go client, what it learned of the cluster, and the fetchers that
// copy the partitions this broker leads. The source follows the source
// cluster's partition leaders: it refreshes the source's metadata
// periodically, when a fetcher is fenced, and when fetchers report errors
// that mean the leadership moved, and re-adds each moved partition with its
// new source broker and leader epoch.
type source struct {
	m    *Manager
	name string
	cfgs map[string]string
	log  *slog.Logger

	ctx     context.Context
	cancel  context.CancelFunc
	refresh chan struct{} // buffered: a refresh is wanted

	mu        sync.Mutex
	closed    bool
	cl        *kgo.Client
	info      sourceInfo
	connected bool
	fetchers  *replication.Manager
	fetching  map[storage.TopicPartition]*fetchEntry
	// missing counts consecutive refreshes that found a fetched topic
	// absent on the source or under another id: two in a row fail its
	// partitions.
	missing map[string]int
}

// sourceInfo is what a connected source client learned of the cluster.
type sourceInfo struct {
	clusterID    string
	fetchVersion int16
	supportsLME  bool
}

// fetchEntry is a partition the source fetches for a driver.
type fetchEntry struct {
	d      *driver
	target *fetchTarget
	// cluster is the source cluster whose data the partition's log holds
	// (the driver's Status.SourceClusterID): the partition is fetched only
	// from that cluster.
	cluster string
	// added is the source broker and leader epoch the partition was last
	// given to the fetchers with (addedBroker -1: not added yet).
	addedBroker int32
	addedEpoch  int32
	addedAddr   string
}

func newSource(m *Manager, name string, cfgs map[string]string) *source {
	s := &source{
		m: m, name: name, cfgs: cfgs,
		log:      m.log.With("mirror", name),
		refresh:  make(chan struct{}, 1),
		fetching: map[storage.TopicPartition]*fetchEntry{},
		missing:  map[string]int{},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	m.stats.sourceOpened(s)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		s.run()
	}()
	return s
}

// close stops the source's loop and fetchers and closes its client; later
// calls on the source fail or do nothing.
func (s *source) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	cl, f := s.cl, s.fetchers
	s.fetching = map[storage.TopicPartition]*fetchEntry{}
	s.mu.Unlock()
	s.cancel()
	if f != nil {
		_ = f.Close()
	}
	s.m.stats.sourceClosed(s, f)
	if cl != nil {
		cl.Close()
	}
	s.log.Info("mirror source closed")
}

var errSourceClosed = errors.New("mirror source closed")

// client returns the connected client and what it learned, connecting
// first if needed.
func (s *source) client(ctx context.Context) (*kgo.Client, sourceInfo, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, sourceInfo{}, errSourceClosed
	}
	if s.connected {
		cl, info := s.cl, s.info
		s.mu.Unlock()
		return cl, info, nil
	}
	cl := s.cl
	s.mu.Unlock()
	if cl == nil {
		cfgs, err := s.m.deps.Secrets.Reveal(s.cfgs)
		if err != nil {
			return nil, sourceInfo{}, fmt.Errorf("mirror %s source client: %w", s.name, err)
		}
		opts, err := s.m.deps.ClientOpts(cfgs)
		if err != nil {
			return nil, sourceInfo{}, fmt.Errorf("mirror %s source client: %w", s.name, err)
		}
		versions := wire.MirrorClientVersions(kversion.Stable())
		versions.SetMaxKeyVersion(int16(kmsg.Fetch), maxMirrorFetchVersion)
		opts = append(opts, kgo.MaxVersions(versions), kgo.MetadataMinAge(250*time.Millisecond))
		cl, err = kgo.NewClient(opts...)
		if err != nil {
			return nil, sourceInfo{}, fmt.Errorf("mirror %s source client: %w", s.name, err)
		}
		s.mu.Lock()
		if s.closed || s.cl != nil {
			s.mu.Unlock()
			cl.Close()
			return s.client(ctx)
		}
		s.cl = cl
		s.mu.Unlock()
	}
	info, err := probe(ctx, cl)
	if err != nil {
		return nil, sourceInfo{}, fmt.Errorf("mirror %s: source cluster: %w", s.name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, sourceInfo{}, errSourceClosed
	}
	if !s.connected {
		s.info, s.connected = info, true
		s.log.Info("mirror source connected", "source_cluster_id", info.clusterID, "fetch_version", info.fetchVersion, "last_mirrored_epochs", info.supportsLME)
	}
	return s.cl, s.info, nil
}

// probe asks the source which versions it serves and its cluster id.
func probe(ctx context.Context, cl *kgo.Client) (sourceInfo, error) {
	var info sourceInfo
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return info, err
	}
	if av.ErrorCode != 0 {
		return info, fmt.Errorf("ApiVersions: %w", kerr.ErrorForCode(av.ErrorCode))
	}
	info.fetchVersion = -1
	for _, k := range av.ApiKeys {
		if k.ApiKey == int16(kmsg.Fetch) {
			info.fetchVersion = min(k.MaxVersion, maxMirrorFetchVersion)
		}
	}
	// A source serves the mirror APIs when it says so with the feature,
	// whatever API its key numbers name (Kafka may assign any key).
	for _, f := range av.SupportedFeatures {
		if f.Name == wire.MirrorFeature {
			info.supportsLME = f.MinVersion <= wire.MirrorFeatureVersion && f.MaxVersion >= wire.MirrorFeatureVersion
		}
	}
	if info.fetchVersion < minMirrorFetchVersion {
		return info, fmt.Errorf("the source serves Fetch up to v%d; mirroring needs v%d (Kafka 2.7 or later)", info.fetchVersion, minMirrorFetchVersion)
	}
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return info, err
	}
	if md.ClusterID == nil || *md.ClusterID == "" {
		return info, errors.New("the source did not name its cluster id")
	}
	info.clusterID = *md.ClusterID
	return info, nil
}

// fetcherManager returns the source's fetchers, creating them once the
// client is connected.
func (s *source) fetcherManager(ctx context.Context) (*replication.Manager, error) {
	cl, info, err := s.client(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errSourceClosed
	}
	if s.fetchers != nil {
		return s.fetchers, nil
	}
	cfg := s.m.cfg
	f, err := replication.NewManager(replication.Config{
		Name:              "mirror " + s.name,
		ReplicaID:         -1,
		ClientID:          fmt.Sprintf("kmirror-mirror-%s-%d", s.name, cfg.NodeID),
		NumFetchers:       cfg.NumFetchers,
		MaxBytes:          cfg.FetchMaxBytes,
		PartitionMaxBytes: cfg.FetchPartitionMaxBytes,
		MinBytes:          1,
		MaxWait:           cfg.FetchMaxWait,
		Backoff:           cfg.FetchBackoff,
		RequestTimeout:    cfg.RequestTimeout,
		FetchVersion:      info.fetchVersion,
		IsolationLevel:    0, // READ_UNCOMMITTED: transactions are copied with their markers
		// The source sees only a consumer: fetching ahead of the appends
		// (replication.Config.Pipeline) is safe, and the kgo.Broker of
		// sourceEndpoint takes concurrent requests.
		Pipeline: true,
		NewEndpoint: func(ctx context.Context, src replication.Source) (replication.Endpoint, error) {
			return &sourceEndpoint{br: cl.Broker(int(src.BrokerID)), version: info.fetchVersion, limiter: s.m.limiter}, nil
		},
		Limiter:  s.m.limiter,
		OnFenced: func(storage.TopicPartition, error) { s.wantRefresh() },
		Logger:   s.log,
		Now:      s.m.cfg.Now,
	})
	if err != nil {
		return nil, err
	}
	s.fetchers = f
	return f, nil
}

func (s *source) wantRefresh() {
	select {
	case s.refresh <- struct{}{}:
	default:
	}
}

// startFetching makes the fetchers copy d's partition into target, from
// cluster (the source cluster whose data the log holds); the source's loop
// adds it once it knows the partition's source leader, and only if the
// source is still that cluster.
func (s *source) startFetching(d *driver, target *fetchTarget, cluster string) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.fetching[d.tp] = &fetchEntry{d: d, target: target, cluster: cluster, addedBroker: -1}
	s.mu.Unlock()
	s.wantRefresh()
}

// stopFetching removes d's partition from the fetchers; when it returns no
// fetcher appends to the partition any more.
func (s *source) stopFetching(d *driver) {
	s.mu.Lock()
	e, ok := s.fetching[d.tp]
	if !ok || e.d != d {
		s.mu.Unlock()
		return
	}
	delete(s.fetching, d.tp)
	f := s.fetchers
	s.mu.Unlock()
	// First the target refuses appends: a refresh that read the entry
	// before it was deleted may still give the partition to a fetcher.
	e.target.stopped.Store(true)
	if f != nil {
		f.RemovePartitions(d.tp)
	}
}

// run is the source's loop: refresh the source's metadata when asked or
// when due, and watch the fetchers for errors that need it.
func (s *source) run() {
	health := time.NewTicker(s.m.cfg.HealthInterval)
	defer health.Stop()
	var lastRefresh, lastLag time.Time
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.refresh:
		case <-health.C:
			if now := s.m.cfg.Now(); now.Sub(lastLag) >= s.m.cfg.LagRefreshInterval {
				lastLag = now
				s.refreshLag()
			}
			s.checkStalls(s.m.cfg.Now())
			if !s.needsRefresh() && s.m.cfg.Now().Sub(lastRefresh) < s.m.cfg.MetadataRefreshInterval {
				continue
			}
		}
		if err := s.refreshLeaders(); err != nil {
			if s.ctx.Err() != nil {
				return
			}
			s.log.Info("source metadata refresh failed; retrying", "error", err)
			s.recordError(err.Error())
			s.failIfRefused(err)
			continue // the health ticker retries
		}
		lastRefresh = s.m.cfg.Now()
	}
}

// needsRefresh reports whether some partition waits for a source leader or
// had a fetch error that new metadata may resolve; it also records fetch
// errors in the partitions' figures.
func (s *source) needsRefresh() bool {
	s.mu.Lock()
	entries := make([]*fetchEntry, 0, len(s.fetching))
	for _, e := range s.fetching {
		entries = append(entries, e)
	}
	f := s.fetchers
	s.mu.Unlock()
	need := false
	for _, e := range entries {
		if e.addedBroker < 0 || f == nil {
			need = true
			continue
		}
		st, ok := f.Status(e.d.tp)
		if !ok {
			continue
		}
		if st.LastError != nil {
			e.d.stats.setError(st.LastError.Error())
			if st.State == replication.StateFenced || leaderMoved(st.LastError) {
				need = true
			}
			if permanentFetchError(st.LastError) || sourceSecurityCause(st.LastError) != "" {
				e.d.post(Event{Kind: EvFailed, Err: explainSourceError(st.LastError)})
			}
		}
	}
	return need
}

// leaderMoved says whether a fetch error means the source's leadership or
// topic metadata changed.
func leaderMoved(err error) bool {
	for _, e := range []*kerr.Error{kerr.NotLeaderForPartition, kerr.UnknownLeaderEpoch, kerr.FencedLeaderEpoch,
		kerr.UnknownTopicOrPartition, kerr.UnknownTopicID, kerr.LeaderNotAvailable, kerr.ReplicaNotAvailable} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// permanentFetchError says whether a fetch error will not go away by
// retrying: the partition fails (and is retried after FAILED's backoff).
func permanentFetchError(err error) bool {
	for _, e := range []*kerr.Error{kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed,
		kerr.SaslAuthenticationFailed, kerr.InconsistentTopicID, kerr.UnsupportedVersion} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (s *source) recordError(msg string) {
	s.mu.Lock()
	entries := make([]*fetchEntry, 0, len(s.fetching))
	for _, e := range s.fetching {
		entries = append(entries, e)
	}
	s.mu.Unlock()
	for _, e := range entries {
		e.d.stats.setError(msg)
	}
}

// refreshLeaders asks the source for the metadata of the fetched topics and
// gives every partition whose source leader or leader epoch changed (or
// which was never added) to the fetchers.
func (s *source) refreshLeaders() error {
	ctx, cancel := context.WithTimeout(s.ctx, s.m.cfg.RequestTimeout)
	defer cancel()
	f, err := s.fetcherManager(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	var topics []string
	for tp := range s.fetching {
		if !slices.Contains(topics, tp.Topic) {
			topics = append(topics, tp.Topic)
		}
	}
	s.mu.Unlock()
	if len(topics) == 0 {
		return nil
	}
	cl, _, err := s.client(ctx)
	if err != nil {
		return err
	}
	md, err := sourceMetadata(ctx, cl, topics)
	if err != nil {
		return err
	}
	s.mu.Lock()
	// Each fetched topic is judged once per refresh (not once per
	// partition): missing on the source twice in a row, or there under
	// another id (deleted and created again: final), or the source now
	// another cluster than the one a partition's log holds (final).
	type verdict struct {
		msg   string
		final bool
		skip  bool
	}
	verdicts := map[string]verdict{}
	for tp, e := range s.fetching {
		if _, done := verdicts[tp.Topic]; done {
			continue
		}
		t, ok := md.topics[tp.Topic]
		var v verdict
		switch {
		case !ok || t.err == kerr.UnknownTopicOrPartition.Code:
			s.missing[tp.Topic]++
			v.skip = true
			if s.missing[tp.Topic] >= 2 {
				v.msg = fmt.Sprintf("topic %q no longer exists on the source cluster %s", tp.Topic, md.clusterID)
			}
		case sourceSecurityCause(kerr.ErrorForCode(t.err)) != "":
			// TOPIC_AUTHORIZATION_FAILED: the mirror's principal may not
			// see the topic (its properties changed to another login, or
			// its ACLs went). No fetcher would ever get the partition:
			// fail it, as a refused fetch does, rather than wait.
			v.msg = explainSourceError(fmt.Errorf("metadata of topic %q from the source cluster %s: %w", tp.Topic, md.clusterID, kerr.ErrorForCode(t.err)))
			v.skip = true
		case t.err != 0:
			v.skip = true // LEADER_NOT_AVAILABLE and kin: try again later
		case t.id != e.d.topicID:
			v.msg = fmt.Sprintf("topic %q has id %s on the source cluster %s, not %s: it was deleted and created again there, and the mirror does not copy another topic into this one",
				tp.Topic, fmtID(t.id), md.clusterID, fmtID(e.d.topicID))
			v.final, v.skip = true, true
		default:
			s.missing[tp.Topic] = 0
		}
		verdicts[tp.Topic] = v
	}
	var adds []replication.AddPartition
	type failure struct {
		d     *driver
		msg   string
		final bool
	}
	var failed []failure
	for tp, e := range s.fetching {
		if e.cluster != "" && md.clusterID != "" && md.clusterID != e.cluster {
			failed = append(failed, failure{e.d, errSourceChanged(s.name, e.cluster, md.clusterID).Error(), true})
			continue
		}
		v := verdicts[tp.Topic]
		if v.msg != "" {
			failed = append(failed, failure{e.d, v.msg, v.final})
		}
		if v.skip {
			continue
		}
		t := md.topics[tp.Topic]
		p, ok := t.parts[tp.Partition]
		if !ok || p.leader < 0 {
			continue
		}
		addr, ok := md.brokers[p.leader]
		if !ok {
			continue
		}
		if e.addedBroker == p.leader && e.addedEpoch == p.epoch && e.addedAddr == addr {
			continue
		}
		e.addedBroker, e.addedEpoch, e.addedAddr = p.leader, p.epoch, addr
		adds = append(adds, replication.AddPartition{
			TopicPartition: tp,
			TopicID:        e.d.topicID,
			LeaderEpoch:    p.epoch,
			Source:         replication.Source{Cluster: "mirror " + s.name, BrokerID: p.leader, Addr: addr},
			Target:         e.target,
			FetchOffset:    -1,
		})
	}
	s.mu.Unlock()
	if len(adds) > 0 {
		if err := f.AddPartitions(adds...); err != nil {
			return err
		}
		// A partition whose fetching stopped while it was being added
		// leaves again (its target refuses appends meanwhile).
		var gone []storage.TopicPartition
		s.mu.Lock()
		for _, a := range adds {
			if e, ok := s.fetching[a.TopicPartition]; !ok || e.target != a.Target {
				gone = append(gone, a.TopicPartition)
			}
		}
		s.mu.Unlock()
		if len(gone) > 0 {
			f.RemovePartitions(gone...)
		}
	}
	for _, f := range failed {
		f.d.post(Event{Kind: EvFailed, Err: f.msg, Final: f.final})
	}
	return nil
}

// sourceTopic is a topic in the source's metadata.
type sourceTopic struct {
	id    [16]byte
	err   int16
	parts map[int32]sourcePartition
}

// sourcePartition is a partition in the source's metadata.
type sourcePartition struct {
	leader, epoch int32
	err           int16
}

// sourceMeta is an answer of the source's Metadata API.
type sourceMeta struct {
	clusterID string
	topics    map[string]sourceTopic
	brokers   map[int32]string
}

// sourceMetadata asks the source for the topics' metadata.
func sourceMetadata(ctx context.Context, cl *kgo.Client, topics []string) (sourceMeta, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return sourceMeta{}, fmt.Errorf("source metadata: %w", err)
	}
	md := sourceMeta{topics: map[string]sourceTopic{}, brokers: map[int32]string{}}
	if resp.ClusterID != nil {
		md.clusterID = *resp.ClusterID
	}
	for _, b := range resp.Brokers {
		md.brokers[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		st := sourceTopic{id: t.TopicID, err: t.ErrorCode, parts: map[int32]sourcePartition{}}
		for _, p := range t.Partitions {
			st.parts[p.Partition] = sourcePartition{leader: p.Leader, epoch: p.LeaderEpoch, err: p.ErrorCode}
		}
		md.topics[*t.Topic] = st
	}
	return md, nil
}

// sourceEndpoint is a replication.Endpoint on one broker of the source
// cluster, through the mirror's franz-go client: consumer Fetch requests
// (replica id -1) and ListOffsets.
type sourceEndpoint struct {
	br      *kgo.Broker
	version int16
	limiter *replication.RateLimiter
}

// Fetch implements replication.Endpoint.
func (e *sourceEndpoint) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	// Under a throttle, one response carries at most a second's worth of
	// bytes (or one batch): the rate limiter only delays the next request,
	// so an unbounded response would exceed the cap by its whole size.
	if r := e.limiter.Rate(); r > 0 && int64(req.MaxBytes) > r {
		req.MaxBytes = int32(r)
	}
	want := req.Version
	resp, err := e.br.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	if req.Version != want {
		// The fetcher built the request for its version (topic ids or
		// names); another one would be misread.
		return nil, fmt.Errorf("source broker used Fetch v%d instead of v%d: %w", req.Version, want, kerr.UnsupportedVersion)
	}
	fr, ok := resp.(*kmsg.FetchResponse)
	if !ok {
		return nil, fmt.Errorf("fetch answered with %T", resp)
	}
	return fr, nil
}

// EarliestLatest implements replication.Endpoint: the source's log start
// and high watermark (what a consumer may read) of each partition.
func (e *sourceEndpoint) EarliestLatest(ctx context.Context, parts []replication.PartitionRef) ([]replication.OffsetRange, error) {
	out := make([]replication.OffsetRange, len(parts))
	for i, ts := range []int64{-2, -1} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		for _, p := range parts {
			var rt *kmsg.ListOffsetsRequestTopic
			for k := range req.Topics {
				if req.Topics[k].Topic == p.TopicPartition.Topic {
					rt = &req.Topics[k]
				}
			}
			if rt == nil {
				req.Topics = append(req.Topics, kmsg.NewListOffsetsRequestTopic())
				rt = &req.Topics[len(req.Topics)-1]
				rt.Topic = p.TopicPartition.Topic
			}
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p.TopicPartition.Partition, ts, p.LeaderEpoch
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp, err := req.RequestWith(ctx, e.br)
		if err != nil {
			return nil, err
		}
		found := map[storage.TopicPartition]kmsg.ListOffsetsResponseTopicPartition{}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				found[storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p
			}
		}
		for j, p := range parts {
			r, ok := found[p.TopicPartition]
			switch {
			case !ok:
				out[j].Err = fmt.Errorf("list offsets of %s: no answer: %w", p.TopicPartition, kerr.UnknownServerError)
			case r.ErrorCode != 0:
				out[j].Err = fmt.Errorf("list offsets of %s: %w", p.TopicPartition, kerr.ErrorForCode(r.ErrorCode))
			case i == 0:
				out[j].Start = r.Offset
			default:
				out[j].End = r.Offset
			}
		}
	}
	return out, nil
}

// Close implements replication.Endpoint; the client is the source's.
func (e *sourceEndpoint) Close() error { return nil }

func fmtID(id [16]byte) string { return metadata.Uuid(id).String() }
