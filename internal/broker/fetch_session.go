package broker

import (
	"container/list"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/metadata"
)

// Incremental fetch sessions (KIP-227). A fetcher that opens a session
// sends its partitions once (a full fetch, epoch 0); later requests
// (incremental, epoch 1, 2, ...) list only partitions whose fetch position
// changed, plus the partitions to forget, and the responses list only the
// partitions with news: records, a changed high watermark or log start
// offset, or an error.
//
// The rules, as Kafka's FetchManager applies them:
//   - session id 0 and epoch -1: a sessionless full fetch;
//   - epoch 0 (with any session id): a full fetch that closes the named
//     session (if any) and opens a new one if the cache has room;
//   - epoch -1 with a session id: a full fetch that closes the session and
//     opens none;
//   - any other epoch: incremental; an unknown session id is
//     FETCH_SESSION_ID_NOT_FOUND, an epoch other than the session's is
//     INVALID_FETCH_SESSION_EPOCH; a session left with no partitions is
//     closed and the fetch served sessionless.
//
// The cache holds at most max.incremental.fetch.session.cache.slots
// sessions. When full, a new session may evict one that has been idle for
// longer than the eviction time, or else the least valuable evictable one:
// follower sessions are worth more than consumer sessions, bigger more than
// smaller; no session is evictable by a consumer's during its first
// eviction period.

const (
	fetchSessionFinalEpoch   = -1
	fetchSessionInitialEpoch = 0
	// fetchSessionEvictionMs is Kafka's minimum idle (or young) time before
	// a session may be evicted for another.
	fetchSessionEvictionMs = 120_000
)

// Session error codes.
var (
	fetchSessionIDNotFound   = kerr.FetchSessionIDNotFound.Code
	invalidFetchSessionEpoch = kerr.InvalidFetchSessionEpoch.Code
	fetchSessionTopicIDError = kerr.FetchSessionTopicIDError.Code
)

// nextFetchSessionEpoch is Kafka's FetchMetadata.nextEpoch.
func nextFetchSessionEpoch(e int32) int32 {
	switch {
	case e < 0:
		return fetchSessionFinalEpoch
	case e == math.MaxInt32:
		return 1
	}
	return e + 1
}

// sessionKey identifies a partition in a session: by topic id for fetchers
// that use ids (Fetch v13+), by name otherwise (then id is zero).
type sessionKey struct {
	id        metadata.Uuid
	topic     string
	partition int32
}

// cachedPartition is a session's memory of one partition: the fetcher's
// last request parameters and what the last response told it.
type cachedPartition struct {
	key                sessionKey
	fetchOffset        int64
	fetcherLogStart    int64
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32

	highWatermark int64 // -1: unknown (never sent, or an error was sent)
	localLogStart int64
}

// fetchSession is one incremental fetch session. Its fields are guarded by
// the cache's mutex.
type fetchSession struct {
	id         int32
	epoch      int32 // the epoch the next request must carry
	privileged bool  // created by a follower
	usesIDs    bool
	created    time.Time
	lastUsed   time.Time

	order *list.List // of *cachedPartition, in response order
	parts map[sessionKey]*list.Element
}

func (s *fetchSession) size() int { return len(s.parts) }

// fetchSessionCache holds the sessions of this broker.
type fetchSessionCache struct {
	maxEntries int
	evictionMs int64
	now        func() time.Time

	mu       sync.Mutex
	sessions map[int32]*fetchSession
}

func newFetchSessionCache(maxEntries int, evictionMs int64, now func() time.Time) *fetchSessionCache {
	return &fetchSessionCache{maxEntries: maxEntries, evictionMs: evictionMs, now: now, sessions: make(map[int32]*fetchSession)}
}

// remove closes a session.
func (c *fetchSessionCache) remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sessions, id)
}

// len returns the number of sessions (for tests and metrics).
func (c *fetchSessionCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

// fetchRequestPartition is one partition as a Fetch request lists it.
type fetchRequestPartition struct {
	key                sessionKey
	fetchOffset        int64
	fetcherLogStart    int64
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
}

// sessionContextKind says how a fetch relates to sessions.
type sessionContextKind int8

const (
	sessionless sessionContextKind = iota // a full fetch without a session
	sessionFull                           // a full fetch that may open a session
	sessionIncremental
	sessionError // the request's session is unknown or its epoch wrong
)

// fetchContext is a request's view of its session, built before the reads
// and completed when the response is assembled.
type fetchContext struct {
	kind    sessionContextKind
	errCode int16
	session *fetchSession // incremental only
	// reqEpoch is the epoch of the incremental request; the session must
	// still be at its successor when the response is built.
	reqEpoch   int32
	partitions []fetchRequestPartition // what to read, in response order
}

// newContext resolves a request's session parameters, as Kafka's
// FetchManager.newContext: full requests close the named session;
// incremental ones update theirs (added, changed and forgotten partitions)
// and advance its epoch.
func (c *fetchSessionCache) newContext(sessionID, epoch int32, reqParts []fetchRequestPartition, forgotten []sessionKey, usesIDs bool) *fetchContext {
	if epoch == fetchSessionInitialEpoch || epoch == fetchSessionFinalEpoch {
		if sessionID != 0 {
			c.remove(sessionID)
		}
		if epoch == fetchSessionFinalEpoch {
			return &fetchContext{kind: sessionless, partitions: reqParts}
		}
		return &fetchContext{kind: sessionFull, partitions: reqParts}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[sessionID]
	if !ok {
		return &fetchContext{kind: sessionError, errCode: fetchSessionIDNotFound}
	}
	if s.epoch != epoch {
		return &fetchContext{kind: sessionError, errCode: invalidFetchSessionEpoch}
	}
	if s.usesIDs != usesIDs {
		return &fetchContext{kind: sessionError, errCode: fetchSessionTopicIDError}
	}
	for _, rp := range reqParts {
		if el, ok := s.parts[rp.key]; ok {
			cp := el.Value.(*cachedPartition)
			cp.fetchOffset, cp.fetcherLogStart, cp.maxBytes = rp.fetchOffset, rp.fetcherLogStart, rp.maxBytes
			cp.currentLeaderEpoch, cp.lastFetchedEpoch = rp.currentLeaderEpoch, rp.lastFetchedEpoch
			continue
		}
		cp := &cachedPartition{
			key: rp.key, fetchOffset: rp.fetchOffset, fetcherLogStart: rp.fetcherLogStart, maxBytes: rp.maxBytes,
			currentLeaderEpoch: rp.currentLeaderEpoch, lastFetchedEpoch: rp.lastFetchedEpoch,
			highWatermark: -1, localLogStart: -1,
		}
		s.parts[rp.key] = s.order.PushBack(cp)
	}
	for _, k := range forgotten {
		if el, ok := s.parts[k]; ok {
			s.order.Remove(el)
			delete(s.parts, k)
		}
	}
	if s.size() == 0 {
		delete(c.sessions, s.id)
		return &fetchContext{kind: sessionless, partitions: reqParts}
	}
	s.lastUsed = c.now()
	s.epoch = nextFetchSessionEpoch(s.epoch)
	ctx := &fetchContext{kind: sessionIncremental, session: s, reqEpoch: epoch}
	for el := s.order.Front(); el != nil; el = el.Next() {
		cp := el.Value.(*cachedPartition)
		ctx.partitions = append(ctx.partitions, fetchRequestPartition{
			key: cp.key, fetchOffset: cp.fetchOffset, fetcherLogStart: cp.fetcherLogStart, maxBytes: cp.maxBytes,
			currentLeaderEpoch: cp.currentLeaderEpoch, lastFetchedEpoch: cp.lastFetchedEpoch,
		})
	}
	return ctx
}

// partitionOutcome is what the response says about one partition, as far
// as sessions care.
type partitionOutcome struct {
	key        sessionKey
	hasRecords bool
	hw         int64
	logStart   int64
	errCode    int16
	diverging  bool
}

// mustRespond is Kafka's CachedPartition.maybeUpdateResponseData: whether
// an incremental response must include the partition, updating the cached
// view when update is set.
func (cp *cachedPartition) mustRespond(o partitionOutcome, update bool) bool {
	must := o.hasRecords || o.diverging
	if cp.highWatermark != o.hw {
		must = true
		if update {
			cp.highWatermark = o.hw
		}
	}
	if cp.localLogStart != o.logStart {
		must = true
		if update {
			cp.localLogStart = o.logStart
		}
	}
	if o.errCode != 0 {
		// An error is always sent, and forgets the high watermark so that
		// the partition is sent again once the error is gone.
		must = true
		if update {
			cp.highWatermark = -1
		}
	}
	return must
}

// complete finishes the context once the partitions are read: a full fetch
// may open a session (its id is returned, 0 if none); an incremental fetch
// selects the partitions to include (keep[i] for outcomes[i]) and moves
// them to the back of the session's order, so that the next response
// starts with partitions that had nothing to say, as Kafka does for
// fairness. A session whose epoch moved on meanwhile (a duplicate request)
// answers INVALID_FETCH_SESSION_EPOCH.
func (c *fetchSessionCache) complete(fc *fetchContext, outcomes []partitionOutcome, privileged bool) (sessionID int32, keep []bool, errCode int16) {
	keep = make([]bool, len(outcomes))
	switch fc.kind {
	case sessionless, sessionError:
		for i := range keep {
			keep[i] = true
		}
		return 0, keep, fc.errCode
	case sessionFull:
		for i := range keep {
			keep[i] = true
		}
		return c.maybeCreate(fc, outcomes, privileged), keep, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := fc.session
	if cur, ok := c.sessions[s.id]; !ok || cur != s || s.epoch != nextFetchSessionEpoch(fc.reqEpoch) {
		return s.id, nil, invalidFetchSessionEpoch
	}
	var moved []*list.Element
	for i, o := range outcomes {
		el, ok := s.parts[o.key]
		if !ok {
			continue
		}
		if el.Value.(*cachedPartition).mustRespond(o, true) {
			keep[i] = true
			moved = append(moved, el)
		}
	}
	for _, el := range moved {
		s.order.MoveToBack(el)
	}
	return s.id, keep, 0
}

// maybeCreate opens a session for a full fetch if the cache has room or
// can evict one.
func (c *fetchSessionCache) maybeCreate(fc *fetchContext, outcomes []partitionOutcome, privileged bool) int32 {
	if c.maxEntries <= 0 || len(fc.partitions) == 0 {
		return 0
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) >= c.maxEntries && !c.tryEvictLocked(privileged, len(fc.partitions), now) {
		return 0
	}
	s := &fetchSession{
		id: c.newIDLocked(), epoch: nextFetchSessionEpoch(fetchSessionInitialEpoch), privileged: privileged,
		created: now, lastUsed: now, order: list.New(), parts: make(map[sessionKey]*list.Element, len(fc.partitions)),
	}
	for i, rp := range fc.partitions {
		s.usesIDs = !rp.key.id.IsZero()
		cp := &cachedPartition{
			key: rp.key, fetchOffset: rp.fetchOffset, fetcherLogStart: rp.fetcherLogStart, maxBytes: rp.maxBytes,
			currentLeaderEpoch: rp.currentLeaderEpoch, lastFetchedEpoch: rp.lastFetchedEpoch,
			highWatermark: -1, localLogStart: -1,
		}
		if i < len(outcomes) {
			cp.mustRespond(outcomes[i], true)
		}
		if _, dup := s.parts[rp.key]; !dup {
			s.parts[rp.key] = s.order.PushBack(cp)
		}
	}
	c.sessions[s.id] = s
	return s.id
}

// newIDLocked returns a random positive session id not in use.
func (c *fetchSessionCache) newIDLocked() int32 {
	for {
		id := rand.Int32N(math.MaxInt32-1) + 1
		if _, used := c.sessions[id]; !used {
			return id
		}
	}
}

// tryEvictLocked makes room for a new session of size partitions: the
// least recently used session if it is stale, else the least valuable
// evictable session if it is worth less than the new one.
func (c *fetchSessionCache) tryEvictLocked(privileged bool, size int, now time.Time) bool {
	var lru *fetchSession
	for _, s := range c.sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || (s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id) {
			lru = s
		}
	}
	if lru == nil {
		return false
	}
	if now.Sub(lru.lastUsed).Milliseconds() > c.evictionMs {
		delete(c.sessions, lru.id)
		return true
	}
	var victim *fetchSession
	for _, s := range c.sessions {
		old := now.Sub(s.created).Milliseconds() > c.evictionMs
		// Kafka's evictable sets: consumers' sessions once old; a
		// follower may also evict young consumer sessions.
		if !(old || (privileged && !s.privileged)) {
			continue
		}
		if victim == nil || lessValuable(s, victim) {
			victim = s
		}
	}
	if victim == nil {
		return false
	}
	// The new session must be worth more than the victim (Kafka compares
	// (privileged, size, id) with id 0 for the new one, so equal sizes lose).
	if !(privileged && !victim.privileged) && !(privileged == victim.privileged && size > victim.size()) {
		return false
	}
	delete(c.sessions, victim.id)
	return true
}

// lessValuable orders sessions by (privileged, size, id), Kafka's
// EvictableKey order.
func lessValuable(a, b *fetchSession) bool {
	if a.privileged != b.privileged {
		return !a.privileged
	}
	if a.size() != b.size() {
		return a.size() < b.size()
	}
	return a.id < b.id
}
