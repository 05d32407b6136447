package coordinator_test

import (
	"errors"
	"maps"
	"strings"
	"sync"

	. "github.com/kmirror/kmirror/internal/coordinator"
)

// kvShard is a test coordinator: a map of keys to values, with
// transactional writes pending until their marker, and waiters it fails on
// unload.
type kvShard struct {
	ctx     ShardContext[*kvShard]
	data    map[string]string
	pending map[int64]map[string]string // producer → writes
	waiters []chan error
	events  *eventLog
}

// eventLog records what shards saw, across reloads.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (e *eventLog) add(s string) {
	e.mu.Lock()
	e.events = append(e.events, s)
	e.mu.Unlock()
}

func (e *eventLog) has(s string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, x := range e.events {
		if x == s {
			return true
		}
	}
	return false
}

func (e *eventLog) count(s string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, x := range e.events {
		if x == s {
			n++
		}
	}
	return n
}

func newKVShard(events *eventLog) func(ShardContext[*kvShard]) *kvShard {
	return func(ctx ShardContext[*kvShard]) *kvShard {
		return &kvShard{ctx: ctx, data: map[string]string{}, pending: map[int64]map[string]string{}, events: events}
	}
}

var errMalformed = errors.New("malformed test record")

func (s *kvShard) Replay(r LoggedRecord) error {
	k := string(r.Key)
	if strings.HasPrefix(k, "bad") {
		return errMalformed
	}
	if r.Transactional {
		p := s.pending[r.ProducerID]
		if p == nil {
			p = map[string]string{}
			s.pending[r.ProducerID] = p
		}
		p[k] = string(r.Value)
		return nil
	}
	s.put(k, r.Value)
	return nil
}

func (s *kvShard) put(k string, v []byte) {
	if v == nil {
		delete(s.data, k)
	} else {
		s.data[k] = string(v)
	}
}

func (s *kvShard) ReplayMarker(offset int64, m Marker) error {
	s.complete(m)
	return nil
}

func (s *kvShard) complete(m Marker) {
	if m.Commit {
		maps.Copy(s.data, s.pending[m.ProducerID])
	}
	delete(s.pending, m.ProducerID)
}

func (s *kvShard) Loaded() { s.events.add("loaded") }

func (s *kvShard) Unloaded() {
	s.events.add("unloaded")
	for _, w := range s.waiters {
		w <- ErrNotCoordinator
	}
	s.waiters = nil
}

// set is a write operation storing key=value (nil: delete).
func set(key string, value []byte) Op[*kvShard] {
	return func(s *kvShard) (Result, error) {
		return Result{
			Records: []Record{{Key: []byte(key), Value: value}},
			Apply:   func(int64) { s.put(key, value) },
		}, nil
	}
}

// get reads a key.
func get(key string, out *string, ok *bool) func(*kvShard) error {
	return func(s *kvShard) error {
		*out, *ok = s.data[key]
		return nil
	}
}
