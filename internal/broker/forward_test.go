package broker

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestForwardedAdminRequests(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createTopic("fw", 2, map[string]string{"retention.ms": "60000"})
	if id.IsZero() {
		t.Fatal("CreateTopics returned no topic id")
	}
	if lc := e.partition("fw", 1).Log().Config(); lc.RetentionMs != 60000 {
		t.Fatalf("created log retention.ms %d", lc.RetentionMs)
	}
	// IncrementalAlterConfigs reaches the controller, and the new config
	// reaches the log.
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ia.Version = 1
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "fw"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "max.message.bytes", kmsg.StringPtr("300")
	res.Configs = append(res.Configs, c)
	ia.Resources = append(ia.Resources, res)
	r := e.call(ia).(*kmsg.IncrementalAlterConfigsResponse)
	if r.Version != 1 || r.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v", r)
	}
	if lc := e.partition("fw", 0).Log().Config(); lc.MaxMessageBytes != 300 {
		t.Fatalf("max.message.bytes after alter: %d", lc.MaxMessageBytes)
	}
	if rp := e.produce(9, 1, "fw", 0, makeBatch(t, plainBatch(), string(make([]byte, 600)))); rp.ErrorCode != kerr.MessageTooLarge.Code {
		t.Fatalf("produce over the altered limit: %v", kerr.ErrorForCode(rp.ErrorCode))
	}
	// DeleteTopics goes through and the partitions and logs disappear.
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.Version, dt.TopicNames, dt.TimeoutMillis = 5, []string{"fw"}, 1000
	if r := e.call(dt).(*kmsg.DeleteTopicsResponse); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	for p := int32(0); p < 2; p++ {
		if _, ok := e.b.rm.Partition(tpOf("fw", p)); ok {
			t.Fatalf("partition fw-%d survived the deletion", p)
		}
		if _, ok := e.mgr.Log(tpOf("fw", p)); ok {
			t.Fatalf("log fw-%d survived the deletion", p)
		}
	}

	// Without a controller every item gets NOT_CONTROLLER, or
	// REQUEST_TIMED_OUT when the request's context ended.
	e.ctrl.setFail(errors.New("no controller reachable"))
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version = 7
	for _, n := range []string{"x", "y", "x"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic = n
		ct.Topics = append(ct.Topics, rt)
	}
	cr := e.call(ct).(*kmsg.CreateTopicsResponse)
	if len(cr.Topics) != 2 || cr.Topics[0].ErrorCode != kerr.NotController.Code || cr.Topics[0].ErrorMessage == nil {
		t.Fatalf("create without a controller: %+v", cr.Topics)
	}
	e.ctrl.setFail(context.DeadlineExceeded)
	for _, req := range []kmsg.Request{
		&kmsg.DeleteTopicsRequest{Version: 6, Topics: []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("a")}}},
		&kmsg.CreatePartitionsRequest{Version: 3, Topics: []kmsg.CreatePartitionsRequestTopic{{Topic: "a"}}},
		&kmsg.AlterConfigsRequest{Version: 2, Resources: []kmsg.AlterConfigsRequestResource{{ResourceName: "a"}}},
		&kmsg.IncrementalAlterConfigsRequest{Version: 1, Resources: []kmsg.IncrementalAlterConfigsRequestResource{{ResourceName: "a"}}},
	} {
		resp := e.call(req)
		var code int16
		switch r := resp.(type) {
		case *kmsg.DeleteTopicsResponse:
			code = r.Topics[0].ErrorCode
		case *kmsg.CreatePartitionsResponse:
			code = r.Topics[0].ErrorCode
		case *kmsg.AlterConfigsResponse:
			code = r.Resources[0].ErrorCode
		case *kmsg.IncrementalAlterConfigsResponse:
			code = r.Resources[0].ErrorCode
		}
		if code != kerr.RequestTimedOut.Code || resp.GetVersion() != req.GetVersion() {
			t.Fatalf("%T: %v v%d", resp, kerr.ErrorForCode(code), resp.GetVersion())
		}
	}
}
