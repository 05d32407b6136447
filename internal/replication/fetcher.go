package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
)

// partition is a fetcher's state for one partition. A new AddPartition
// makes a new value, so a pointer identifies one "add": a response is
// applied only to the partition value its request was built from.
type partition struct {
	add              AddPartition
	state            State
	fetchOffset      int64
	lastFetchedEpoch int32
	delayUntil       time.Time
	hw, logStart     int64 // the source's, from the last response; -1 before
	lastErr          error
}

// fetcher fetches a set of partitions from one source broker over one
// endpoint, one request at a time, on its own goroutine.
type fetcher struct {
	m   *Manager
	cfg *Config
	key fetcherKey
	log *slog.Logger

	// mu guards source and parts, and is held while targets are called.
	mu     sync.Mutex
	source Source
	parts  map[storage.TopicPartition]*partition

	wake   chan struct{} // buffered: a partition was added or changed
	ctx    context.Context
	cancel context.CancelFunc

	// Owned by the run goroutine.
	ep       Endpoint
	epSource Source
	session  fetchSession
	useIDs   bool
}

func newFetcher(m *Manager, key fetcherKey, src Source) *fetcher {
	f := &fetcher{
		m: m, cfg: &m.cfg, key: key, source: src,
		log:     m.log.With("source", src.String(), "fetcher", key.id),
		parts:   make(map[storage.TopicPartition]*partition),
		wake:    make(chan struct{}, 1),
		session: fetchSession{disabled: m.cfg.NoSessions},
	}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	return f
}

// start runs the fetcher's goroutine; the manager's wait group owns it.
func (f *fetcher) start() {
	f.m.wg.Add(1)
	go func() {
		defer f.m.wg.Done()
		f.run()
	}()
}

// stop ends the goroutine (asynchronously).
func (f *fetcher) stop() { f.cancel() }

func (f *fetcher) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// add adds or replaces a partition (see Manager.AddPartitions).
func (f *fetcher) add(p AddPartition) {
	f.mu.Lock()
	if p.Source != f.source {
		// The broker moved (a new address): the run goroutine reconnects.
		f.source = p.Source
	}
	tp := p.TopicPartition
	if old := f.parts[tp]; old != nil && old.add.Source == p.Source && old.add.LeaderEpoch == p.LeaderEpoch && old.add.TopicID == p.TopicID {
		old.add.Target = p.Target
		f.mu.Unlock()
		return
	}
	st := &partition{add: p, state: StateFetching, fetchOffset: p.FetchOffset, lastFetchedEpoch: -1, hw: -1, logStart: -1}
	if st.fetchOffset < 0 {
		st.fetchOffset = p.Target.LogEndOffset()
	}
	if e, ok := p.Target.LatestEpoch(); ok {
		st.lastFetchedEpoch = e
	}
	f.parts[tp] = st
	// Read the state for the log line while holding the lock: once it is
	// released the fetch loop owns st.
	offset, epoch := st.fetchOffset, st.lastFetchedEpoch
	f.mu.Unlock()
	f.log.Debug("partition added", "topic", tp.Topic, "partition", tp.Partition, "fetch_offset", offset,
		"last_fetched_epoch", epoch, "leader_epoch", p.LeaderEpoch)
	f.signal()
}

// remove drops a partition and returns how many are left. Once it returns
// the fetcher no longer calls the partition's target: targets are called
// only under mu, and only for partitions in parts.
func (f *fetcher) remove(tp storage.TopicPartition) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.parts, tp)
	return len(f.parts)
}

func (f *fetcher) status(tp storage.TopicPartition) (PartitionStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.parts[tp]
	if !ok {
		return PartitionStatus{}, false
	}
	return PartitionStatus{
		Source: st.add.Source, LeaderEpoch: st.add.LeaderEpoch, State: st.state,
		FetchOffset: st.fetchOffset, LastFetchedEpoch: st.lastFetchedEpoch,
		SourceHighWatermark: st.hw, SourceLogStart: st.logStart, LastError: st.lastErr,
	}, true
}

// inflight is a partition of a request in flight, as it was when the
// request was built.
type inflight struct {
	st          *partition
	fetchOffset int64
}

// plan is one request: what it carries and what the fetcher expects back.
type plan struct {
	req     *kmsg.FetchRequest
	session sessionRequest
	want    map[sessionKey]sessionParams
	parts   map[sessionKey]inflight
}

// run is the fetcher's loop: build a request from the partitions ready
// to fetch, send it, apply the response; wait when nothing is ready.
func (f *fetcher) run() {
	defer f.dropEndpoint()
	if f.cfg.Pipeline && f.cfg.ReplicaID < 0 {
		f.runPipelined()
		return
	}
	for f.ctx.Err() == nil {
		p, nextReady := f.plan(nil)
		if p == nil {
			f.idle(nextReady)
			continue
		}
		if lim := f.cfg.Limiter; lim != nil {
			if err := lim.Wait(f.ctx); err != nil {
				return
			}
		}
		ep, err := f.endpoint()
		if err != nil {
			if f.ctx.Err() != nil {
				return
			}
			f.failed(p, fmt.Errorf("connect to %s: %w", f.currentSource(), err))
			continue
		}
		rctx, cancel := context.WithTimeout(f.ctx, f.cfg.MaxWait+f.cfg.RequestTimeout)
		resp, err := ep.Fetch(rctx, p.req)
		cancel()
		if err != nil {
			if f.ctx.Err() != nil {
				return
			}
			f.dropEndpoint()
			f.session.reset()
			f.failed(p, fmt.Errorf("fetch from %s: %w", f.currentSource(), err))
			continue
		}
		if lim := f.cfg.Limiter; lim != nil {
			lim.Consume(responseBytes(resp))
		}
		resets, fenced := f.apply(p, resp)
		if on := f.cfg.OnFenced; on != nil {
			for _, st := range fenced {
				on(st.add.TopicPartition, st.lastErr)
			}
		}
		if len(resets) > 0 {
			f.resolveOutOfRange(resets)
		}
	}
}

// idle waits for a partition to become ready: an addition, the end of the
// earliest backoff, or the end of the fetcher.
func (f *fetcher) idle(nextReady time.Time) {
	var timer <-chan time.Time
	if !nextReady.IsZero() {
		t := time.NewTimer(max(nextReady.Sub(f.cfg.Now()), time.Millisecond))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-f.ctx.Done():
	case <-f.wake:
	case <-timer:
	}
}

func (f *fetcher) currentSource() Source {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.source
}

// endpoint returns the connection to the current source, opening one if
// needed (and closing one to an old address).
func (f *fetcher) endpoint() (Endpoint, error) {
	src := f.currentSource()
	if f.ep != nil && f.epSource == src {
		return f.ep, nil
	}
	f.dropEndpoint()
	ctx, cancel := context.WithTimeout(f.ctx, f.cfg.RequestTimeout)
	defer cancel()
	ep, err := f.cfg.NewEndpoint(ctx, src)
	if err != nil {
		return nil, err
	}
	f.ep, f.epSource = ep, src
	f.session.reset()
	return ep, nil
}

func (f *fetcher) dropEndpoint() {
	if f.ep != nil {
		_ = f.ep.Close()
		f.ep = nil
	}
}

// plan builds the next request from the partitions ready to fetch, or
// returns nil and the time the earliest delayed partition becomes ready
// (zero if none). ahead, when not nil, holds the positions partitions will
// have once a response received but not applied yet is (pipelining); the
// request asks from there.
func (f *fetcher) plan(ahead map[*partition]position) (*plan, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.cfg.Now()
	var ready []*partition
	var nextReady time.Time
	for _, st := range f.parts {
		if st.state == StateDelayed {
			if now.Before(st.delayUntil) {
				if nextReady.IsZero() || st.delayUntil.Before(nextReady) {
					nextReady = st.delayUntil
				}
				continue
			}
			st.state = StateFetching
		}
		if st.state == StateFetching {
			ready = append(ready, st)
		}
	}
	if len(ready) == 0 {
		return nil, nextReady
	}
	slices.SortFunc(ready, func(a, b *partition) int { return compareTP(a.add.TopicPartition, b.add.TopicPartition) })

	version := f.cfg.FetchVersion
	useIDs := version >= 13
	for _, st := range ready {
		if st.add.TopicID == ([16]byte{}) {
			useIDs = false
		}
	}
	if !useIDs && version >= 13 {
		version = 12
	}
	if useIDs != f.useIDs {
		f.session.reset() // the session's keys change kind
		f.useIDs = useIDs
	}

	p := &plan{want: make(map[sessionKey]sessionParams, len(ready)), parts: make(map[sessionKey]inflight, len(ready))}
	order := make([]sessionKey, 0, len(ready))
	for _, st := range ready {
		k := f.keyOf(st, useIDs)
		logStart := int64(-1)
		if f.cfg.ReplicaID >= 0 {
			logStart = st.add.Target.LogStartOffset()
		}
		pos := position{offset: st.fetchOffset, lastFetchedEpoch: st.lastFetchedEpoch}
		if a, ok := ahead[st]; ok {
			pos = a
		}
		p.want[k] = sessionParams{
			fetchOffset: pos.offset, logStartOffset: logStart, maxBytes: f.cfg.PartitionMaxBytes,
			leaderEpoch: st.add.LeaderEpoch, lastFetchedEpoch: pos.lastFetchedEpoch,
		}
		p.parts[k] = inflight{st: st, fetchOffset: pos.offset}
		order = append(order, k)
	}
	p.session = f.session.next(p.want, order)

	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID = f.cfg.ReplicaID
	req.ReplicaState.ID = f.cfg.ReplicaID
	req.ReplicaState.Epoch = -1
	if f.cfg.ReplicaID >= 0 && f.cfg.BrokerEpoch != nil {
		req.ReplicaState.Epoch = f.cfg.BrokerEpoch()
	}
	req.MaxWaitMillis = int32(f.cfg.MaxWait.Milliseconds())
	req.MinBytes = f.cfg.MinBytes
	req.MaxBytes = f.cfg.MaxBytes
	req.IsolationLevel = f.cfg.IsolationLevel
	req.SessionID, req.SessionEpoch = p.session.id, p.session.epoch
	req.Rack = f.cfg.RackID
	for _, k := range p.session.send {
		w := p.want[k]
		rt := fetchTopic(&req.Topics, k)
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = k.partition
		rp.CurrentLeaderEpoch = w.leaderEpoch
		rp.FetchOffset = w.fetchOffset
		rp.LastFetchedEpoch = w.lastFetchedEpoch
		rp.LogStartOffset = w.logStartOffset
		rp.PartitionMaxBytes = w.maxBytes
		rt.Partitions = append(rt.Partitions, rp)
	}
	for _, k := range p.session.forget {
		var ft *kmsg.FetchRequestForgottenTopic
		for i := range req.ForgottenTopics {
			if req.ForgottenTopics[i].TopicID == k.id && req.ForgottenTopics[i].Topic == k.topic {
				ft = &req.ForgottenTopics[i]
			}
		}
		if ft == nil {
			t := kmsg.NewFetchRequestForgottenTopic()
			t.Topic, t.TopicID = k.topic, k.id
			req.ForgottenTopics = append(req.ForgottenTopics, t)
			ft = &req.ForgottenTopics[len(req.ForgottenTopics)-1]
		}
		ft.Partitions = append(ft.Partitions, k.partition)
	}
	p.req = req
	return p, time.Time{}
}

// keyOf is a partition's session key for requests that do or do not use
// topic ids.
func (f *fetcher) keyOf(st *partition, useIDs bool) sessionKey {
	if useIDs {
		return sessionKey{id: st.add.TopicID, partition: st.add.TopicPartition.Partition}
	}
	return sessionKey{topic: st.add.TopicPartition.Topic, partition: st.add.TopicPartition.Partition}
}

// fetchTopic returns the request's entry for k's topic, adding it; the
// partitions come sorted by topic, so only the last entry can match.
func fetchTopic(topics *[]kmsg.FetchRequestTopic, k sessionKey) *kmsg.FetchRequestTopic {
	ts := *topics
	if n := len(ts); n > 0 && ts[n-1].TopicID == k.id && ts[n-1].Topic == k.topic {
		return &ts[n-1]
	}
	t := kmsg.NewFetchRequestTopic()
	t.TopicID, t.Topic = k.id, k.topic
	*topics = append(ts, t)
	return &(*topics)[len(*topics)-1]
}

func compareTP(a, b storage.TopicPartition) int {
	if a.Topic != b.Topic {
		if a.Topic < b.Topic {
			return -1
		}
		return 1
	}
	return int(a.Partition) - int(b.Partition)
}

// responseBytes is the record bytes of a response (what throttling
// counts).
func responseBytes(resp *kmsg.FetchResponse) int64 {
	var n int64
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			n += int64(len(p.RecordBatches))
		}
	}
	return n
}

// current reports whether in still describes a partition of the fetcher
// that the request's answer may be applied to. Caller holds mu.
func (f *fetcher) current(in inflight) bool {
	st := in.st
	return f.parts[st.add.TopicPartition] == st && st.fetchOffset == in.fetchOffset && st.state == StateFetching
}

// delayLocked backs a partition off after err. Caller holds mu.
func (f *fetcher) delayLocked(st *partition, err error) {
	st.state = StateDelayed
	st.delayUntil = f.cfg.Now().Add(f.cfg.Backoff)
	st.lastErr = err
}

// failed backs off every partition of a request that failed as a whole.
func (f *fetcher) failed(p *plan, err error) {
	f.m.stats.failures.Add(1)
	f.mu.Lock()
	n := 0
	for _, in := range p.parts {
		if f.current(in) {
			f.delayLocked(in.st, err)
			n++
		}
	}
	f.mu.Unlock()
	if n > 0 {
		f.log.Info("fetch failed; backing off", "partitions", n, "backoff", f.cfg.Backoff, "error", err)
	}
}

// apply applies a response to the partitions of the request it answers.
// It returns the partitions that need their out-of-range position resolved
// and those that were fenced.
func (f *fetcher) apply(p *plan, resp *kmsg.FetchResponse) (resets, fenced []*partition) {
	if !f.received(p, resp) {
		return nil, nil
	}
	return f.applyData(p, resp)
}

// received records a response in the fetch session and handles its
// top-level error; it reports whether the partitions' answers are to be
// applied.
func (f *fetcher) received(p *plan, resp *kmsg.FetchResponse) bool {
	f.m.stats.responses.Add(1)
	f.m.stats.bytes.Add(uint64(responseBytes(resp)))
	f.mu.Lock()
	defer f.mu.Unlock()
	f.session.done(p.session, p.want, resp.ErrorCode, resp.SessionID)
	if resp.ErrorCode != 0 {
		err := fmt.Errorf("fetch from %s: %w", f.source, kerr.ErrorForCode(resp.ErrorCode))
		switch resp.ErrorCode {
		case kerr.FetchSessionIDNotFound.Code, kerr.InvalidFetchSessionEpoch.Code, kerr.FetchSessionTopicIDError.Code:
			// The next request is a full fetch that opens a new session.
			f.log.Debug("fetch session reset", "error", err)
		default:
			for _, in := range p.parts {
				if f.current(in) {
					f.delayLocked(in.st, err)
				}
			}
		}
		return false
	}
	return true
}

// applyData applies each partition's answer of a received response to the
// partitions it still describes.
func (f *fetcher) applyData(p *plan, resp *kmsg.FetchResponse) (resets, fenced []*partition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	useIDs := p.req.Version >= 13
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			k := sessionKey{partition: rp.Partition}
			if useIDs {
				k.id = t.TopicID
			} else {
				k.topic = t.Topic
			}
			in, ok := p.parts[k]
			if !ok || !f.current(in) {
				continue
			}
			switch f.applyPartition(in.st, rp) {
			case reactOutOfRange:
				resets = append(resets, in.st)
			case reactFence:
				fenced = append(fenced, in.st)
			}
		}
	}
	return resets, fenced
}

// applyPartition applies one partition's answer. Caller holds mu. It
// returns reactOutOfRange or reactFence when the partition left the
// fetching state for those reasons.
func (f *fetcher) applyPartition(st *partition, rp *kmsg.FetchResponseTopicPartition) reaction {
	tp, t := st.add.TopicPartition, st.add.Target
	code := rp.ErrorCode
	switch classify(code) {
	case reactOutOfRange:
		st.state = StateResetting
		st.lastErr = fmt.Errorf("fetch %s at %d: %w", tp, st.fetchOffset, kerr.ErrorForCode(code))
		return reactOutOfRange
	case reactFence:
		st.state = StateFenced
		st.lastErr = fmt.Errorf("fetch %s in leader epoch %d: %w", tp, st.add.LeaderEpoch, kerr.ErrorForCode(code))
		f.log.Info("partition fenced: waiting for newer metadata", "topic", tp.Topic, "partition", tp.Partition, "leader_epoch", st.add.LeaderEpoch)
		return reactFence
	case reactBackoff:
		f.delayLocked(st, fmt.Errorf("fetch %s: %w", tp, kerr.ErrorForCode(code)))
		f.log.Debug("partition error; backing off", "topic", tp.Topic, "partition", tp.Partition, "error", st.lastErr)
		return reactBackoff
	}
	st.hw, st.logStart = rp.HighWatermark, rp.LogStartOffset
	if rp.DivergingEpoch.EndOffset >= 0 {
		leo := t.LogEndOffset()
		tr := divergenceTruncation(rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset, leo, t.EndOffsetForEpoch)
		if err := t.Truncate(tr.offset); err != nil {
			f.delayLocked(st, fmt.Errorf("truncate %s to %d: %w", tp, tr.offset, err))
			f.log.Warn("truncation failed", "topic", tp.Topic, "partition", tp.Partition, "offset", tr.offset, "error", err)
			return reactBackoff
		}
		f.log.Info("truncated diverging log", "topic", tp.Topic, "partition", tp.Partition,
			"last_fetched_epoch", st.lastFetchedEpoch, "diverging_epoch", rp.DivergingEpoch.Epoch,
			"diverging_end_offset", rp.DivergingEpoch.EndOffset, "log_end_offset", leo, "truncated_to", t.LogEndOffset(), "complete", tr.complete)
		f.resetPosition(st)
		st.lastErr = nil
		return reactNone
	}
	if len(rp.RecordBatches) > 0 {
		last, err := t.Append(rp.RecordBatches)
		if err != nil {
			f.delayLocked(st, fmt.Errorf("append to %s at %d: %w", tp, st.fetchOffset, err))
			f.log.Warn("append of fetched data failed; backing off", "topic", tp.Topic, "partition", tp.Partition,
				"fetch_offset", st.fetchOffset, "error", err)
			return reactBackoff
		}
		if last >= st.fetchOffset {
			st.fetchOffset = last + 1
			if e, ok := t.LatestEpoch(); ok {
				st.lastFetchedEpoch = e
			}
		}
	}
	t.SetHighWatermark(rp.HighWatermark)
	if rp.LogStartOffset >= 0 {
		t.MaybeIncrementLogStartOffset(rp.LogStartOffset)
	}
	st.lastErr = nil
	return reactNone
}

// resetPosition restarts a partition's fetch at its target's log end, with
// the target's latest epoch. Caller holds mu.
func (f *fetcher) resetPosition(st *partition) {
	st.fetchOffset = st.add.Target.LogEndOffset()
	st.lastFetchedEpoch = -1
	if e, ok := st.add.Target.LatestEpoch(); ok {
		st.lastFetchedEpoch = e
	}
	st.state = StateFetching
}

// resolveOutOfRange asks the source for the log ranges of partitions it
// refused as out of range (without holding mu: the answer takes a round
// trip) and moves each back into range.
func (f *fetcher) resolveOutOfRange(resets []*partition) {
	refs := make([]PartitionRef, len(resets))
	for i, st := range resets {
		refs[i] = PartitionRef{TopicPartition: st.add.TopicPartition, TopicID: st.add.TopicID, LeaderEpoch: st.add.LeaderEpoch}
	}
	var ranges []OffsetRange
	ep, err := f.endpoint()
	if err == nil {
		ctx, cancel := context.WithTimeout(f.ctx, f.cfg.RequestTimeout)
		ranges, err = ep.EarliestLatest(ctx, refs)
		cancel()
		if err == nil && len(ranges) != len(refs) {
			err = fmt.Errorf("log ranges: %d answers for %d partitions", len(ranges), len(refs))
		}
		if err != nil {
			f.dropEndpoint()
		}
	}
	var fenced []*partition
	f.mu.Lock()
	for i, st := range resets {
		if f.parts[st.add.TopicPartition] != st || st.state != StateResetting {
			continue
		}
		tp := st.add.TopicPartition
		if err != nil {
			f.delayLocked(st, fmt.Errorf("log range of %s: %w", tp, err))
			continue
		}
		r := ranges[i]
		if r.Err != nil {
			var ke *kerr.Error
			if errors.As(r.Err, &ke) && classify(ke.Code) == reactFence {
				st.state, st.lastErr = StateFenced, r.Err
				fenced = append(fenced, st)
				continue
			}
			f.delayLocked(st, r.Err)
			continue
		}
		if reset := f.applyRange(st, r); reset != nil {
			f.delayLocked(st, reset)
		}
	}
	f.mu.Unlock()
	if on := f.cfg.OnFenced; on != nil {
		for _, st := range fenced {
			on(st.add.TopicPartition, st.lastErr)
		}
	}
}

// applyRange moves a partition back into the source's range r. It returns
// an error when the partition must back off: the action failed, or there
// was nothing to do (the source refused an offset inside its own range; a
// retry right away could spin). Caller holds mu.
func (f *fetcher) applyRange(st *partition, r OffsetRange) error {
	tp, t := st.add.TopicPartition, st.add.Target
	leo := t.LogEndOffset()
	act := resolveOutOfRange(leo, r)
	switch {
	case act.truncateTo >= 0:
		if err := t.Truncate(act.truncateTo); err != nil {
			return fmt.Errorf("truncate %s to %d: %w", tp, act.truncateTo, err)
		}
		f.log.Warn("source log ends before the local log: truncated", "topic", tp.Topic, "partition", tp.Partition,
			"local_log_end", leo, "source_log_end", r.End)
	case act.restartAt >= 0:
		if err := t.TruncateFullyAndStartAt(act.restartAt); err != nil {
			return fmt.Errorf("restart %s at %d: %w", tp, act.restartAt, err)
		}
		f.log.Info("local log ends before the source's log start: restarted empty", "topic", tp.Topic, "partition", tp.Partition,
			"local_log_end", leo, "source_log_start", r.Start)
	default:
		f.resetPosition(st)
		return fmt.Errorf("fetch %s at %d: out of range of [%d, %d]: %w", tp, leo, r.Start, r.End, kerr.OffsetOutOfRange)
	}
	f.resetPosition(st)
	st.lastErr = nil
	return nil
}
