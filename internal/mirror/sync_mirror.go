package mirror

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
)

// Sync kinds, in the order a round runs them and DescribeMirrors lists
// them (SyncKinds).
const (
	syncConfigs      = "configs"
	syncPartitions   = "partitions"
	syncGroupOffsets = "group-offsets"
	syncACLs         = "acls"
)

// syncKindStatus is what DescribeMirrors reports of one kind of sync.
type syncKindStatus struct {
	kind        string
	lastSuccess time.Time // zero: never
	lastError   string    // of the last attempt; "" when it succeeded
}

// mirrorSync is one mirror's periodic sync on the broker that owns it:
// every mirror.metadata.refresh.interval.ms it copies from the source what
// the mirror's sync.* properties enable — topic configs, partition counts,
// consumer group offsets and ACLs — for the topics whose mirror.name is the
// mirror (not paused, not removed). One goroutine per mirror; its source
// client lives as long as it does (a change of the mirror's properties
// starts a new mirrorSync).
type mirrorSync struct {
	r    *syncRunner
	name string
	cfgs map[string]string
	log  *slog.Logger
	prev *mirrorSync // the one this replaces, finished first

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	status map[string]*syncKindStatus

	cl *kgo.Client // owned by the run goroutine
}

func newMirrorSync(r *syncRunner, name string, cfgs map[string]string, prev *mirrorSync) *mirrorSync {
	s := &mirrorSync{
		r: r, name: name, cfgs: cfgs, prev: prev,
		log:    r.log.With("mirror", name),
		done:   make(chan struct{}),
		status: map[string]*syncKindStatus{},
	}
	for _, k := range SyncKinds {
		s.status[k] = &syncKindStatus{kind: k}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

func (s *mirrorSync) start() {
	s.r.m.wg.Add(1)
	go func() {
		defer s.r.m.wg.Done()
		defer close(s.done)
		s.run()
	}()
}

// stop ends the sync; it returns at once, done closes when it has.
func (s *mirrorSync) stop() { s.cancel() }

func (s *mirrorSync) run() {
	if s.prev != nil {
		select {
		case <-s.prev.done:
		case <-s.ctx.Done():
			return
		}
		s.prev = nil
	}
	defer func() {
		if s.cl != nil {
			s.cl.Close()
		}
	}()
	s.log.Info("mirror sync started", "interval", s.r.m.cfg.MetadataRefreshInterval)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		s.round()
		t.Reset(s.r.m.cfg.MetadataRefreshInterval)
	}
}

// syncRound is what one round works on.
type syncRound struct {
	cfg *mirrorconfig.Config
	cl  *kgo.Client
	img *metadata.Image
	// topics are the mirror's topics in MIRRORING membership (mirror.name
	// is the mirror's name): paused and removed topics are not synced.
	topics []string
}

// round runs every enabled kind of sync once, each bounded by the request
// timeout and recorded on its own.
func (s *mirrorSync) round() {
	cfgs, err := s.r.m.deps.Secrets.Reveal(s.cfgs)
	if err != nil {
		s.failAll(err)
		return
	}
	cfg, err := mirrorconfig.Parse(cfgs)
	if err != nil {
		s.failAll(err)
		return
	}
	if s.cl == nil {
		opts, err := s.r.m.deps.ClientOpts(cfgs)
		if err == nil {
			s.cl, err = kgo.NewClient(append(opts, kgo.RetryTimeout(s.r.m.cfg.RequestTimeout))...)
		}
		if err != nil {
			s.failAll(fmt.Errorf("source client: %w", err))
			return
		}
	}
	rd := syncRound{cfg: cfg, cl: s.cl, img: s.r.m.image()}
	for _, t := range topicsOfMirror(rd.img, s.name) {
		raw, _ := rd.img.Config(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: t}, metadata.MirrorNameConfig)
		if _, d := ParseMirrorName(raw); d == DesiredMirroring {
			rd.topics = append(rd.topics, t)
		}
	}
	slices.Sort(rd.topics)
	kinds := []struct {
		kind    string
		enabled bool
		run     func(context.Context, syncRound) error
	}{
		{syncConfigs, cfg.SyncTopicConfigs, s.syncConfigs},
		{syncPartitions, cfg.SyncTopicPartitions, s.syncPartitions},
		{syncGroupOffsets, cfg.SyncGroupOffsets, s.syncGroupOffsets},
		{syncACLs, cfg.SyncTopicACLs, s.syncACLs},
	}
	for _, k := range kinds {
		if s.ctx.Err() != nil {
			return
		}
		if !k.enabled {
			continue
		}
		ctx, cancel := context.WithTimeout(s.ctx, s.r.m.cfg.RequestTimeout)
		err := k.run(ctx, rd)
		cancel()
		if s.ctx.Err() != nil {
			return
		}
		s.record(k.kind, err)
	}
}

// record notes the outcome of one kind's attempt.
func (s *mirrorSync) record(kind string, err error) {
	s.mu.Lock()
	st := s.status[kind]
	prevErr := st.lastError
	if err == nil {
		st.lastSuccess, st.lastError = s.r.m.cfg.Now(), ""
	} else {
		st.lastError = explainSourceError(err)
	}
	s.mu.Unlock()
	if err != nil {
		s.r.m.stats.syncFailed(s.name, kind)
	}
	switch {
	case err != nil && st.lastError != prevErr:
		s.log.Warn("mirror sync failed; retrying next interval", "sync", kind, "error", st.lastError)
	case err == nil && prevErr != "":
		s.log.Info("mirror sync recovered", "sync", kind)
	}
}

// failAll records err for every enabled kind (the round could not start).
func (s *mirrorSync) failAll(err error) {
	for _, k := range SyncKinds {
		s.record(k, err)
	}
}

// statuses returns the kinds' status, in SyncKinds order.
func (s *mirrorSync) statuses() []syncKindStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]syncKindStatus, 0, len(SyncKinds))
	for _, k := range SyncKinds {
		out = append(out, *s.status[k])
	}
	return out
}

// image returns the metadata image the manager last applied.
func (m *Manager) image() *metadata.Image {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.img
}

// errJoin joins the errors of a sync's items into one line (it is shown
// by DescribeMirrors), wrapping the first; nil when none.
func errJoin(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	var rest []string
	for _, e := range errs[1:min(len(errs), 3)] {
		rest = append(rest, e.Error())
	}
	if len(errs) > 3 {
		rest = append(rest, fmt.Sprintf("and %d more", len(errs)-3))
	}
	if len(rest) == 0 {
		return errs[0]
	}
	return fmt.Errorf("%w; %s", errs[0], strings.Join(rest, "; "))
}
