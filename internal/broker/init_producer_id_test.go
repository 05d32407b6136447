package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestInitProducerIDHandsOutUniqueIDsFromBlocks(t *testing.T) {
	e := newEnv(t, nil)
	e.ctrl.blockSize = 10
	seen := map[int64]bool{}
	for i := 0; i < 35; i++ {
		r := e.call(&kmsg.InitProducerIDRequest{Version: 5, ProducerID: -1, ProducerEpoch: -1}).(*kmsg.InitProducerIDResponse)
		if r.ErrorCode != 0 || r.ProducerEpoch != 0 {
			t.Fatalf("call %d: %v epoch %d", i, kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch)
		}
		if seen[r.ProducerID] {
			t.Fatalf("producer id %d handed out twice", r.ProducerID)
		}
		seen[r.ProducerID] = true
	}
	// 35 ids from blocks of 10 need 4 blocks; prefetching may have asked
	// for a fifth, never more.
	e.ctrl.mu.Lock()
	allocs := e.ctrl.allocs
	e.ctrl.mu.Unlock()
	if allocs < 4 || allocs > 5 {
		t.Fatalf("%d AllocateProducerIds requests for 35 ids in blocks of 10", allocs)
	}
}

func TestInitProducerIDErrors(t *testing.T) {
	e := newEnv(t, nil)
	txnID := "tx"
	cases := []struct {
		name string
		req  *kmsg.InitProducerIDRequest
		want *kerr.Error
	}{
		{"transactional without a coordinator", &kmsg.InitProducerIDRequest{Version: 4, TransactionalID: &txnID, ProducerID: -1, ProducerEpoch: -1}, kerr.CoordinatorNotAvailable},
		{"id without epoch", &kmsg.InitProducerIDRequest{Version: 4, ProducerID: 5, ProducerEpoch: -1}, kerr.InvalidRequest},
	}
	for _, c := range cases {
		r := e.call(c.req).(*kmsg.InitProducerIDResponse)
		if r.ErrorCode != c.want.Code || r.ProducerID != -1 {
			t.Fatalf("%s: %v id %d", c.name, kerr.ErrorForCode(r.ErrorCode), r.ProducerID)
		}
	}
	// A producer that had an id gets a new one (idempotent producers do
	// not keep ids across InitProducerId).
	r := e.call(&kmsg.InitProducerIDRequest{Version: 4, ProducerID: 5, ProducerEpoch: 3}).(*kmsg.InitProducerIDResponse)
	if r.ErrorCode != 0 || r.ProducerEpoch != 0 {
		t.Fatalf("re-init: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// No controller: a retriable error, and the next call tries again.
	e2 := newEnv(t, nil)
	e2.ctrl.setFail(errors.New("no controller"))
	r = e2.call(&kmsg.InitProducerIDRequest{Version: 4, ProducerID: -1, ProducerEpoch: -1}).(*kmsg.InitProducerIDResponse)
	if r.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("controller down: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	e2.ctrl.setFail(nil)
	r = e2.call(&kmsg.InitProducerIDRequest{Version: 4, ProducerID: -1, ProducerEpoch: -1}).(*kmsg.InitProducerIDResponse)
	if r.ErrorCode != 0 || r.ProducerID < 0 {
		t.Fatalf("controller back: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
