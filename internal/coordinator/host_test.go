package coordinator

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// testHost is a Host over test partition logs. Tests move leadership by
// hand and can make appends fail or wait.
type testHost struct {
	mu       sync.Mutex
	logs     map[int32]*testLog
	leaders  map[int32]int32 // partition → leader epoch, for partitions led here
	watchers map[int]func(int32, bool, int32)
	nextW    int
	ensured  []TopicSpec
	open     func(partition int32) (backingLog, error)
}

func newTestHost(open func(partition int32) (backingLog, error)) *testHost {
	return &testHost{
		logs:     map[int32]*testLog{},
		leaders:  map[int32]int32{},
		watchers: map[int]func(int32, bool, int32){},
		open:     open,
	}
}

// backingLog is the storage under a testLog.
type backingLog interface {
	append(batch []byte, epoch int32) (int64, error)
	read(offset int64, maxBytes int) ([]byte, int64, error)
}

// testLog is a PartitionLog whose appends check the host's leader epoch and
// can be made to fail or to wait before they count as committed.
type testLog struct {
	h         *testHost
	partition int32
	b         backingLog

	mu        sync.Mutex
	failNext  error         // the next append fails with this error without writing
	failAfter error         // the next append writes, then fails with this error
	gate      chan struct{} // when set, appends wait on it after writing (the commit)
	appended  chan int64    // when set, receives each written base offset
	readGate  chan struct{} // when set, reads wait on it
	appends   int
}

func (h *testHost) log(partition int32) *testLog {
	h.mu.Lock()
	defer h.mu.Unlock()
	l, ok := h.logs[partition]
	if !ok {
		b, err := h.open(partition)
		if err != nil {
			panic(err)
		}
		l = &testLog{h: h, partition: partition, b: b}
		h.logs[partition] = l
	}
	return l
}

func (h *testHost) PartitionLog(topic string, partition int32) (PartitionLog, error) {
	return h.log(partition), nil
}

func (h *testHost) WatchLeadership(topic string, fn func(int32, bool, int32)) func() {
	h.mu.Lock()
	id := h.nextW
	h.nextW++
	h.watchers[id] = fn
	for p, e := range h.leaders {
		fn(p, true, e)
	}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.watchers, id)
		h.mu.Unlock()
	}
}

func (h *testHost) EnsureTopic(ctx context.Context, spec TopicSpec) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ensured = append(h.ensured, spec)
	return nil
}

// lead makes this node the leader of partition at epoch (or not, with
// leader false) and tells the watchers.
func (h *testHost) lead(partition int32, leader bool, epoch int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if leader {
		h.leaders[partition] = epoch
	} else {
		delete(h.leaders, partition)
	}
	for _, fn := range h.watchers {
		fn(partition, leader, epoch)
	}
}

func (h *testHost) epoch(partition int32) (int32, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.leaders[partition]
	return e, ok
}

func (l *testLog) Read(ctx context.Context, offset int64, maxBytes int) ([]byte, int64, error) {
	l.mu.Lock()
	gate := l.readGate
	l.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	return l.b.read(offset, maxBytes)
}

func (l *testLog) Append(ctx context.Context, batch []byte, epoch int32) (int64, error) {
	if cur, ok := l.h.epoch(l.partition); !ok || cur != epoch {
		return 0, fmt.Errorf("append at epoch %d, current %d (leader %v): %w", epoch, cur, ok, kerr.NotLeaderForPartition)
	}
	l.mu.Lock()
	if err := l.failNext; err != nil {
		l.failNext = nil
		l.mu.Unlock()
		return 0, err
	}
	failAfter := l.failAfter
	l.failAfter = nil
	gate, appended := l.gate, l.appended
	l.appends++
	l.mu.Unlock()
	base, err := l.b.append(batch, epoch)
	if err != nil {
		return 0, err
	}
	if appended != nil {
		appended <- base
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	if failAfter != nil {
		return 0, failAfter
	}
	return base, nil
}
