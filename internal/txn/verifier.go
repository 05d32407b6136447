package txn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/storage"
)

// Verifier checks, for the broker, that a transactional batch's partition
// was added to the producer's ongoing transaction before the batch is
// appended (KIP-890 part 1), so that a late write of a finished (or
// aborted) transaction cannot open a transaction nobody will end. It asks
// the transactional id's coordinator with AddPartitionsToTxn v4
// (VerifyOnly), or calls it directly when it runs on this node.
//
// Positive answers are cached per transactional id, producer id, epoch and
// partition until the transaction ends there: a marker for the producer
// written on this broker (MarkerService) forgets the entry, and so do
// ForgetPartition (to be called when this broker becomes the partition's
// leader: markers written while another broker led it were not seen here)
// and the age of the entry (transaction.max.timeout.ms: no transaction lives
// longer). A question about the same producer and partition with another
// transactional id or epoch replaces the entry.
type Verifier struct {
	c   *Coordinator
	ttl time.Duration

	mu    sync.Mutex
	cache map[producerPartition]*verified
}

type producerPartition struct {
	pid int64
	tp  storage.TopicPartition
}

// verified is a cache slot. A slot is created before asking the
// coordinator and marked ok with the answer only if it is still the slot of
// its key: a Forget meanwhile (a marker ended the transaction) removes it,
// so that an answer given before the marker is not cached after it.
type verified struct {
	id    string
	epoch int16
	at    time.Time
	ok    bool
}

// maxVerifierEntries triggers a sweep of expired entries.
const maxVerifierEntries = 100_000

func newVerifier(c *Coordinator) *Verifier {
	return &Verifier{c: c, ttl: c.cfg.MaxTimeout, cache: map[producerPartition]*verified{}}
}

// Verify checks one partition; see VerifyTransaction.
func (v *Verifier) Verify(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, topic string, partition int32) error {
	return v.VerifyTransaction(ctx, transactionalID, producerID, producerEpoch,
		[]storage.TopicPartition{{Topic: topic, Partition: partition}})[0]
}

// VerifyTransaction checks that each of tps is part of the producer's
// ongoing transaction. It returns one error per partition, nil when
// verified, else wrapping the error a Produce response carries (as Kafka's
// ReplicaManager answers): INVALID_TXN_STATE (not part of the transaction),
// INVALID_PRODUCER_EPOCH (fenced), INVALID_PRODUCER_ID_MAPPING,
// NOT_ENOUGH_REPLICAS (the coordinator is moving, loading or completing the
// transaction: retriable), NETWORK_EXCEPTION.
func (v *Verifier) VerifyTransaction(ctx context.Context, transactionalID string, producerID int64, producerEpoch int16, tps []storage.TopicPartition) []error {
	errs := make([]error, len(tps))
	now := v.c.cfg.Clock.Now()
	var ask []storage.TopicPartition
	var slots []*verified
	v.mu.Lock()
	for _, tp := range tps {
		k := producerPartition{producerID, tp}
		if s := v.cache[k]; s != nil && s.ok && s.id == transactionalID && s.epoch == producerEpoch && now.Sub(s.at) < v.ttl {
			continue
		}
		s := &verified{id: transactionalID, epoch: producerEpoch, at: now}
		v.cache[k] = s
		ask = append(ask, tp)
		slots = append(slots, s)
	}
	if len(v.cache) > maxVerifierEntries {
		v.sweepLocked(now)
	}
	v.mu.Unlock()
	if len(ask) == 0 {
		return errs
	}
	askErrs := v.ask(ctx, transactionalID, producerID, producerEpoch, ask)
	v.mu.Lock()
	for i, tp := range ask {
		k := producerPartition{producerID, tp}
		if v.cache[k] != slots[i] {
			continue // forgotten meanwhile: do not cache
		}
		if askErrs[i] == nil {
			slots[i].ok = true
		} else {
			delete(v.cache, k)
		}
	}
	v.mu.Unlock()
	j := 0
	for i, tp := range tps {
		if j < len(ask) && ask[j] == tp {
			errs[i] = askErrs[j]
			j++
		}
	}
	return errs
}

// Forget drops what was verified for a producer in a partition: its
// transaction there ended (a marker was written).
func (v *Verifier) Forget(producerID int64, topic string, partition int32) {
	v.mu.Lock()
	delete(v.cache, producerPartition{producerID, storage.TopicPartition{Topic: topic, Partition: partition}})
	v.mu.Unlock()
}

// ForgetPartition drops everything verified for a partition. The broker
// calls it when it becomes the partition's leader.
func (v *Verifier) ForgetPartition(topic string, partition int32) {
	tp := storage.TopicPartition{Topic: topic, Partition: partition}
	v.mu.Lock()
	for k := range v.cache {
		if k.tp == tp {
			delete(v.cache, k)
		}
	}
	v.mu.Unlock()
}

func (v *Verifier) sweepLocked(now time.Time) {
	for k, s := range v.cache {
		if now.Sub(s.at) >= v.ttl {
			delete(v.cache, k)
		}
	}
}

// ask asks the coordinator of the transactional id about tps and maps its
// answers to produce errors.
func (v *Verifier) ask(ctx context.Context, id string, pid int64, epoch int16, tps []storage.TopicPartition) []error {
	errs := make([]error, len(tps))
	all := func(err error) []error {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	c := v.c
	partition := c.CoordinatorFor(id)
	img := c.deps.Metadata.Image()
	leader, exists := partitionLeader(img, TransactionStateTopic, partition)
	if !exists || leader < 0 {
		return all(produceVerifyError(fmt.Errorf("no coordinator for transactional id %q: %w", id, kerr.CoordinatorNotAvailable)))
	}
	if leader == c.cfg.NodeID {
		top, per, err := c.verify(ctx, id, pid, epoch, tps)
		switch {
		case err != nil:
			return all(produceVerifyError(err))
		case top != nil:
			return all(produceVerifyError(fmt.Errorf("verify %q: %w", id, top)))
		}
		for i, e := range per {
			if e != nil {
				errs[i] = produceVerifyError(fmt.Errorf("verify %s in %q: %w", tps[i], id, e))
			}
		}
		return errs
	}
	addr, err := brokerAddr(img, leader, c.cfg.InterBrokerListener)
	if err != nil {
		return all(produceVerifyError(fmt.Errorf("coordinator of %q: %v: %w", id, err, kerr.CoordinatorNotAvailable)))
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 4
	t := kmsg.NewAddPartitionsToTxnRequestTransaction()
	t.TransactionalID, t.ProducerID, t.ProducerEpoch, t.VerifyOnly = id, pid, epoch, true
	for _, tp := range tps {
		if n := len(t.Topics); n == 0 || t.Topics[n-1].Topic != tp.Topic {
			rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			rt.Topic = tp.Topic
			t.Topics = append(t.Topics, rt)
		}
		last := &t.Topics[len(t.Topics)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	req.Transactions = append(req.Transactions, t)
	rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	kresp, err := c.conns.request(rctx, addr, req)
	if err != nil {
		return all(fmt.Errorf("verify %q with broker %d: %v: %w", id, leader, err, kerr.NetworkException))
	}
	resp, ok := kresp.(*kmsg.AddPartitionsToTxnResponse)
	if !ok {
		return all(fmt.Errorf("verify %q: response %T: %w", id, kresp, kerr.UnknownServerError))
	}
	if resp.ErrorCode != 0 {
		return all(produceVerifyError(fmt.Errorf("verify %q: %w", id, kerr.ErrorForCode(resp.ErrorCode))))
	}
	got := map[storage.TopicPartition]int16{}
	for _, rt := range resp.Transactions {
		if rt.TransactionalID != id {
			continue
		}
		for _, tt := range rt.Topics {
			for _, p := range tt.Partitions {
				got[storage.TopicPartition{Topic: tt.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	for i, tp := range tps {
		code, ok := got[tp]
		switch {
		case !ok:
			errs[i] = fmt.Errorf("verify %s in %q: no answer: %w", tp, id, kerr.UnknownServerError)
		case code != 0:
			errs[i] = produceVerifyError(fmt.Errorf("verify %s in %q: %w", tp, id, kerr.ErrorForCode(code)))
		}
	}
	return errs
}

// produceVerifyError maps a coordinator's verification answer to what a
// producer is told, as Kafka does: fencing is INVALID_PRODUCER_EPOCH,
// TRANSACTION_ABORTABLE is INVALID_TXN_STATE for producers that predate it,
// and a coordinator that cannot answer now is NOT_ENOUGH_REPLICAS, which
// producers retry.
func produceVerifyError(err error) error {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return err
	}
	switch ke {
	case kerr.ProducerFenced:
		return fmt.Errorf("%v: %w", err, kerr.InvalidProducerEpoch)
	case kerr.TransactionAbortable:
		return fmt.Errorf("partition was not added to the transaction: %v: %w", err, kerr.InvalidTxnState)
	case kerr.ConcurrentTransactions, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable, kerr.NotCoordinator:
		return fmt.Errorf("unable to verify the partition was added to the transaction: %v: %w", err, kerr.NotEnoughReplicas)
	}
	return err
}
