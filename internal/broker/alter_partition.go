package broker

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/storage"
)

// alterPartitionSender sends the leaders' ISR changes to the active
// controller (Kafka's AlterPartitionManager): changes queue per partition,
// and one AlterPartition request at a time carries everything queued. A
// request that fails as a whole (no controller, a stale broker epoch) is
// retried after a backoff for the changes still pending; per-partition
// answers go back to their partitions.
type alterPartitionSender struct {
	nodeID int32
	ctl    ControllerClient
	epoch  func() int64
	log    *slog.Logger

	mu    sync.Mutex
	queue map[storage.TopicPartition]alterItem
	wake  chan struct{}
}

type alterItem struct {
	p       *Partition
	topicID metadata.Uuid
	ch      *isrChange
}

// alterPartitionVersion is the version sent: topic ids and the members'
// broker epochs.
const alterPartitionVersion = 3

// alterPartitionTimeout bounds one request, including the channel's
// search for the active controller.
const alterPartitionTimeout = 30 * time.Second

// alterPartitionBackoff paces retries of failed requests.
const alterPartitionBackoff = 100 * time.Millisecond

func newAlterPartitionSender(nodeID int32, ctl ControllerClient, epoch func() int64, log *slog.Logger) *alterPartitionSender {
	return &alterPartitionSender{
		nodeID: nodeID, ctl: ctl, epoch: epoch, log: log,
		queue: make(map[storage.TopicPartition]alterItem),
		wake:  make(chan struct{}, 1),
	}
}

// submit queues a change, replacing an older queued one of the partition.
func (s *alterPartitionSender) submit(p *Partition, topicID metadata.Uuid, ch *isrChange) {
	s.mu.Lock()
	s.queue[p.tp] = alterItem{p: p, topicID: topicID, ch: ch}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run sends queued changes until ctx ends.
func (s *alterPartitionSender) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
		s.mu.Lock()
		items := make([]alterItem, 0, len(s.queue))
		for _, it := range s.queue {
			items = append(items, it)
		}
		clear(s.queue)
		s.mu.Unlock()
		// Changes the metadata already decided need no request.
		items = slices.DeleteFunc(items, func(it alterItem) bool { return it.p.pendingChange() != it.ch })
		if len(items) == 0 {
			continue
		}
		if err := s.send(ctx, items); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Info("AlterPartition failed; retrying", "partitions", len(items), "error", err)
			t := time.NewTimer(alterPartitionBackoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			s.requeue(items)
		}
	}
}

// requeue puts back the items of a failed request that are still pending
// and were not superseded by a newer queued change.
func (s *alterPartitionSender) requeue(items []alterItem) {
	s.mu.Lock()
	n := 0
	for _, it := range items {
		if _, newer := s.queue[it.p.tp]; !newer && it.p.pendingChange() == it.ch {
			s.queue[it.p.tp] = it
			n++
		}
	}
	s.mu.Unlock()
	if n > 0 {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// send sends one request and dispatches its answers. An error means the
// request failed as a whole.
func (s *alterPartitionSender) send(ctx context.Context, items []alterItem) error {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = alterPartitionVersion
	req.BrokerID = s.nodeID
	req.BrokerEpoch = s.epoch()
	byKey := map[storage.TopicPartition]alterItem{}
	slices.SortFunc(items, func(a, b alterItem) int { return compareTP(a.p.tp, b.p.tp) })
	for _, it := range items {
		byKey[it.p.tp] = it
		var rt *kmsg.AlterPartitionRequestTopic
		if n := len(req.Topics); n > 0 && req.Topics[n-1].Topic == it.p.tp.Topic {
			rt = &req.Topics[n-1]
		} else {
			t := kmsg.NewAlterPartitionRequestTopic()
			t.Topic, t.TopicID = it.p.tp.Topic, it.topicID
			req.Topics = append(req.Topics, t)
			rt = &req.Topics[len(req.Topics)-1]
		}
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition = it.p.tp.Partition
		rp.LeaderEpoch = it.ch.leaderEpoch
		rp.PartitionEpoch = it.ch.partitionEpoch
		if it.ch.recovered {
			rp.LeaderRecoveryState = int8(metadata.Recovered)
		} else {
			rp.LeaderRecoveryState = int8(metadata.Recovering)
		}
		for _, r := range it.ch.isr {
			e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			e.BrokerID, e.BrokerEpoch = r, it.ch.brokerEpochs[r]
			rp.NewEpochISR = append(rp.NewEpochISR, e)
			rp.NewISR = append(rp.NewISR, r)
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	rctx, cancel := context.WithTimeout(ctx, alterPartitionTimeout)
	defer cancel()
	kresp, err := s.ctl.Send(rctx, req)
	if err != nil {
		return err
	}
	resp, ok := kresp.(*kmsg.AlterPartitionResponse)
	if !ok {
		return fmt.Errorf("AlterPartition answered with %T", kresp)
	}
	if resp.ErrorCode != 0 {
		return fmt.Errorf("AlterPartition: %w", kerr.ErrorForCode(resp.ErrorCode))
	}
	answered := map[storage.TopicPartition]bool{}
	for _, t := range resp.Topics {
		name := t.Topic
		// kmsg spells the v2+ field TopidID.
		if tt, ok := findTopicByID(items, t.TopidID); ok {
			name = tt
		}
		for _, rp := range t.Partitions {
			tp := storage.TopicPartition{Topic: name, Partition: rp.Partition}
			it, ok := byKey[tp]
			if !ok || answered[tp] {
				continue
			}
			answered[tp] = true
			var perr error
			if rp.ErrorCode != 0 {
				perr = fmt.Errorf("AlterPartition of %s: %w", tp, kerr.ErrorForCode(rp.ErrorCode))
			}
			it.p.alterPartitionDone(it.ch, perr)
		}
	}
	for _, it := range items {
		if !answered[it.p.tp] {
			it.p.alterPartitionDone(it.ch, fmt.Errorf("AlterPartition of %s: no answer: %w", it.p.tp, kerr.UnknownServerError))
		}
	}
	return nil
}

// findTopicByID returns the name of the items' topic with id.
func findTopicByID(items []alterItem, id [16]byte) (string, bool) {
	for _, it := range items {
		if it.topicID == metadata.Uuid(id) && id != ([16]byte{}) {
			return it.p.tp.Topic, true
		}
	}
	return "", false
}

// compareTP orders partitions by topic, then index.
func compareTP(a, b storage.TopicPartition) int {
	switch {
	case a.Topic < b.Topic:
		return -1
	case a.Topic > b.Topic:
		return 1
	}
	return int(a.Partition) - int(b.Partition)
}
