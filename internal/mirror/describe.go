package mirror

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

// SyncKinds are the periodic synchronisations a mirror reports in
// DescribeMirrors, in the order a sync round runs them (sync_mirror.go).
var SyncKinds = []string{"configs", "partitions", "group-offsets", "acls"}

// Describer serves DescribeMirrors (99) on a broker. Configs and topics come
// from the metadata image; per-partition figures come from each mirrored
// partition's leader, which drives it: the answering broker asks every
// leader concerned with a DescribeMirrors request carrying kmirror's
// local-only tag (docs/mirroring.md), which the leader answers from its own
// drivers without asking further. A partition whose leader does not answer
// (or has no driver for it yet) gets its state from __mirror_state and -1
// for the live figures.
type Describer struct {
	nodeID   int32
	listener string
	meta     MetadataSource
	manager  *Manager
	store    StateStore
	conns    *connPool
	timeout  time.Duration
}

// NewDescriber returns the DescribeMirrors service of a broker. manager and
// store may be nil (a node that drives no partitions).
func NewDescriber(nodeID int32, interBrokerListener string, meta MetadataSource, manager *Manager, store StateStore, dial Dialer, timeout time.Duration) *Describer {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return &Describer{
		nodeID: nodeID, listener: interBrokerListener, meta: meta, manager: manager, store: store, timeout: timeout,
		conns: newConnPool(dial, fmt.Sprintf("kmirror-mirror-describe-%d", nodeID)),
	}
}

// Close closes the connections to other brokers.
func (s *Describer) Close() { s.conns.close() }

// APIs implements wire.Service.
func (s *Describer) APIs() []wire.API {
	return []wire.API{{Key: wire.KeyDescribeMirrors, MinVersion: 0, MaxVersion: 0, Handle: s.handle}}
}

func (s *Describer) handle(ctx context.Context, _ *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*wire.DescribeMirrorsRequest)
	if !ok {
		return nil, fmt.Errorf("DescribeMirrors handler got %T", kreq)
	}
	if isLocalOnly(req.UnknownTags) {
		return s.local(req), nil
	}
	img := s.meta.Image()
	existing := img.Mirrors()
	names := req.MirrorNames
	if names == nil {
		names = existing
	}
	resp := &wire.DescribeMirrorsResponse{Version: req.Version}
	type pending struct{ m, t, p int }
	byLeader := map[int32][]pending{}
	for _, name := range names {
		m := wire.DescribeMirrorsResponseMirror{Name: name}
		if !slices.Contains(existing, name) {
			m.ErrorCode = kerr.ResourceNotFound.Code
			msg := fmt.Sprintf("mirror %q does not exist", name)
			m.ErrorMessage = &msg
			resp.Mirrors = append(resp.Mirrors, m)
			continue
		}
		for _, e := range mirrorconfig.Describe(img.Configs(metadata.ConfigResource{Type: metadata.ResourceMirror, Name: name})) {
			m.Configs = append(m.Configs, wire.DescribeMirrorsResponseConfig{Name: e.Name, Value: e.Value, Sensitive: e.Sensitive})
		}
		topics := topicsOfMirror(img, name)
		slices.Sort(topics)
		for _, tn := range topics {
			ti, ok := img.Topic(tn)
			if !ok {
				continue
			}
			raw, _ := img.Config(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: tn}, metadata.MirrorNameConfig)
			t := wire.DescribeMirrorsResponseTopic{Name: tn, TopicID: ti.ID, MirrorNameConfig: raw}
			// A failover recorded as complete needs no leader's word:
			// every partition is STOPPED for good.
			_, membership := wire.ParseMirrorName(raw)
			if req.IncludePartitions {
				for _, p := range ti.PartitionIDs() {
					ps, _ := ti.Partition(p)
					st := wire.MirrorStateUnknown
					if membership == wire.MembershipStopped {
						st = wire.MirrorStateStopped
					}
					t.Partitions = append(t.Partitions, wire.DescribeMirrorsResponsePartition{
						Partition: p, LeaderID: ps.Leader, State: st,
						SourceHighWatermark: -1, SourceLogStartOffset: -1, DestinationLogEndOffset: -1, Lag: -1,
						LastFetchMillis: -1, StateChangeMillis: -1, LastStableOffset: -1, LagMillis: -1,
					})
					if ps.Leader >= 0 && membership != wire.MembershipStopped {
						byLeader[ps.Leader] = append(byLeader[ps.Leader], pending{len(resp.Mirrors), len(m.Topics), len(t.Partitions) - 1})
					}
				}
			}
			m.Topics = append(m.Topics, t)
		}
		m.Syncs = s.syncStatus(ctx, img, name)
		resp.Mirrors = append(resp.Mirrors, m)
	}
	if !req.IncludePartitions {
		return resp, nil
	}

	// Ask each leader (this broker directly) for the partitions it drives.
	var mu sync.Mutex
	var wg sync.WaitGroup
	answered := map[pending]bool{}
	for leader, ps := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local, err := s.ask(ctx, img, leader, names)
			if err != nil {
				return
			}
			found := map[storage.TopicPartition]wire.DescribeMirrorsResponsePartition{}
			for _, lm := range local.Mirrors {
				for _, lt := range lm.Topics {
					for _, lp := range lt.Partitions {
						found[storage.TopicPartition{Topic: lt.Name, Partition: lp.Partition}] = lp
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, pd := range ps {
				t := &resp.Mirrors[pd.m].Topics[pd.t]
				p := &t.Partitions[pd.p]
				if lp, ok := found[storage.TopicPartition{Topic: t.Name, Partition: p.Partition}]; ok {
					*p = lp
					answered[pd] = true
				}
			}
		}()
	}
	wg.Wait()
	// The state of partitions no leader described comes from the store.
	if s.store != nil {
		for _, ps := range byLeader {
			for _, pd := range ps {
				if answered[pd] {
					continue
				}
				m := &resp.Mirrors[pd.m]
				t := &m.Topics[pd.t]
				p := &t.Partitions[pd.p]
				rctx, cancel := context.WithTimeout(ctx, s.timeout)
				st, err := s.store.Read(rctx, mirrorstate.PartitionKey{Mirror: m.Name, TopicID: t.TopicID, Partition: p.Partition})
				cancel()
				if err != nil {
					msg := "state unavailable: " + err.Error()
					p.LastError = &msg
					continue
				}
				if st.Found {
					p.State = st.Value.State
					p.StateChangeMillis = st.Value.UpdateMillis
					if st.Value.LastError != "" {
						e := st.Value.LastError
						p.LastError = &e
					}
				}
			}
		}
	}
	return resp, nil
}

// ask gets broker leader's local description of the mirrors.
func (s *Describer) ask(ctx context.Context, img *metadata.Image, leader int32, names []string) (*wire.DescribeMirrorsResponse, error) {
	lreq := &wire.DescribeMirrorsRequest{MirrorNames: append([]string{}, names...), IncludePartitions: true}
	setLocalOnly(&lreq.UnknownTags)
	if leader == s.nodeID {
		return s.local(lreq), nil
	}
	addr, err := brokerAddr(img, leader, s.listener)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	resp, err := s.conns.request(rctx, addr, lreq)
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*wire.DescribeMirrorsResponse)
	if !ok {
		return nil, errNotKmirror
	}
	return r, nil
}

// local answers a local-only request: the partitions of the mirrors whose
// drivers run on this broker, with their live figures (when the request
// includes partitions), and the syncs of the mirrors this broker runs.
func (s *Describer) local(req *wire.DescribeMirrorsRequest) *wire.DescribeMirrorsResponse {
	resp := &wire.DescribeMirrorsResponse{Version: req.Version}
	if s.manager == nil {
		return resp
	}
	var views []partitionView
	if req.IncludePartitions {
		views = s.manager.describeLocal(req.MirrorNames)
	}
	for _, name := range req.MirrorNames {
		m := wire.DescribeMirrorsResponseMirror{Name: name, Syncs: s.manager.localSyncs(name)}
		byTopic := map[string]int{}
		for _, v := range views {
			if v.mirror != name {
				continue
			}
			i, ok := byTopic[v.tp.Topic]
			if !ok {
				i = len(m.Topics)
				byTopic[v.tp.Topic] = i
				m.Topics = append(m.Topics, wire.DescribeMirrorsResponseTopic{Name: v.tp.Topic, TopicID: v.topicID, MirrorNameConfig: v.raw})
			}
			m.Topics[i].Partitions = append(m.Topics[i].Partitions, v.partition(s.nodeID))
		}
		resp.Mirrors = append(resp.Mirrors, m)
	}
	return resp
}

// partitionView is a driven partition as DescribeMirrors shows it.
type partitionView struct {
	mirror  string
	raw     string
	tp      storage.TopicPartition
	topicID [16]byte
	status  Status
	known   bool
	stats   statsSnapshot
	leo     int64
	lso     int64
	now     time.Time
}

func (v partitionView) partition(leader int32) wire.DescribeMirrorsResponsePartition {
	p := wire.DescribeMirrorsResponsePartition{
		Partition: v.tp.Partition, LeaderID: leader, State: v.status.State,
		SourceHighWatermark: v.stats.SourceHW, SourceLogStartOffset: v.stats.SourceLogStart,
		DestinationLogEndOffset: v.leo, Lag: -1, LastFetchMillis: -1, StateChangeMillis: v.stats.StateChange.UnixMilli(),
		LastStableOffset: v.lso, LagMillis: -1,
	}
	if v.stats.SourceHW >= 0 && v.leo >= 0 {
		p.Lag = max(0, v.stats.SourceHW-v.leo)
	}
	if secs, ok := v.stats.Lag.seconds(v.stats.SourceHW, v.leo, v.now); ok {
		p.LagMillis = int64(secs * 1000)
	}
	if !v.stats.LastFetch.IsZero() {
		p.LastFetchMillis = v.stats.LastFetch.UnixMilli()
	}
	errText := v.stats.LastError
	if v.status.State == wire.MirrorStateFailed && v.status.LastError != "" {
		errText = v.status.LastError
	}
	if errText != "" {
		p.LastError = &errText
	}
	return p
}

// describeLocal lists the partitions this broker drives for the mirrors
// (all when names is nil).
func (m *Manager) describeLocal(names []string) []partitionView {
	m.mu.Lock()
	drivers := make([]*driver, 0, len(m.drivers))
	for _, d := range m.drivers {
		if names == nil || slices.Contains(names, d.key.Mirror) {
			drivers = append(drivers, d)
		}
	}
	m.mu.Unlock()
	out := make([]partitionView, 0, len(drivers))
	for _, d := range drivers {
		st, known, stats := d.snapshot()
		if !known {
			continue
		}
		d.mu.Lock()
		raw := d.raw
		d.mu.Unlock()
		leo, lso := int64(-1), int64(-1)
		if l := d.part.Log(); l != nil {
			leo, lso = l.LogEndOffset(), failoverCut(l)
		}
		out = append(out, partitionView{mirror: d.key.Mirror, raw: raw, tp: d.tp, topicID: d.topicID, status: st, known: known,
			stats: stats, leo: leo, lso: lso, now: m.cfg.Now()})
	}
	slices.SortFunc(out, func(a, b partitionView) int { return compareTP(a.tp, b.tp) })
	return out
}
