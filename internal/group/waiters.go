package group

import (
	"sync"
)

// waiters connects requests waiting on a group (a JoinGroup held for the
// rebalance, a SyncGroup held for the assignment) to the Replies the state
// machine produces for them, by request id. Every registered id gets at
// most one reply; an id whose caller went away is cancelled so that a late
// reply is dropped.
type waiters struct {
	mu   sync.Mutex
	next RequestID
	m    map[RequestID]chan Reply
}

func newWaiters() *waiters { return &waiters{m: map[RequestID]chan Reply{}} }

// register returns a fresh request id and the channel its reply arrives on.
func (w *waiters) register() (RequestID, chan Reply) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	ch := make(chan Reply, 1)
	w.m[w.next] = ch
	return w.next, ch
}

// deliver hands r to its waiter, if still registered.
func (w *waiters) deliver(r Reply) {
	w.mu.Lock()
	ch, ok := w.m[r.Request]
	delete(w.m, r.Request)
	w.mu.Unlock()
	if ok {
		ch <- r
	}
}

// cancel forgets id.
func (w *waiters) cancel(id RequestID) {
	w.mu.Lock()
	delete(w.m, id)
	w.mu.Unlock()
}

// len is the number of registered waiters (for tests).
func (w *waiters) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.m)
}
