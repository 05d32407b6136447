// Package coordinatortest provides a coordinator.Host over real storage
// logs, with leadership moved by hand and faults injected on demand, for
// tests of coordinators without a broker.
package coordinatortest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/storage"
)

// Host is a coordinator.Host whose partitions are storage logs under one
// directory, each with a single replica: an append is committed as soon as
// it is written (the high watermark moves to the log end), unless a test
// holds it with a gate.
type Host struct {
	dir    string
	logger *slog.Logger

	mu       sync.Mutex
	logs     map[storage.TopicPartition]*Log
	leaders  map[storage.TopicPartition]int32
	watchers map[int]watcher
	nextW    int
	topics   []coordinator.TopicSpec
}

type watcher struct {
	topic string
	fn    func(int32, bool, int32)
}

// NewHost returns a Host storing its logs under dir.
func NewHost(dir string, logger *slog.Logger) *Host {
	if logger == nil {
		logger = slog.Default()
	}
	return &Host{
		dir:      dir,
		logger:   logger,
		logs:     map[storage.TopicPartition]*Log{},
		leaders:  map[storage.TopicPartition]int32{},
		watchers: map[int]watcher{},
	}
}

// Log returns the log of a partition, opening it if needed.
func (h *Host) Log(topic string, partition int32) (*Log, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	tp := storage.TopicPartition{Topic: topic, Partition: partition}
	if l, ok := h.logs[tp]; ok {
		return l, nil
	}
	cfg := storage.DefaultLogConfig()
	cfg.CleanupPolicy = storage.CleanupPolicy{Compact: true}
	sl, err := storage.Open(filepath.Join(h.dir, tp.String()), tp, cfg, storage.Options{Logger: h.logger})
	if err != nil {
		return nil, err
	}
	sl.SetHighWatermark(sl.LogEndOffset())
	l := &Log{h: h, tp: tp, log: sl}
	h.logs[tp] = l
	return l, nil
}

// PartitionLog implements coordinator.Host.
func (h *Host) PartitionLog(topic string, partition int32) (coordinator.PartitionLog, error) {
	return h.Log(topic, partition)
}

// WatchLeadership implements coordinator.Host.
func (h *Host) WatchLeadership(topic string, fn func(partition int32, leader bool, leaderEpoch int32)) func() {
	h.mu.Lock()
	id := h.nextW
	h.nextW++
	h.watchers[id] = watcher{topic: topic, fn: fn}
	for tp, e := range h.leaders {
		if tp.Topic == topic {
			fn(tp.Partition, true, e)
		}
	}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.watchers, id)
		h.mu.Unlock()
	}
}

// EnsureTopic implements coordinator.Host: it records the request.
func (h *Host) EnsureTopic(ctx context.Context, spec coordinator.TopicSpec) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, t := range h.topics {
		if t.Name == spec.Name {
			return nil
		}
	}
	h.topics = append(h.topics, spec)
	return nil
}

// Topics returns the topics EnsureTopic created.
func (h *Host) Topics() []coordinator.TopicSpec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]coordinator.TopicSpec(nil), h.topics...)
}

// Lead makes this node the leader of a partition at epoch (leader true) or
// not, and tells the watchers of the topic.
func (h *Host) Lead(topic string, partition int32, leader bool, epoch int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	tp := storage.TopicPartition{Topic: topic, Partition: partition}
	if leader {
		h.leaders[tp] = epoch
	} else {
		delete(h.leaders, tp)
	}
	for _, w := range h.watchers {
		if w.topic == topic {
			w.fn(partition, leader, epoch)
		}
	}
}

// Fence changes the leader epoch of a partition without telling the
// watchers, as when leadership moves and the news has not arrived yet.
func (h *Host) Fence(topic string, partition int32, epoch int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.leaders[storage.TopicPartition{Topic: topic, Partition: partition}] = epoch
}

func (h *Host) epoch(tp storage.TopicPartition) (int32, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.leaders[tp]
	return e, ok
}

// Close closes every log.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	for tp, l := range h.logs {
		errs = append(errs, l.log.Close())
		delete(h.logs, tp)
	}
	return errors.Join(errs...)
}

// Log is one partition of a Host.
type Log struct {
	h   *Host
	tp  storage.TopicPartition
	log *storage.Log

	mu        sync.Mutex
	failNext  error
	failAfter error
	gate      chan struct{}
	appended  chan int64
	readGate  chan struct{}
}

// Storage returns the storage log.
func (l *Log) Storage() *storage.Log { return l.log }

// FailNextAppend makes the next append fail with err without writing.
func (l *Log) FailNextAppend(err error) {
	l.mu.Lock()
	l.failNext = err
	l.mu.Unlock()
}

// FailAfterNextAppend makes the next append write its batch and then fail
// with err, as a commit that timed out.
func (l *Log) FailAfterNextAppend(err error) {
	l.mu.Lock()
	l.failAfter = err
	l.mu.Unlock()
}

// HoldCommits makes appends wait on gate after writing, until it is closed;
// each written base offset is sent on appended (if not nil).
func (l *Log) HoldCommits(gate chan struct{}, appended chan int64) {
	l.mu.Lock()
	l.gate, l.appended = gate, appended
	l.mu.Unlock()
}

// HoldReads makes reads wait on gate until it is closed.
func (l *Log) HoldReads(gate chan struct{}) {
	l.mu.Lock()
	l.readGate = gate
	l.mu.Unlock()
}

// AppendRaw appends batches as a follower would (offsets kept), for test
// data the coordinator did not write.
func (l *Log) AppendRaw(batches []byte) error {
	if _, err := l.log.AppendAsFollower(batches); err != nil {
		return err
	}
	l.log.SetHighWatermark(l.log.LogEndOffset())
	return nil
}

// Read implements coordinator.PartitionLog.
func (l *Log) Read(ctx context.Context, offset int64, maxBytes int) ([]byte, int64, error) {
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
	offset = max(offset, l.log.LogStartOffset())
	end := l.log.LogEndOffset()
	if offset >= end {
		return nil, end, nil
	}
	res, err := l.log.Read(offset, int64(maxBytes), storage.FetchLogEnd, true)
	if err != nil {
		return nil, 0, err
	}
	defer res.Release()
	b, err := res.Bytes()
	return b, res.LogEndOffset, err
}

// Append implements coordinator.PartitionLog.
func (l *Log) Append(ctx context.Context, batch []byte, leaderEpoch int32) (int64, error) {
	if cur, ok := l.h.epoch(l.tp); !ok || cur != leaderEpoch {
		return 0, fmt.Errorf("append to %s at epoch %d, leader %v at %d: %w", l.tp, leaderEpoch, ok, cur, kerr.NotLeaderForPartition)
	}
	l.mu.Lock()
	if err := l.failNext; err != nil {
		l.failNext = nil
		l.mu.Unlock()
		return 0, err
	}
	failAfter, gate, appended := l.failAfter, l.gate, l.appended
	l.failAfter = nil
	l.mu.Unlock()
	info, err := l.log.AppendAsLeader(batch, leaderEpoch, storage.OriginCoordinator)
	if err != nil {
		return 0, err
	}
	if appended != nil {
		appended <- info.FirstOffset
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	l.log.SetHighWatermark(l.log.LogEndOffset())
	if failAfter != nil {
		return 0, failAfter
	}
	return info.FirstOffset, nil
}
