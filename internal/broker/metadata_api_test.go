package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

func metadataReq(version int16, allowAuto bool, topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = version, allowAuto
	if topics == nil {
		req.Topics = nil
		return req
	}
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func TestMetadataBrokersAndTopics(t *testing.T) {
	e := newEnv(t, map[string]string{"auto.create.topics.enable": "false"})
	aID := e.createTopic("a", 2, nil)
	e.createTopicWith(offsetsTopic, 1, 1, []int32{1}, []int32{1}, nil)
	e.createTopicWith("orphan", 1, 3, []int32{3, 1}, []int32{3, 1}, nil)

	r := e.call(metadataReq(12, false)).(*kmsg.MetadataResponse)
	if deref(r.ClusterID) != e.b.deps.ClusterID || r.ControllerID != 1 {
		t.Fatalf("cluster %v controller %d", r.ClusterID, r.ControllerID)
	}
	if len(r.Brokers) != 2 || r.Brokers[1].Host != "broker2" || deref(r.Brokers[1].Rack) != "rack-b" {
		t.Fatalf("brokers %+v", r.Brokers)
	}
	var names []string
	for _, tp := range r.Topics {
		names = append(names, deref(tp.Topic))
	}
	if !slices.Equal(names, []string{offsetsTopic, "a", "orphan"}) {
		t.Fatalf("topics %q", names)
	}
	if !r.Topics[0].IsInternal || r.Topics[1].IsInternal || r.Topics[1].TopicID != aID || r.Topics[1].AuthorizedOperations != -2147483648 {
		t.Fatalf("topic fields %+v", r.Topics[:2])
	}
	if p := r.Topics[1].Partitions; len(p) != 2 || p[1].Partition != 1 || p[1].Leader != 1 || p[1].LeaderEpoch != 0 || !slices.Equal(p[1].ISR, []int32{1}) {
		t.Fatalf("partitions of a: %+v", p)
	}
	orphan := r.Topics[2].Partitions[0]
	if orphan.ErrorCode != kerr.LeaderNotAvailable.Code || orphan.Leader != -1 || !slices.Equal(orphan.OfflineReplicas, []int32{3}) {
		t.Fatalf("partition led by an unknown broker: %+v", orphan)
	}

	// Other listeners, fenced brokers, the active controller.
	e.rc.Listener = "OTHER"
	if r := e.call(metadataReq(12, false)).(*kmsg.MetadataResponse); len(r.Brokers) != 0 || r.ControllerID != -1 {
		t.Fatalf("unknown listener: %+v controller %d", r.Brokers, r.ControllerID)
	}
	e.rc.Listener = "PLAINTEXT"
	e.meta.mu.Lock()
	e.meta.leaderID = 2
	e.meta.mu.Unlock()
	if r := e.call(metadataReq(12, false, "a")).(*kmsg.MetadataResponse); r.ControllerID != 2 {
		t.Fatalf("active controller 2 is a live broker, got %d", r.ControllerID)
	}
	e.meta.mustApply(t, &metadata.FenceBrokerRecord{ID: 2, Epoch: 11})
	r = e.call(metadataReq(12, false, "a")).(*kmsg.MetadataResponse)
	if len(r.Brokers) != 1 || r.ControllerID != 1 {
		t.Fatalf("after fencing 2: brokers %+v controller %d", r.Brokers, r.ControllerID)
	}

	// v0: an empty list is every topic.
	r = e.call(&kmsg.MetadataRequest{Version: 0, Topics: []kmsg.MetadataRequestTopic{}}).(*kmsg.MetadataResponse)
	if len(r.Topics) != 3 {
		t.Fatalf("v0 all topics: %d", len(r.Topics))
	}
	// Authorized operations when asked.
	req := metadataReq(10, false, "a")
	req.IncludeTopicAuthorizedOperations, req.IncludeClusterAuthorizedOperations = true, true
	r = e.call(req).(*kmsg.MetadataResponse)
	if r.Topics[0].AuthorizedOperations != topicOperations || r.AuthorizedOperations != clusterOperations {
		t.Fatalf("authorized operations %d %d", r.Topics[0].AuthorizedOperations, r.AuthorizedOperations)
	}
	if topicOperations != 0b1101_1111_1000 {
		t.Fatalf("topic operations bits %b", topicOperations)
	}
	// By topic id (v12).
	byID := kmsg.NewPtrMetadataRequest()
	byID.Version = 12
	for _, id := range []metadata.Uuid{aID, metadata.RandomUuid()} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.TopicID = id
		byID.Topics = append(byID.Topics, rt)
	}
	r = e.call(byID).(*kmsg.MetadataResponse)
	if len(r.Topics) != 2 || deref(r.Topics[0].Topic) != "a" || r.Topics[1].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("by id: %+v", r.Topics)
	}
	// Auto-creation is off.
	if r := e.call(metadataReq(12, true, "nope")).(*kmsg.MetadataResponse); r.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("auto-create disabled: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
}

func TestMetadataAutoCreatesTopics(t *testing.T) {
	e := newEnv(t, map[string]string{"num.partitions": "3"})
	r := e.call(metadataReq(12, true, "auto")).(*kmsg.MetadataResponse)
	if r.Topics[0].ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("first metadata for a new topic: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	pollUntil(t, "the auto-created topic", func() bool {
		r := e.call(metadataReq(12, true, "auto")).(*kmsg.MetadataResponse)
		return r.Topics[0].ErrorCode == 0
	})
	r = e.call(metadataReq(12, true, "auto")).(*kmsg.MetadataResponse)
	if len(r.Topics[0].Partitions) != 3 {
		t.Fatalf("auto-created with %d partitions, want num.partitions=3", len(r.Topics[0].Partitions))
	}
	e.ctrl.mu.Lock()
	creates := e.ctrl.creates
	e.ctrl.mu.Unlock()
	// The request does not allow auto-creation (v4+), the name is invalid,
	// or the topic is internal: no creation.
	for _, c := range []struct {
		req  *kmsg.MetadataRequest
		want *kerr.Error
	}{
		{metadataReq(12, false, "not-allowed"), kerr.UnknownTopicOrPartition},
		{metadataReq(12, true, "bad name!"), kerr.InvalidTopicException},
		{metadataReq(12, true, transactionStateTopic), kerr.UnknownTopicOrPartition},
		{metadataReq(3, false, "v3-always-allows"), kerr.LeaderNotAvailable},
	} {
		r := e.call(c.req).(*kmsg.MetadataResponse)
		if r.Topics[0].ErrorCode != c.want.Code {
			t.Fatalf("%s: %v, want %v", deref(c.req.Topics[0].Topic), kerr.ErrorForCode(r.Topics[0].ErrorCode), c.want)
		}
	}
	pollUntil(t, "the v3 auto-created topic", func() bool { _, ok := e.b.rm.Image().Topic("v3-always-allows"); return ok })
	e.ctrl.mu.Lock()
	defer e.ctrl.mu.Unlock()
	if e.ctrl.creates != creates+1 {
		t.Fatalf("%d creation requests, want %d", e.ctrl.creates, creates+1)
	}
}
