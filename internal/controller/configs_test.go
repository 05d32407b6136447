package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

func incr(typ kmsg.ConfigResourceType, name string, ops ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsRequestResource {
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = typ, name, ops
	return r
}

func op(o kmsg.IncrementalAlterConfigOp, name string, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Op, c.Name, c.Value = o, name, value
	return c
}

func incrReq(rs ...kmsg.IncrementalAlterConfigsRequestResource) *kmsg.IncrementalAlterConfigsRequest {
	r := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r.Version = 1
	r.Resources = rs
	return r
}

func legacy(typ kmsg.ConfigResourceType, name string, kv ...*string) kmsg.AlterConfigsRequestResource {
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	for i := 0; i+1 < len(kv); i += 2 {
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = *kv[i], kv[i+1]
		r.Configs = append(r.Configs, c)
	}
	return r
}

func legacyReq(rs ...kmsg.AlterConfigsRequestResource) *kmsg.AlterConfigsRequest {
	r := kmsg.NewPtrAlterConfigsRequest()
	r.Version = 2
	r.Resources = rs
	return r
}

const (
	set      = kmsg.IncrementalAlterConfigOpSet
	del      = kmsg.IncrementalAlterConfigOpDelete
	appendOp = kmsg.IncrementalAlterConfigOpAppend
	subtract = kmsg.IncrementalAlterConfigOpSubtract
	topicT   = kmsg.ConfigResourceTypeTopic
	brokerT  = kmsg.ConfigResourceTypeBroker
)

func configImage(t *testing.T) *metadata.Image {
	img := cluster(t, upBrokers(1)...)
	img = withTopic(t, img, "t", metadata.Uuid{0: 3, 15: 1}, partition(1, []int32{1}, []int32{1}))
	// t failed over from mirror m1: its configs are the operator's again,
	// and mirror.name stays.
	img = withConfig(t, img, topicRes("t"), "retention.ms", "100", "mirror.name", "m1.stopped", "leader.replication.throttled.replicas", "0:1")
	return withConfig(t, img, brokerRes("1"), "log.cleaner.threads", "2")
}

func TestIncrementalAlterConfigsRejects(t *testing.T) {
	img := configImage(t)
	for _, tc := range []struct {
		name string
		res  kmsg.IncrementalAlterConfigsRequestResource
		want *kerr.Error
		msg  string
	}{
		{"unknown topic", incr(topicT, "nope", op(set, "retention.ms", ptr("1"))), kerr.UnknownTopicOrPartition, ""},
		{"unknown resource type", incr(kmsg.ConfigResourceTypeBrokerLogger, "1", op(set, "x", ptr("1"))), kerr.InvalidRequest, "Unknown resource type"},
		{"unknown mirror", incr(kmsg.ConfigResourceType(64), "m", op(set, "client.id", ptr("1"))), kerr.ResourceNotFound, `mirror "m" does not exist`},
		{"bad broker name", incr(brokerT, "one", op(set, "log.cleaner.threads", ptr("1"))), kerr.InvalidRequest, "base 10"},
		{"negative broker", incr(brokerT, "-1", op(set, "log.cleaner.threads", ptr("1"))), kerr.InvalidRequest, "negative"},
		{"unknown topic config", incr(topicT, "t", op(set, "no.such", ptr("1"))), kerr.InvalidConfig, "no.such"},
		{"bad topic value", incr(topicT, "t", op(set, "retention.ms", ptr("x"))), kerr.InvalidConfig, "retention.ms"},
		{"mirror.name set", incr(topicT, "t", op(set, "mirror.name", ptr("m2"))), kerr.InvalidConfig, "mirror.name is managed by the mirror APIs"},
		{"mirror.name delete", incr(topicT, "t", op(del, "mirror.name", nil)), kerr.InvalidConfig, "mirror.name is managed"},
		{"null set", incr(topicT, "t", op(set, "retention.ms", nil)), kerr.InvalidRequest, "Null value"},
		{"duplicate key", incr(topicT, "t", op(set, "retention.ms", ptr("1")), op(del, "retention.ms", nil)), kerr.InvalidRequest, "duplicate config keys"},
		{"unknown op", incr(topicT, "t", op(kmsg.IncrementalAlterConfigOp(9), "retention.ms", ptr("1"))), kerr.InvalidRequest, "Unknown operations type"},
		{"append non-list", incr(topicT, "t", op(appendOp, "retention.ms", ptr("1"))), kerr.InvalidConfig, "append is not allowed"},
		{"subtract non-list", incr(topicT, "t", op(subtract, "retention.ms", ptr("1"))), kerr.InvalidConfig, "subtract is not allowed"},
		{"append unknown", incr(topicT, "t", op(appendOp, "no.such", ptr("1"))), kerr.InvalidConfig, "Unknown config name"},
		{"append invalid element", incr(topicT, "t", op(appendOp, "cleanup.policy", ptr("shred"))), kerr.InvalidConfig, "cleanup.policy"},
		{"read-only broker config", incr(brokerT, "1", op(set, "log.dirs", ptr("/x"))), kerr.InvalidRequest, "Cannot update these configs dynamically: log.dirs"},
		{"per-broker config as default", incr(brokerT, "", op(set, "ssl.key.location", ptr("/k.pem"))), kerr.InvalidRequest, "default cluster level"},
		{"unknown broker config", incr(brokerT, "1", op(set, "no.such.config", ptr("1"))), kerr.InvalidRequest, "no.such.config"},
		{"unknown broker config deleted", incr(brokerT, "1", op(del, "no.such.config", nil)), kerr.InvalidRequest, "no.such.config"},
		{"bad broker value", incr(brokerT, "", op(set, "log.cleaner.threads", ptr("many"))), kerr.InvalidRequest, "log.cleaner.threads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, resp := decideIncrementalAlterConfigs(testView(t, img, nil), incrReq(tc.res))
			if len(recs) != 0 {
				t.Fatalf("records for a refused change: %v", recs)
			}
			r := resp.Resources[0]
			wantCode(t, tc.name, r.ErrorCode, r.ErrorMessage, tc.want, tc.msg)
			if r.ResourceName != tc.res.ResourceName || r.ResourceType != tc.res.ResourceType {
				t.Fatalf("response names %v %q", r.ResourceType, r.ResourceName)
			}
		})
	}
}

func TestIncrementalAlterConfigsApplies(t *testing.T) {
	img := configImage(t)
	recs, resp := decideIncrementalAlterConfigs(testView(t, img, nil), incrReq(
		incr(topicT, "t",
			op(set, "segment.bytes", ptr("1048576")),
			op(del, "retention.ms", nil),
			op(appendOp, "cleanup.policy", ptr("compact")),
			op(subtract, "leader.replication.throttled.replicas", ptr("0:1")),
		),
		incr(brokerT, "", op(set, "log.cleaner.threads", ptr("4"))),
		incr(brokerT, "1", op(del, "log.cleaner.threads", nil)),
		incr(topicT, "nope", op(set, "retention.ms", ptr("1"))),
	))
	for i, want := range []*kerr.Error{nil, nil, nil, kerr.UnknownTopicOrPartition} {
		wantCode(t, resp.Resources[i].ResourceName, resp.Resources[i].ErrorCode, resp.Resources[i].ErrorMessage, want, "")
	}
	after := apply(t, img, recs...)
	got := after.Configs(topicRes("t"))
	want := map[string]string{"segment.bytes": "1048576", "cleanup.policy": "delete,compact", "mirror.name": "m1.stopped", "leader.replication.throttled.replicas": ""}
	if len(got) != len(want) {
		t.Fatalf("topic configs %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("topic configs %v, want %v", got, want)
		}
	}
	if v, _ := after.Config(brokerRes(""), "log.cleaner.threads"); v != "4" {
		t.Fatalf("cluster default log.cleaner.threads = %q", v)
	}
	if _, ok := after.Config(brokerRes("1"), "log.cleaner.threads"); ok {
		t.Fatal("broker 1's log.cleaner.threads not deleted")
	}

	// An unchanged topic value emits nothing; broker values always do, so
	// that brokers reload them.
	recs, _ = decideIncrementalAlterConfigs(testView(t, after, nil), incrReq(
		incr(topicT, "t", op(set, "segment.bytes", ptr("1048576"))),
		incr(brokerT, "", op(set, "log.cleaner.threads", ptr("4")))))
	if len(recs) != 1 || recs[0].(*metadata.ConfigRecord).ResourceType != metadata.ResourceBroker {
		t.Fatalf("records for unchanged values: %+v", recs)
	}
}

func TestIncrementalAlterConfigsDuplicateResource(t *testing.T) {
	img := configImage(t)
	recs, resp := decideIncrementalAlterConfigs(testView(t, img, nil), incrReq(
		incr(topicT, "t", op(set, "retention.ms", ptr("1"))),
		incr(topicT, "t", op(set, "segment.ms", ptr("1")))))
	if len(recs) != 0 {
		t.Fatal("records for a duplicated resource")
	}
	for _, r := range resp.Resources {
		wantCode(t, "dup", r.ErrorCode, r.ErrorMessage, kerr.InvalidRequest, "at most once")
	}
}

func TestAlterConfigsReplacesButKeepsMirrorName(t *testing.T) {
	img := configImage(t)
	recs, resp := decideAlterConfigs(testView(t, img, nil), legacyReq(
		legacy(topicT, "t", ptr("segment.ms"), ptr("5000")),
		legacy(brokerT, "1", ptr("log.cleaner.threads"), ptr("3")),
	))
	for _, r := range resp.Resources {
		wantCode(t, r.ResourceName, r.ErrorCode, r.ErrorMessage, nil, "")
	}
	after := apply(t, img, recs...)
	got := after.Configs(topicRes("t"))
	if len(got) != 2 || got["segment.ms"] != "5000" || got["mirror.name"] != "m1.stopped" {
		t.Fatalf("topic configs after replace: %v", got)
	}
	if v, _ := after.Config(brokerRes("1"), "log.cleaner.threads"); v != "3" {
		t.Fatalf("broker config %q", v)
	}
}

func TestAlterConfigsRejects(t *testing.T) {
	img := configImage(t)
	for _, tc := range []struct {
		name string
		res  kmsg.AlterConfigsRequestResource
		want *kerr.Error
		msg  string
	}{
		{"unknown topic", legacy(topicT, "nope", ptr("retention.ms"), ptr("1")), kerr.UnknownTopicOrPartition, ""},
		{"null value", legacy(topicT, "t", ptr("retention.ms"), nil), kerr.InvalidRequest, "Null value"},
		{"duplicate key", legacy(topicT, "t", ptr("retention.ms"), ptr("1"), ptr("retention.ms"), ptr("2")), kerr.InvalidRequest, "duplicate"},
		{"mirror.name", legacy(topicT, "t", ptr("mirror.name"), ptr("m2")), kerr.InvalidConfig, "mirror.name is managed"},
		{"invalid value", legacy(topicT, "t", ptr("min.insync.replicas"), ptr("0")), kerr.InvalidConfig, "min.insync.replicas"},
		{"read-only broker key", legacy(brokerT, "1", ptr("node.id"), ptr("7")), kerr.InvalidRequest, "dynamically"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, resp := decideAlterConfigs(testView(t, img, nil), legacyReq(tc.res))
			if len(recs) != 0 {
				t.Fatalf("records: %v", recs)
			}
			wantCode(t, tc.name, resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, tc.want, tc.msg)
		})
	}
}

func TestSetMirrorNames(t *testing.T) {
	img := configImage(t)
	img = withTopic(t, img, "u", metadata.Uuid{0: 3, 15: 2}, partition(1, []int32{1}, []int32{1}))
	recs, err := decideSetMirrorNames(img, map[string]string{"t": "", "u": "m2"})
	wantErr(t, "set", err, nil)
	after := apply(t, img, recs...)
	if _, ok := after.Config(topicRes("t"), "mirror.name"); ok {
		t.Fatal("t's mirror.name not removed")
	}
	if v, _ := after.Config(topicRes("u"), "mirror.name"); v != "m2" {
		t.Fatalf("u's mirror.name %q", v)
	}
	if got := after.MirrorTopics("m2"); len(got) != 1 || got[0] != "u" {
		t.Fatalf("mirror m2 topics %v", got)
	}
	recs, err = decideSetMirrorNames(after, map[string]string{"u": "m2"})
	if err != nil || len(recs) != 0 {
		t.Fatalf("unchanged mirror.name: %d records, %v", len(recs), err)
	}
	_, err = decideSetMirrorNames(after, map[string]string{"u": "m3", "gone": "m3"})
	wantErr(t, "unknown topic", err, kerr.UnknownTopicOrPartition)
}
