package replication

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func keys(ks ...sessionKey) []sessionKey { return ks }

func sortedKeys(ks []sessionKey) []sessionKey {
	out := slices.Clone(ks)
	slices.SortFunc(out, func(a, b sessionKey) int { return int(a.partition) - int(b.partition) })
	return out
}

func TestFetchSessionLifecycle(t *testing.T) {
	a, b, c := sessionKey{topic: "t", partition: 0}, sessionKey{topic: "t", partition: 1}, sessionKey{topic: "t", partition: 2}
	want := map[sessionKey]sessionParams{a: {fetchOffset: 0}, b: {fetchOffset: 5}}
	var s fetchSession

	// The first request is full and opens a session.
	r := s.next(want, keys(a, b))
	if !r.full || r.epoch != 0 || r.id != 0 || !slices.Equal(r.send, keys(a, b)) {
		t.Fatalf("first request %+v", r)
	}
	s.done(r, want, 0, 77)
	if s.id != 77 || s.epoch != 1 {
		t.Fatalf("session after the full fetch: id %d epoch %d", s.id, s.epoch)
	}

	// Nothing changed: an incremental request with no partitions.
	r = s.next(want, keys(a, b))
	if r.full || r.id != 77 || r.epoch != 1 || len(r.send) != 0 || len(r.forget) != 0 {
		t.Fatalf("idle incremental request %+v", r)
	}
	s.done(r, want, 0, 77)

	// a advanced, c is new, b is no longer wanted.
	want = map[sessionKey]sessionParams{a: {fetchOffset: 3}, c: {fetchOffset: 9}}
	r = s.next(want, keys(a, c))
	if r.epoch != 2 || !slices.Equal(sortedKeys(r.send), keys(a, c)) || !slices.Equal(r.forget, keys(b)) {
		t.Fatalf("incremental request %+v", r)
	}
	s.done(r, want, 0, 77)
	if _, ok := s.known[b]; ok || s.known[a].fetchOffset != 3 || s.epoch != 3 {
		t.Fatalf("session after the incremental fetch: %+v epoch %d", s.known, s.epoch)
	}

	// The source lost the session epoch: close it and open a new one.
	r = s.next(want, keys(a, c))
	s.done(r, want, kerr.InvalidFetchSessionEpoch.Code, 0)
	r = s.next(want, keys(a, c))
	if !r.full || r.id != 77 || r.epoch != 0 {
		t.Fatalf("request after INVALID_FETCH_SESSION_EPOCH %+v", r)
	}
	// The source forgot the session: start from scratch.
	s.done(r, want, kerr.FetchSessionIDNotFound.Code, 0)
	r = s.next(want, keys(a, c))
	if !r.full || r.id != 0 || r.epoch != 0 {
		t.Fatalf("request after FETCH_SESSION_ID_NOT_FOUND %+v", r)
	}
	// The source has no room for a session: full fetches go on.
	s.done(r, want, 0, 0)
	if r = s.next(want, keys(a, c)); !r.full {
		t.Fatalf("request without a session %+v", r)
	}
	s.done(r, want, 0, 78)
	// A failed request leaves the session unknown: the next is full.
	s.reset()
	if r = s.next(want, keys(a, c)); !r.full || r.id != 78 || r.epoch != 0 {
		t.Fatalf("request after a reset %+v", r)
	}
}

func TestFetchSessionDisabled(t *testing.T) {
	s := fetchSession{disabled: true}
	a := sessionKey{topic: "t"}
	want := map[sessionKey]sessionParams{a: {}}
	for range 3 {
		r := s.next(want, keys(a))
		if !r.full || r.id != 0 || r.epoch != -1 {
			t.Fatalf("sessionless request %+v", r)
		}
		s.done(r, want, 0, 5)
	}
}

func TestNextSessionEpochWraps(t *testing.T) {
	if nextSessionEpoch(1<<31-1) != 1 || nextSessionEpoch(4) != 5 {
		t.Fatal("epoch arithmetic")
	}
}
