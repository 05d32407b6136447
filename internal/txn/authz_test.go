package txn

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth/authtest"
	"github.com/kmirror/kmirror/internal/storage"
)

func (e *env) listTransactionIDs() []string {
	e.t.Helper()
	var out []string
	for _, st := range e.do(kmsg.NewPtrListTransactionsRequest()).(*kmsg.ListTransactionsResponse).TransactionStates {
		out = append(out, st.TransactionalID)
	}
	return out
}

// brokerVerify sends a broker's AddPartitionsToTxn v5 verifying tp.
func (e *env) brokerVerify(p *producer, tp storage.TopicPartition) *kmsg.AddPartitionsToTxnResponse {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = p.id, p.pid, p.epoch, true
	rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
	tx.Topics = append(tx.Topics, rt)
	req.Transactions = append(req.Transactions, tx)
	return e.do(req).(*kmsg.AddPartitionsToTxnResponse)
}

// TestTransactionAPIsAuthorize: without rights every transaction API
// refuses (TRANSACTIONAL_ID_AUTHORIZATION_FAILED; a broker's verification
// CLUSTER_AUTHORIZATION_FAILED) and lists nothing; with WRITE on the id,
// a topic without WRITE is refused and the others not attempted, offsets
// need READ on the group, a description leaves out undescribable topics,
// and the transaction commits.
func TestTransactionAPIsAuthorize(t *testing.T) {
	e := newEnv(t)
	p := e.initProducer("tx", time.Minute)
	e.initProducer("other", time.Minute)
	a0, b0 := storage.TopicPartition{Topic: "a", Partition: 0}, storage.TopicPartition{Topic: "b", Partition: 0}

	rights := authtest.NewGrants()
	e.authz = rights
	for tp, err := range p.addVersion(3, a0) {
		if !isErr(err, kerr.TransactionalIDAuthorizationFailed) {
			t.Fatalf("add %s without rights: %v", tp, err)
		}
	}
	if err := p.addOffsets(3, "g"); !isErr(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("AddOffsetsToTxn without rights: %v", err)
	}
	if err := p.end(3, true); !isErr(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("EndTxn without rights: %v", err)
	}
	if st := e.describe("tx"); st.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code || st.State != "" {
		t.Fatalf("DescribeTransactions without rights: %+v", st)
	}
	if ids := e.listTransactionIDs(); len(ids) != 0 {
		t.Fatalf("ListTransactions without rights: %v", ids)
	}
	if r := e.brokerVerify(p, a0); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(r.Transactions) != 0 {
		t.Fatalf("broker verification without CLUSTER_ACTION: %+v", r)
	}

	rights.Allow("WRITE TRANSACTIONAL_ID tx")
	rights.Allow("WRITE TOPIC a")
	got := p.addVersion(3, a0, b0)
	if !isErr(got[a0], kerr.OperationNotAttempted) || !isErr(got[b0], kerr.TopicAuthorizationFailed) {
		t.Fatalf("add a (WRITE) and b (no WRITE): %v", got)
	}
	e.authz = nil
	if st := e.describe("tx"); len(st.Topics) != 0 {
		t.Fatalf("refused add touched the transaction: %+v", st.Topics)
	}
	e.authz = rights
	p.mustAdd(a0)
	if err := p.addOffsets(3, "g"); !isErr(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("AddOffsetsToTxn without READ on the group: %v", err)
	}
	rights.Allow("READ GROUP g")
	if err := p.addOffsets(3, "g"); err != nil {
		t.Fatalf("AddOffsetsToTxn: %v", err)
	}

	rights.Allow("DESCRIBE TRANSACTIONAL_ID tx")
	rights.Allow("DESCRIBE TOPIC a")
	st := e.describe("tx")
	if st.ErrorCode != 0 || len(st.Topics) != 1 || st.Topics[0].Topic != "a" {
		t.Fatalf("description with DESCRIBE on a only (not %s): %+v", OffsetsTopic, st)
	}
	if ids := e.listTransactionIDs(); len(ids) != 1 || ids[0] != "tx" {
		t.Fatalf("ListTransactions with DESCRIBE on tx: %v", ids)
	}
	if err := p.end(3, true); err != nil {
		t.Fatalf("EndTxn: %v", err)
	}

	rights.Allow("CLUSTER_ACTION CLUSTER kafka-cluster")
	if r := e.brokerVerify(p, a0); r.ErrorCode != 0 || len(r.Transactions) != 1 {
		t.Fatalf("broker verification with CLUSTER_ACTION: %+v", r)
	}
}
