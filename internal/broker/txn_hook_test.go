package broker

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
)

// fakeTxnCoordinator verifies partitions from a fixed set.
type fakeTxnCoordinator struct {
	added    map[storage.TopicPartition]bool
	verified []storage.TopicPartition
}

func (f *fakeTxnCoordinator) InitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	r := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	r.ProducerID, r.ProducerEpoch = 4242, 7
	return r
}

func (f *fakeTxnCoordinator) VerifyTransaction(ctx context.Context, txnID string, pid int64, epoch int16, tps []storage.TopicPartition) []error {
	errs := make([]error, len(tps))
	for i, tp := range tps {
		f.verified = append(f.verified, tp)
		if !f.added[tp] {
			errs[i] = errf(kerr.InvalidTxnState, "%s is not in the transaction of %s", tp, txnID)
		}
	}
	return errs
}

func TestTransactionCoordinatorHooks(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("tx", 2, nil)
	tc := &fakeTxnCoordinator{added: map[storage.TopicPartition]bool{tpOf("tx", 0): true}}
	e.b.SetTransactionCoordinator(tc)
	txnID := "app-1"
	r := e.call(&kmsg.InitProducerIDRequest{Version: 4, TransactionalID: &txnID, ProducerID: -1, ProducerEpoch: -1}).(*kmsg.InitProducerIDResponse)
	if r.ProducerID != 4242 || r.ProducerEpoch != 7 || r.Version != 4 {
		t.Fatalf("transactional InitProducerId: %+v", r)
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = 9, -1, 1000, &txnID
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "tx"
	for p := int32(0); p < 2; p++ {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, makeBatch(t, batchOpts{pid: 4242, epoch: 7, seq: 0, txn: true}, "in-txn")
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	ps := e.call(req).(*kmsg.ProduceResponse).Topics[0].Partitions
	if ps[0].ErrorCode != 0 || ps[1].ErrorCode != kerr.InvalidTxnState.Code {
		t.Fatalf("verified produce: %v / %v", kerr.ErrorForCode(ps[0].ErrorCode), kerr.ErrorForCode(ps[1].ErrorCode))
	}
	if !slices.Equal(tc.verified, []storage.TopicPartition{tpOf("tx", 0), tpOf("tx", 1)}) {
		t.Fatalf("verified %v", tc.verified)
	}
	// The coordinator's marker commits the transaction through AppendMarker.
	marker := record.BuildEndTxnMarker(4242, 7, record.EndTxnMarker{Commit: true, CoordinatorEpoch: 3}, time.Now().UnixMilli(), 0)
	if err := e.b.AppendMarker(context.Background(), "tx", 0, marker); err != nil {
		t.Fatal(err)
	}
	if lso := e.partition("tx", 0).Log().LastStableOffset(); lso != 2 {
		t.Fatalf("last stable offset after the commit marker: %d", lso)
	}
	if err := e.b.AppendMarker(context.Background(), "gone", 0, marker); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("marker for a missing partition: %v", err)
	}
	e.createTopicWith("remote", 1, 2, []int32{2}, []int32{2}, nil)
	if err := e.b.AppendMarker(context.Background(), "remote", 0, marker); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("marker for a partition led elsewhere: %v", err)
	}
}
