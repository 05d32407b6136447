package broker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// producerIDManager hands out producer ids from blocks the controller
// allocates to this broker (AllocateProducerIds), as Kafka's
// RPCProducerIdManager: ids come from the current block; when 90% of it is
// used the next block is requested in the background, so that a producer
// rarely waits for the controller.
//
// Invariant: every id handed out belongs to a block the controller
// committed to this broker, and none is handed out twice.
type producerIDManager struct {
	b *Broker

	mu       sync.Mutex
	cur, end int64 // the current block is [cur, end)
	start    int64 // first id of the current block
	next     *idBlock
	fetching bool
	fetched  chan struct{} // closed when the running request ends
	lastErr  error
}

type idBlock struct{ start, len int64 }

// producerIDRequestTimeout bounds one AllocateProducerIds request.
const producerIDRequestTimeout = 10 * time.Second

func newProducerIDManager(b *Broker) *producerIDManager {
	return &producerIDManager{b: b}
}

// NextProducerID returns a fresh producer id for this broker to hand out
// (InitProducerId of an idempotent producer; the transaction coordinator
// uses it too). It waits for the controller when no block is at hand, until
// ctx ends; failures wrap COORDINATOR_LOAD_IN_PROGRESS, which clients retry.
func (b *Broker) NextProducerID(ctx context.Context) (int64, error) {
	return b.pids.nextID(ctx)
}

func (m *producerIDManager) nextID(ctx context.Context) (int64, error) {
	for {
		m.mu.Lock()
		if m.cur >= m.end && m.next != nil {
			m.start, m.cur, m.end = m.next.start, m.next.start, m.next.start+m.next.len
			m.next = nil
		}
		if m.cur < m.end {
			id := m.cur
			m.cur++
			if m.next == nil && m.cur-m.start >= (m.end-m.start)*9/10 {
				m.fetchLocked()
			}
			m.mu.Unlock()
			return id, nil
		}
		lastErr := m.lastErr
		m.lastErr = nil
		if lastErr != nil && !m.fetching {
			m.mu.Unlock()
			return -1, fmt.Errorf("allocate producer ids: %w: %w", lastErr, kerr.CoordinatorLoadInProgress)
		}
		m.fetchLocked()
		done := m.fetched
		m.mu.Unlock()
		waited := wire.Waiting(ctx)
		select {
		case <-done:
			waited()
		case <-ctx.Done():
			waited()
			return -1, fmt.Errorf("waiting for a producer id block: %w: %w", ctx.Err(), kerr.CoordinatorLoadInProgress)
		case <-m.b.closing:
			waited()
			return -1, fmt.Errorf("broker is shutting down: %w", kerr.CoordinatorLoadInProgress)
		}
	}
}

// fetchLocked starts a background AllocateProducerIds request unless one is
// running. Caller holds mu.
func (m *producerIDManager) fetchLocked() {
	if m.fetching {
		return
	}
	done := make(chan struct{})
	m.fetching, m.fetched = true, done
	started := m.b.goBackground(func(ctx context.Context) {
		blk, err := m.request(ctx)
		m.mu.Lock()
		if err != nil {
			m.lastErr = err
			m.b.log.Warn("allocate producer ids", "error", err)
		} else {
			m.next = &blk
		}
		m.fetching = false
		close(done)
		m.mu.Unlock()
	})
	if !started {
		m.fetching = false
		m.lastErr = fmt.Errorf("broker is shutting down")
		close(done)
	}
}

// request asks the controller for the next block.
func (m *producerIDManager) request(ctx context.Context) (idBlock, error) {
	ctx, cancel := context.WithTimeout(ctx, producerIDRequestTimeout)
	defer cancel()
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID = m.b.cfg.NodeID
	if reg, ok := m.b.deps.Metadata.Image().Broker(m.b.cfg.NodeID); ok {
		req.BrokerEpoch = reg.Epoch
	}
	resp, err := m.b.deps.Controller.Send(ctx, req)
	if err != nil {
		return idBlock{}, err
	}
	r, ok := resp.(*kmsg.AllocateProducerIDsResponse)
	if !ok {
		return idBlock{}, fmt.Errorf("unexpected response %T", resp)
	}
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return idBlock{}, err
	}
	if r.ProducerIDLen <= 0 || r.ProducerIDStart < 0 {
		return idBlock{}, fmt.Errorf("controller returned the empty block [%d, +%d)", r.ProducerIDStart, r.ProducerIDLen)
	}
	return idBlock{start: r.ProducerIDStart, len: int64(r.ProducerIDLen)}, nil
}
