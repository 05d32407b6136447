package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth/authtest"
	"github.com/kmirror/kmirror/internal/wire"
)

// as makes the env's requests come from a principal with g's rights.
func (e *env) as(g *authtest.Grants) {
	e.rc = &wire.RequestContext{Listener: "PLAINTEXT", Principal: "User:alice", Authz: g}
}

// produceTo sends one batch to each partition of topics.
func produceTo(e *env, acks int16, txnID *string, batch []byte, tps ...string) (*kmsg.ProduceResponse, error) {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = 11, acks, 5000, txnID
	for _, topic := range tps {
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		for p := int32(0); p < 2; p++ {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, batch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := e.callErr(e.t.(*testing.T).Context(), req)
	if resp == nil {
		return nil, err
	}
	return resp.(*kmsg.ProduceResponse), err
}

// codesByTopic returns the error code of every partition of a Produce
// response by topic, failing unless all partitions of a topic agree.
func produceCodes(t *testing.T, resp *kmsg.ProduceResponse) map[string]int16 {
	t.Helper()
	out := map[string]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if c, ok := out[rt.Topic]; ok && c != rp.ErrorCode {
				t.Fatalf("%s: partitions answered %d and %d", rt.Topic, c, rp.ErrorCode)
			}
			out[rt.Topic] = rp.ErrorCode
		}
	}
	return out
}

// TestProduceAuthorization: WRITE per topic (TOPIC_AUTHORIZATION_FAILED for
// an existing topic and for a missing one alike, the rest appended); a
// request with a transactional batch needs WRITE on its transactional id,
// else every partition is refused and nothing appended; acks=0 with a
// refused partition closes the connection; the authorizer is asked once
// per topic, not per partition.
func TestProduceAuthorization(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("open", 2, nil)
	e.createTopic("closed", 2, nil)
	g := authtest.NewGrants("WRITE TOPIC open", "WRITE TRANSACTIONAL_ID tx-ok")
	e.as(g)

	resp, err := produceTo(e, -1, nil, makeBatch(t, plainBatch(), "v"), "open", "closed", "missing")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int16{"open": 0, "closed": kerr.TopicAuthorizationFailed.Code, "missing": kerr.TopicAuthorizationFailed.Code}
	if got := produceCodes(t, resp); !mapsEqual(got, want) {
		t.Fatalf("codes %v, want %v", got, want)
	}
	if g.Calls() != 3 {
		t.Errorf("authorizer asked %d times for 3 topics of 2 partitions", g.Calls())
	}
	if end := e.partition("closed", 0).Log().LogEndOffset(); end != 0 {
		t.Fatalf("refused partition appended: log end %d", end)
	}

	txnBatch := makeBatch(t, batchOpts{pid: 7, epoch: 0, seq: 0, txn: true}, "t")
	for _, id := range []*string{nil, kmsg.StringPtr("tx-other")} {
		resp, err = produceTo(e, -1, id, txnBatch, "open")
		if err != nil {
			t.Fatal(err)
		}
		if got := produceCodes(t, resp)["open"]; got != kerr.TransactionalIDAuthorizationFailed.Code {
			t.Fatalf("transactional produce with id %v: code %d, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", deref(id), got)
		}
	}
	// With the right transactional id the topic rights decide (and the
	// transaction checks follow: no coordinator here).
	resp, err = produceTo(e, -1, kmsg.StringPtr("tx-ok"), txnBatch, "open", "closed")
	if err != nil {
		t.Fatal(err)
	}
	if got := produceCodes(t, resp); got["closed"] != kerr.TopicAuthorizationFailed.Code || got["open"] == kerr.TransactionalIDAuthorizationFailed.Code || got["open"] == kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("transactional produce with an allowed id: %v", got)
	}

	if _, err := produceTo(e, 0, nil, makeBatch(t, plainBatch(), "v"), "open", "closed"); err == nil {
		t.Fatal("acks=0 with a refused partition: the connection stays open")
	}
	if resp, err := produceTo(e, 0, nil, makeBatch(t, plainBatch(), "v"), "open"); err != nil || resp != nil {
		t.Fatalf("acks=0 to an allowed topic: %v %v", resp, err)
	}
}

// TestFetchAuthorization: a consumer needs READ per topic (refused
// partitions are answered TOPIC_AUTHORIZATION_FAILED, the others read, by
// name and by topic id; an unknown topic id stays UNKNOWN_TOPIC_ID); a
// follower fetch needs CLUSTER_ACTION, without which every partition is
// refused; a fetch of refused partitions only does not wait out MaxWait.
func TestFetchAuthorization(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("open", 1, nil)
	e.createTopic("closed", 1, nil)
	e.mustProduce("open", 0, makeBatch(t, plainBatch(), "a"))
	e.mustProduce("closed", 0, makeBatch(t, plainBatch(), "b"))
	e.as(authtest.NewGrants("READ TOPIC open"))

	codes := func(r *kmsg.FetchResponse) map[string]int16 {
		out := map[string]int16{}
		for _, rt := range r.Topics {
			name := rt.Topic
			if t, ok := e.b.rm.Image().TopicByID(rt.TopicID); ok && name == "" {
				name = t.Name
			}
			for _, rp := range rt.Partitions {
				out[name] = rp.ErrorCode
				if rp.ErrorCode == 0 && len(rp.RecordBatches) == 0 {
					t.Errorf("%s: allowed but no records", name)
				}
				if rp.ErrorCode != 0 && len(rp.RecordBatches) != 0 {
					t.Errorf("%s: refused but records returned", name)
				}
			}
		}
		return out
	}
	r := decodeFetch(t, e.call(fetchReq(12, fp("open", 0, 0), fp("closed", 0, 0), fp("missing", 0, 0))))
	want := map[string]int16{"open": 0, "closed": kerr.TopicAuthorizationFailed.Code, "missing": kerr.TopicAuthorizationFailed.Code}
	if got := codes(r); !mapsEqual(got, want) {
		t.Fatalf("by name: %v, want %v", got, want)
	}
	byID := func(topic string) fetchPart {
		p := fp("", 0, 0)
		p.id = e.topicID(topic)
		return p
	}
	unknown := fp("", 0, 0)
	unknown.id[0] = 0xee
	r = decodeFetch(t, e.call(fetchReq(13, byID("open"), byID("closed"), unknown)))
	for _, rt := range r.Topics {
		var want int16
		switch rt.TopicID {
		case e.topicID("closed"):
			want = kerr.TopicAuthorizationFailed.Code
		case unknown.id:
			want = kerr.UnknownTopicID.Code
		}
		if got := rt.Partitions[0].ErrorCode; got != want {
			t.Errorf("by id %x: code %d, want %d", rt.TopicID, got, want)
		}
	}

	slow := fetchReq(12, fp("closed", 0, 1))
	slow.MaxWaitMillis = 60_000
	r = decodeFetch(t, e.call(slow)) // returns at once, or the test times out
	if got := codes(r)["closed"]; got != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("refused long poll: code %d", got)
	}

	follower := fetchReq(12, fp("open", 0, 0))
	follower.ReplicaID = 2
	r = decodeFetch(t, e.call(follower))
	if got := codes(r)["open"]; got != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("follower fetch without CLUSTER_ACTION: code %d", got)
	}
	e.as(authtest.NewGrants("CLUSTER_ACTION CLUSTER kafka-cluster"))
	r = decodeFetch(t, e.call(follower))
	if got := codes(r)["open"]; errors.Is(kerr.ErrorForCode(got), kerr.TopicAuthorizationFailed) {
		t.Fatalf("follower fetch with CLUSTER_ACTION refused")
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
