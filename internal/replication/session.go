package replication

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fetchSession is the fetcher's side of a KIP-227 incremental fetch
// session with its source. The source remembers the partitions of a
// session and their last request parameters; after the full fetch that
// opens the session (epoch 0), each request (epoch 1, 2, ...) lists only
// the partitions whose parameters changed, plus those to forget, and each
// response lists only partitions with news.
//
// Invariant: known is exactly what the source's session holds when id is
// not zero and epoch > 0; otherwise the next request is a full fetch
// (epoch 0 opens a new session, closing id if set; epoch -1 with id 0 is a
// sessionless fetch).
type fetchSession struct {
	// disabled makes every request a sessionless full fetch.
	disabled bool
	id       int32
	epoch    int32
	known    map[sessionKey]sessionParams
}

// sessionKey identifies a partition in a session: by topic id when the
// requests use ids (Fetch v13+), by name otherwise.
type sessionKey struct {
	id        [16]byte
	topic     string
	partition int32
}

// sessionParams are a partition's request parameters the source caches.
type sessionParams struct {
	fetchOffset      int64
	logStartOffset   int64
	maxBytes         int32
	leaderEpoch      int32
	lastFetchedEpoch int32
}

// sessionRequest is what the next request carries.
type sessionRequest struct {
	id, epoch int32
	full      bool
	// send lists the partitions the request names: all of them in a full
	// fetch, the changed and new ones in an incremental one.
	send []sessionKey
	// forget lists the partitions the source must drop from the session.
	forget []sessionKey
}

// next plans the request for the wanted partitions (want holds their
// current parameters; order fixes the order of send).
func (s *fetchSession) next(want map[sessionKey]sessionParams, order []sessionKey) sessionRequest {
	if s.disabled {
		return sessionRequest{id: 0, epoch: -1, full: true, send: order}
	}
	if s.epoch <= 0 || s.id == 0 {
		return sessionRequest{id: s.id, epoch: 0, full: true, send: order}
	}
	r := sessionRequest{id: s.id, epoch: s.epoch}
	for _, k := range order {
		if p, ok := s.known[k]; !ok || p != want[k] {
			r.send = append(r.send, k)
		}
	}
	for k := range s.known {
		if _, ok := want[k]; !ok {
			r.forget = append(r.forget, k)
		}
	}
	return r
}

// done records the source's answer to request r, which carried want's
// parameters for r.send. code is the response's top-level error and
// respID its session id.
func (s *fetchSession) done(r sessionRequest, want map[sessionKey]sessionParams, code int16, respID int32) {
	if s.disabled {
		return
	}
	switch code {
	case 0:
	case kerr.FetchSessionIDNotFound.Code:
		s.id, s.epoch, s.known = 0, 0, nil
		return
	default:
		// INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR and
		// anything else: close the session and open a new one.
		s.epoch, s.known = 0, nil
		return
	}
	if r.full {
		if respID == 0 {
			// The source created no session (its cache is full): full
			// fetches until it does.
			s.id, s.epoch, s.known = 0, 0, nil
			return
		}
		s.id, s.epoch = respID, 1
		s.known = make(map[sessionKey]sessionParams, len(r.send))
		for _, k := range r.send {
			s.known[k] = want[k]
		}
		return
	}
	if respID == 0 {
		// The source closed the session.
		s.id, s.epoch, s.known = 0, 0, nil
		return
	}
	for _, k := range r.send {
		s.known[k] = want[k]
	}
	for _, k := range r.forget {
		delete(s.known, k)
	}
	s.epoch = nextSessionEpoch(s.epoch)
}

// reset makes the next request a full fetch that closes the session and
// opens another (after a failed request, whose effect on the session is
// unknown).
func (s *fetchSession) reset() {
	s.epoch, s.known = 0, nil
}

// nextSessionEpoch is the epoch after e; it wraps to 1, never to 0 (which
// would open a new session).
func nextSessionEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}
