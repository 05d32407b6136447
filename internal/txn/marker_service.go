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

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/wire"
)

// MarkerTarget appends transaction markers to the partitions this broker
// leads (the broker implements it over its replica manager).
type MarkerTarget interface {
	// AppendMarker appends batch, a COMMIT or ABORT control batch built by
	// record.BuildEndTxnMarker, to the partition as its leader with
	// coordinator origin (producer and coordinator epochs are checked) and
	// waits until it is committed (acks=all). Its base offset and partition
	// leader epoch are placeholders the append sets. Errors wrap Kafka's
	// codes: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
	// INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED,
	// NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT, ...
	AppendMarker(ctx context.Context, topic string, partition int32, batch []byte) error
}

// GroupCompleter ends transactions in __consumer_offsets partitions (the
// group coordinator implements it): it writes the marker through its own
// runtime, then makes the transaction's offset commits count or drops them.
type GroupCompleter interface {
	CompleteTransaction(ctx context.Context, partition int32, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool) error
}

// markerParallelism bounds the markers of one request appended at once:
// each waits for acks=all, so appending them one after the other would add
// up the replication latencies.
const markerParallelism = 16

// MarkerService serves WriteTxnMarkers v0-v1 on a broker: it writes the
// markers a transaction coordinator sends into the partitions this broker
// leads, through the group coordinator for __consumer_offsets. It is a
// wire.Service; the local transaction coordinator also calls it directly.
type MarkerService struct {
	target MarkerTarget
	groups GroupCompleter
	now    func() time.Time
	log    *slog.Logger

	mu        sync.Mutex
	onWritten []func(producerID int64, topic string, partition int32)
}

// NewMarkerService returns the WriteTxnMarkers service over target and
// groups (nil answers __consumer_offsets markers NOT_LEADER_OR_FOLLOWER, so
// the coordinator retries until a group coordinator is there).
func NewMarkerService(target MarkerTarget, groups GroupCompleter) *MarkerService {
	return &MarkerService{target: target, groups: groups, now: time.Now, log: slog.Default()}
}

// SetLogger sets the logger (slog.Default() until then); call before use.
func (s *MarkerService) SetLogger(l *slog.Logger) { s.log = l }

// OnMarkerWritten registers fn to be called after each marker written here,
// with its producer id and partition: the Verifier forgets what it verified
// for that producer in that partition, whose transaction just ended.
func (s *MarkerService) OnMarkerWritten(fn func(producerID int64, topic string, partition int32)) {
	s.mu.Lock()
	s.onWritten = append(s.onWritten, fn)
	s.mu.Unlock()
}

// APIs is WriteTxnMarkers v0-v1.
func (s *MarkerService) APIs() []wire.API {
	return []wire.API{{Key: kmsg.WriteTxnMarkers.Int16(), MinVersion: 0, MaxVersion: 1, Handle: s.handle}}
}

func (s *MarkerService) handle(ctx context.Context, _ *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.WriteTxnMarkersRequest)
	if !ok {
		return nil, fmt.Errorf("WriteTxnMarkers handler got %T", kreq)
	}
	return s.WriteMarkers(ctx, req), nil
}

// WriteMarkers writes every marker of req and answers per partition.
func (s *MarkerService) WriteMarkers(ctx context.Context, req *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	type item struct {
		m   *kmsg.WriteTxnMarkersRequestMarker
		out *kmsg.WriteTxnMarkersResponseMarkerTopicPartition
		tp  string
	}
	var items []item
	resp.Markers = make([]kmsg.WriteTxnMarkersResponseMarker, len(req.Markers))
	for i := range req.Markers {
		m := &req.Markers[i]
		rm := &resp.Markers[i]
		*rm = kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		rm.Topics = make([]kmsg.WriteTxnMarkersResponseMarkerTopic, len(m.Topics))
		for j, t := range m.Topics {
			rt := &rm.Topics[j]
			*rt = kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
			for k, p := range t.Partitions {
				rp := &rt.Partitions[k]
				*rp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				items = append(items, item{m: m, out: rp, tp: t.Topic})
			}
		}
	}
	sem := make(chan struct{}, markerParallelism)
	var wg sync.WaitGroup
	for _, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := s.writeOne(ctx, it.m, it.tp, it.out.Partition)
			it.out.ErrorCode = markerErrorCode(err)
			if err != nil {
				s.log.Debug("transaction marker not written", "topic", it.tp, "partition", it.out.Partition,
					"producer_id", it.m.ProducerID, "producer_epoch", it.m.ProducerEpoch, "commit", it.m.Committed, "err", err)
			}
		}()
	}
	wg.Wait()
	return resp
}

// writeOne writes one marker into one partition.
func (s *MarkerService) writeOne(ctx context.Context, m *kmsg.WriteTxnMarkersRequestMarker, topic string, partition int32) error {
	var err error
	switch {
	case m.ProducerID < 0 || m.ProducerEpoch < 0:
		err = fmt.Errorf("marker for producer %d epoch %d: %w", m.ProducerID, m.ProducerEpoch, kerr.InvalidRequest)
	case topic == OffsetsTopic:
		if s.groups == nil {
			err = fmt.Errorf("no group coordinator for %s-%d: %w", topic, partition, kerr.NotLeaderForPartition)
			break
		}
		err = s.groups.CompleteTransaction(ctx, partition, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed)
		err = groupMarkerError(err)
	default:
		batch := record.BuildEndTxnMarker(m.ProducerID, m.ProducerEpoch,
			record.EndTxnMarker{Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch}, s.now().UnixMilli(), -1)
		err = s.target.AppendMarker(ctx, topic, partition, batch)
	}
	if err == nil {
		s.mu.Lock()
		fns := s.onWritten
		s.mu.Unlock()
		for _, fn := range fns {
			fn(m.ProducerID, topic, partition)
		}
	}
	return err
}

// groupMarkerError makes the group coordinator's "not here / not ready"
// answers NOT_LEADER_OR_FOLLOWER, which the transaction coordinator retries
// after refreshing who leads the partition, as Kafka does.
func groupMarkerError(err error) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress:
			return fmt.Errorf("group coordinator: %v: %w", err, kerr.NotLeaderForPartition)
		}
	}
	return err
}

// markerErrorCode is the wire code of a marker's outcome.
func markerErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}
