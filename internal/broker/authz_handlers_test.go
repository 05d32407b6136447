package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth/authtest"
)

// TestListOffsetsAndEpochAuthorization: a consumer's ListOffsets and
// OffsetForLeaderEpoch need DESCRIBE per topic; a follower's ListOffsets
// (a replica id) needs CLUSTER_ACTION, which also covers every topic of an
// OffsetForLeaderEpoch.
func TestListOffsetsAndEpochAuthorization(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("open", 1, nil)
	e.createTopic("closed", 1, nil)
	e.mustProduce("open", 0, makeBatch(t, plainBatch(), "a"))
	e.mustProduce("closed", 0, makeBatch(t, plainBatch(), "b"))
	e.as(authtest.NewGrants("DESCRIBE TOPIC open"))

	listOffsets := func(replica int32) map[string]int16 {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = 8, replica
		for _, topic := range []string{"open", "closed", "missing"} {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		out := map[string]int16{}
		for _, rt := range e.call(req).(*kmsg.ListOffsetsResponse).Topics {
			out[rt.Topic] = rt.Partitions[0].ErrorCode
		}
		return out
	}
	epochs := func() map[string]int16 {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version, req.ReplicaID = 4, -1
		for _, topic := range []string{"open", "closed", "missing"} {
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, -1, 0
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		out := map[string]int16{}
		for _, rt := range e.call(req).(*kmsg.OffsetForLeaderEpochResponse).Topics {
			out[rt.Topic] = rt.Partitions[0].ErrorCode
		}
		return out
	}
	taf := kerr.TopicAuthorizationFailed.Code
	if got, want := listOffsets(-1), map[string]int16{"open": 0, "closed": taf, "missing": taf}; !mapsEqual(got, want) {
		t.Fatalf("consumer ListOffsets: %v, want %v", got, want)
	}
	if got, want := listOffsets(2), map[string]int16{"open": taf, "closed": taf, "missing": taf}; !mapsEqual(got, want) {
		t.Fatalf("follower ListOffsets without CLUSTER_ACTION: %v, want %v", got, want)
	}
	if got, want := epochs(), map[string]int16{"open": 0, "closed": taf, "missing": taf}; !mapsEqual(got, want) {
		t.Fatalf("consumer OffsetForLeaderEpoch: %v, want %v", got, want)
	}

	e.as(authtest.NewGrants("CLUSTER_ACTION CLUSTER kafka-cluster"))
	unknown := kerr.UnknownTopicOrPartition.Code
	if got, want := listOffsets(2), map[string]int16{"open": 0, "closed": 0, "missing": unknown}; !mapsEqual(got, want) {
		t.Fatalf("follower ListOffsets with CLUSTER_ACTION: %v, want %v", got, want)
	}
	if got, want := epochs(), map[string]int16{"open": 0, "closed": 0, "missing": unknown}; !mapsEqual(got, want) {
		t.Fatalf("OffsetForLeaderEpoch with CLUSTER_ACTION: %v, want %v", got, want)
	}
}

// TestMetadataAuthorization: listing all topics leaves out the ones without
// DESCRIBE; a named one without it is TOPIC_AUTHORIZATION_FAILED (by id:
// without its name); auto-creation needs CREATE on the cluster or the
// topic, and is not attempted without it; with auto-creation off a missing
// describable topic is UNKNOWN_TOPIC_OR_PARTITION as before.
func TestMetadataAuthorization(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("seen", 1, nil)
	hiddenID := e.createTopic("hidden", 1, nil)
	e.as(authtest.NewGrants("DESCRIBE TOPIC seen", "DESCRIBE TOPIC missing", "DESCRIBE TOPIC auto", "CREATE TOPIC auto"))

	all := e.call(metadataReq(12, false)).(*kmsg.MetadataResponse)
	if len(all.Topics) != 1 || deref(all.Topics[0].Topic) != "seen" {
		t.Fatalf("listing all topics: %+v", all.Topics)
	}

	creates := func() int {
		e.ctrl.mu.Lock()
		defer e.ctrl.mu.Unlock()
		return e.ctrl.creates
	}
	before := creates()
	codes := map[string]int16{}
	for _, mt := range e.call(metadataReq(12, true, "seen", "hidden", "missing")).(*kmsg.MetadataResponse).Topics {
		codes[deref(mt.Topic)] = mt.ErrorCode
		if mt.ErrorCode == kerr.TopicAuthorizationFailed.Code && (len(mt.Partitions) != 0 || mt.IsInternal || mt.TopicID != [16]byte{}) {
			t.Errorf("refused %s tells more than its error: %+v", deref(mt.Topic), mt)
		}
	}
	taf := kerr.TopicAuthorizationFailed.Code
	if want := map[string]int16{"seen": 0, "hidden": taf, "missing": taf}; !mapsEqual(codes, want) {
		t.Fatalf("named topics: %v, want %v", codes, want)
	}
	if creates() != before {
		t.Fatal("a topic without CREATE was auto-created")
	}
	noAuto := e.call(metadataReq(12, false, "missing")).(*kmsg.MetadataResponse)
	if noAuto.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("missing topic without auto-creation: %v", kerr.ErrorForCode(noAuto.Topics[0].ErrorCode))
	}
	auto := e.call(metadataReq(12, true, "auto")).(*kmsg.MetadataResponse)
	if auto.Topics[0].ErrorCode == taf {
		t.Fatal("auto-creation with CREATE on the topic refused")
	}
	pollUntil(t, "auto-creation with CREATE on the topic", func() bool { return creates() > before })

	byID := kmsg.NewPtrMetadataRequest()
	byID.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.TopicID = hiddenID
	byID.Topics = append(byID.Topics, rt)
	r := e.call(byID).(*kmsg.MetadataResponse)
	if mt := r.Topics[0]; mt.ErrorCode != taf || mt.Topic != nil || mt.TopicID != hiddenID || len(mt.Partitions) != 0 {
		t.Fatalf("undescribable topic by id: %+v", mt)
	}

	// CREATE on the cluster covers any topic.
	e.as(authtest.NewGrants("DESCRIBE TOPIC anything", "CREATE CLUSTER kafka-cluster"))
	if r := e.call(metadataReq(12, true, "anything")).(*kmsg.MetadataResponse); r.Topics[0].ErrorCode == taf {
		t.Fatal("auto-creation with CREATE on the cluster refused")
	}
}

// TestDeleteRecordsAndDescribeProducersAuthorization: DeleteRecords needs
// DELETE and DescribeProducers READ on each topic; refused partitions are
// untouched.
func TestDeleteRecordsAndDescribeProducersAuthorization(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("open", 1, nil)
	e.createTopic("closed", 1, nil)
	for range 3 {
		e.mustProduce("open", 0, makeBatch(t, plainBatch(), "a"))
		e.mustProduce("closed", 0, makeBatch(t, plainBatch(), "b"))
	}
	e.as(authtest.NewGrants("DELETE TOPIC open", "READ TOPIC closed"))
	if rp := deleteRecords(t, e, "closed", 0, 2); rp.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("DeleteRecords without DELETE: %v", kerr.ErrorForCode(rp.ErrorCode))
	}
	if start := e.partition("closed", 0).Log().LogStartOffset(); start != 0 {
		t.Fatalf("refused DeleteRecords moved the log start to %d", start)
	}
	if rp := deleteRecords(t, e, "open", 0, 2); rp.ErrorCode != 0 || rp.LowWatermark != 2 {
		t.Fatalf("DeleteRecords with DELETE: %v low watermark %d", kerr.ErrorForCode(rp.ErrorCode), rp.LowWatermark)
	}

	req := kmsg.NewPtrDescribeProducersRequest()
	for _, topic := range []string{"open", "closed", "missing"} {
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
	}
	got := map[string]int16{}
	for _, rt := range e.call(req).(*kmsg.DescribeProducersResponse).Topics {
		got[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	taf := kerr.TopicAuthorizationFailed.Code
	if want := map[string]int16{"open": taf, "closed": 0, "missing": taf}; !mapsEqual(got, want) {
		t.Fatalf("DescribeProducers: %v, want %v", got, want)
	}
}

// TestInitProducerIDAuthorization: a transactional id needs WRITE on it; an
// idempotent producer IDEMPOTENT_WRITE on the cluster or WRITE on some
// topic, else CLUSTER_AUTHORIZATION_FAILED.
func TestInitProducerIDAuthorization(t *testing.T) {
	e := newEnv(t, nil)
	init := func(txnID *string) *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.TransactionTimeoutMillis = 5, txnID, -1, -1, 60000
		return e.call(req).(*kmsg.InitProducerIDResponse)
	}
	for _, tc := range []struct {
		name   string
		grants []string
		txnID  *string
		want   int16
	}{
		{"idempotent without rights", nil, nil, kerr.ClusterAuthorizationFailed.Code},
		{"idempotent with READ only", []string{"READ TOPIC t"}, nil, kerr.ClusterAuthorizationFailed.Code},
		{"idempotent with IDEMPOTENT_WRITE", []string{"IDEMPOTENT_WRITE CLUSTER kafka-cluster"}, nil, 0},
		{"idempotent with WRITE on a topic", []string{"WRITE TOPIC t"}, nil, 0},
		{"transactional without WRITE", []string{"WRITE TOPIC t", "IDEMPOTENT_WRITE CLUSTER kafka-cluster"}, kmsg.StringPtr("tx"), kerr.TransactionalIDAuthorizationFailed.Code},
		// No transaction coordinator in this env: past the check.
		{"transactional with WRITE", []string{"WRITE TRANSACTIONAL_ID tx"}, kmsg.StringPtr("tx"), kerr.CoordinatorNotAvailable.Code},
	} {
		e.as(authtest.NewGrants(tc.grants...))
		r := init(tc.txnID)
		if r.ErrorCode != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, kerr.ErrorForCode(r.ErrorCode), kerr.ErrorForCode(tc.want))
		}
		if tc.want == 0 && r.ProducerID < 0 || tc.want != 0 && r.ProducerID != -1 {
			t.Errorf("%s: producer id %d", tc.name, r.ProducerID)
		}
	}
}

// TestDescribeConfigsAuthorization: DESCRIBE_CONFIGS on the topic for a
// TOPIC resource, on the cluster for a BROKER one; refused resources carry
// no configs.
func TestDescribeConfigsAuthorization(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("open", 1, nil)
	e.createTopic("closed", 1, nil)
	e.as(authtest.NewGrants("DESCRIBE_CONFIGS TOPIC open"))
	for _, tc := range []struct {
		typ  kmsg.ConfigResourceType
		name string
		want int16
	}{
		{kmsg.ConfigResourceTypeTopic, "open", 0},
		{kmsg.ConfigResourceTypeTopic, "closed", kerr.TopicAuthorizationFailed.Code},
		{kmsg.ConfigResourceTypeTopic, "missing", kerr.TopicAuthorizationFailed.Code},
		{kmsg.ConfigResourceTypeBroker, "1", kerr.ClusterAuthorizationFailed.Code},
	} {
		r := describeConfigs(t, e, 4, tc.typ, tc.name, nil, false, false)
		if r.ErrorCode != tc.want || (tc.want != 0) != (len(r.Configs) == 0) {
			t.Errorf("%v %s: %v with %d configs, want %v", tc.typ, tc.name, kerr.ErrorForCode(r.ErrorCode), len(r.Configs), kerr.ErrorForCode(tc.want))
		}
	}
	e.as(authtest.NewGrants("DESCRIBE_CONFIGS CLUSTER kafka-cluster"))
	if r := describeConfigs(t, e, 4, kmsg.ConfigResourceTypeBroker, "1", nil, false, false); r.ErrorCode != 0 || len(r.Configs) == 0 {
		t.Fatalf("broker configs with DESCRIBE_CONFIGS on the cluster: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}
