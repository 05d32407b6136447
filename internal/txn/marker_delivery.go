package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/coordinator"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/storage"
)

// errStaleMarkers says a partition refused a transaction's markers because
// it has seen a newer producer epoch or coordinator epoch: this coordinator
// is a zombie for the transaction, and the current one completes it.
var errStaleMarkers = errors.New("transaction markers refused as stale")

// maxMarkerBackoff caps the exponential backoff between marker retries.
const maxMarkerBackoff = 5 * time.Second

// markerDelivery writes the markers of transactions into their partitions:
// through the local MarkerService for partitions this node leads, with
// WriteTxnMarkers to the leader's inter-broker listener for the others.
type markerDelivery struct {
	nodeID   int32
	listener string
	meta     MetadataSource
	local    *MarkerService
	conns    *connPool
	timeout  time.Duration
	backoff  time.Duration
	clock    coordinator.Clock
	log      *slog.Logger
}

// markerResult is the outcome of one partition's marker.
type markerResult struct {
	tp  storage.TopicPartition
	err error
}

// deliver writes job's markers, with coordinator epoch coordEpoch, into
// every partition of the job, retrying (with backoff) those that fail with
// a retriable error until ctx ends. A partition whose topic is gone needs no
// marker. It returns nil when every partition has its marker,
// errStaleMarkers (wrapped) when one refused it as stale, or ctx's error.
func (d *markerDelivery) deliver(ctx context.Context, job *MarkerJob, coordEpoch int32) error {
	pending := make(map[storage.TopicPartition]bool, len(job.Partitions))
	for _, tp := range job.Partitions {
		pending[tp] = true
	}
	backoff := d.backoff
	for attempt := 0; ; attempt++ {
		img := d.meta.Image()
		byLeader := map[int32][]storage.TopicPartition{}
		for _, tp := range job.Partitions {
			if !pending[tp] {
				continue
			}
			leader, exists := partitionLeader(img, tp.Topic, tp.Partition)
			switch {
			case !exists:
				d.log.Info("no transaction marker needed: partition no longer exists", "topic", tp.Topic,
					"partition", tp.Partition, "transactional_id", job.TransactionalID, "producer_id", job.ProducerID)
				delete(pending, tp)
			case leader >= 0:
				byLeader[leader] = append(byLeader[leader], tp)
			}
		}
		results := d.send(ctx, img, job, coordEpoch, byLeader)
		var lastErr error
		for _, r := range results {
			if r.err == nil {
				delete(pending, r.tp)
				continue
			}
			var ke *kerr.Error
			errors.As(r.err, &ke)
			switch ke {
			case kerr.InvalidProducerEpoch, kerr.ProducerFenced, kerr.TransactionCoordinatorFenced:
				return fmt.Errorf("marker for %s: %w: %w", r.tp, r.err, errStaleMarkers)
			case kerr.UnknownTopicOrPartition:
				if _, exists := partitionLeader(d.meta.Image(), r.tp.Topic, r.tp.Partition); !exists {
					delete(pending, r.tp)
					continue
				}
			}
			lastErr = r.err
		}
		if len(pending) == 0 {
			return nil
		}
		if lastErr != nil && attempt%10 == 9 {
			d.log.Warn("transaction markers still not written", "transactional_id", job.TransactionalID,
				"producer_id", job.ProducerID, "pending_partitions", len(pending), "attempts", attempt+1, "err", lastErr)
		}
		if err := d.sleep(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, maxMarkerBackoff)
	}
}

// sleep waits for d on the coordinator's clock, or until ctx ends.
func (d *markerDelivery) sleep(ctx context.Context, dur time.Duration) error {
	done := make(chan struct{})
	stop := d.clock.AfterFunc(dur, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		stop()
		return ctx.Err()
	}
}

// send writes the markers to each leader at once and collects the outcome
// of every partition.
func (d *markerDelivery) send(ctx context.Context, img *metadata.Image, job *MarkerJob, coordEpoch int32, byLeader map[int32][]storage.TopicPartition) []markerResult {
	var mu sync.Mutex
	var out []markerResult
	var wg sync.WaitGroup
	for leader, tps := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := d.sendTo(ctx, img, leader, job, coordEpoch, tps)
			mu.Lock()
			out = append(out, res...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// sendTo writes the markers of tps, all led by leader.
func (d *markerDelivery) sendTo(ctx context.Context, img *metadata.Image, leader int32, job *MarkerJob, coordEpoch int32, tps []storage.TopicPartition) []markerResult {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 1
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = job.ProducerID, job.ProducerEpoch, job.Commit, coordEpoch
	for _, tp := range tps {
		if n := len(m.Topics); n == 0 || m.Topics[n-1].Topic != tp.Topic {
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic = tp.Topic
			m.Topics = append(m.Topics, t)
		}
		last := &m.Topics[len(m.Topics)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	req.Markers = append(req.Markers, m)

	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	all := func(err error) []markerResult {
		out := make([]markerResult, len(tps))
		for i, tp := range tps {
			out[i] = markerResult{tp: tp, err: err}
		}
		return out
	}
	var resp *kmsg.WriteTxnMarkersResponse
	if leader == d.nodeID && d.local != nil {
		resp = d.local.WriteMarkers(ctx, req)
	} else {
		addr, err := brokerAddr(img, leader, d.listener)
		if err != nil {
			return all(fmt.Errorf("leader of the markers' partitions: %v: %w", err, kerr.NotLeaderForPartition))
		}
		kresp, err := d.conns.request(ctx, addr, req)
		if err != nil {
			return all(fmt.Errorf("WriteTxnMarkers to broker %d at %s: %v: %w", leader, addr, err, kerr.NetworkException))
		}
		r, ok := kresp.(*kmsg.WriteTxnMarkersResponse)
		if !ok {
			return all(fmt.Errorf("WriteTxnMarkers to broker %d: response %T: %w", leader, kresp, kerr.UnknownServerError))
		}
		resp = r
	}
	got := map[storage.TopicPartition]int16{}
	for _, rm := range resp.Markers {
		if rm.ProducerID != job.ProducerID {
			continue
		}
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				got[storage.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = rp.ErrorCode
			}
		}
	}
	out := make([]markerResult, len(tps))
	for i, tp := range tps {
		code, ok := got[tp]
		var err error
		switch {
		case !ok:
			err = fmt.Errorf("broker %d did not answer for %s: %w", leader, tp, kerr.UnknownServerError)
		case code != 0:
			err = fmt.Errorf("broker %d refused the marker for %s: %w", leader, tp, kerr.ErrorForCode(code))
		}
		out[i] = markerResult{tp: tp, err: err}
	}
	return out
}

// runMarkerJob writes the markers of a prepared transaction and then
// completes it (CompleteCommit / CompleteAbort), retrying the completion
// while the partition stays loaded here. It returns when the transaction is
// complete, when ctx ends (the shard unloaded), or when the markers are
// refused as stale.
func (c *Coordinator) runMarkerJob(ctx context.Context, partition, coordEpoch int32, job *MarkerJob) {
	log := c.log.With("partition", partition, "transactional_id", job.TransactionalID,
		"producer_id", job.ProducerID, "producer_epoch", job.ProducerEpoch, "commit", job.Commit)
	if err := c.delivery.deliver(ctx, job, coordEpoch); err != nil {
		if ctx.Err() == nil {
			log.Warn("giving up on transaction markers: a newer coordinator or producer took over", "err", err)
		}
		return
	}
	backoff := c.cfg.MarkerRetryBackoff
	for {
		var tr Transition
		err := c.rt.Write(ctx, partition, func(s *shard) (coordinator.Result, error) {
			tr = Handle(s.txns[job.TransactionalID], CompleteEvent{
				ProducerID: job.ProducerID, ProducerEpoch: job.ProducerEpoch, Commit: job.Commit, Now: s.nowMs(),
			})
			if tr.Next == nil {
				return coordinator.Result{}, nil
			}
			next := tr
			return coordinator.Result{Records: []coordinator.Record{txnRecord(next.Next)}, Apply: func(int64) { s.install(next) }}, nil
		})
		switch {
		case err == nil:
			if tr.Err != nil {
				log.Info("transaction moved on before its completion was written", "err", tr.Err)
			}
			return
		case ctx.Err() != nil:
			return
		case errors.Is(err, kerr.NotCoordinator), errors.Is(err, kerr.CoordinatorLoadInProgress), errors.Is(err, kerr.CoordinatorNotAvailable):
			return
		}
		log.Warn("writing transaction completion failed; retrying", "err", err)
		if err := c.delivery.sleep(ctx, backoff); err != nil {
			return
		}
		backoff = min(2*backoff, maxMarkerBackoff)
	}
}
