package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeConfigs(t *testing.T, e *env, version int16, typ kmsg.ConfigResourceType, name string, names []string, synonyms, docs bool) kmsg.DescribeConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version, req.IncludeSynonyms, req.IncludeDocumentation = version, synonyms, docs
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, name, names
	req.Resources = append(req.Resources, r)
	resp := e.call(req).(*kmsg.DescribeConfigsResponse)
	if len(resp.Resources) != 1 {
		t.Fatalf("resources %+v", resp.Resources)
	}
	return resp.Resources[0]
}

func configEntry(t *testing.T, r kmsg.DescribeConfigsResponseResource, name string) kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	for _, c := range r.Configs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no config %s in %d entries", name, len(r.Configs))
	return kmsg.DescribeConfigsResponseResourceConfig{}
}

func TestDescribeConfigsTopic(t *testing.T) {
	e := newEnv(t, map[string]string{"log.retention.hours": "100", "ssl.keystore.password": "secret"})
	e.createTopic("cfg", 1, map[string]string{"retention.ms": "1234"})

	r := describeConfigs(t, e, 4, kmsg.ConfigResourceTypeTopic, "cfg", nil, true, true)
	if r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	ret := configEntry(t, r, "retention.ms")
	if deref(ret.Value) != "1234" || ret.Source != kmsg.ConfigSourceDynamicTopicConfig || ret.ReadOnly || ret.IsSensitive {
		t.Fatalf("retention.ms %+v", ret)
	}
	if len(ret.ConfigSynonyms) < 2 || ret.ConfigSynonyms[0].Name != "retention.ms" || ret.ConfigSynonyms[0].Source != kmsg.ConfigSourceDynamicTopicConfig {
		t.Fatalf("retention.ms synonyms %+v", ret.ConfigSynonyms)
	}
	foundStatic := false
	for _, s := range ret.ConfigSynonyms {
		if s.Name == "log.retention.hours" && deref(s.Value) == "100" && s.Source == kmsg.ConfigSourceStaticBrokerConfig {
			foundStatic = true
		}
	}
	if !foundStatic {
		t.Fatalf("the static broker synonym is missing: %+v", ret.ConfigSynonyms)
	}
	if ret.Documentation == nil || ret.ConfigType != kmsg.ConfigTypeLong {
		t.Fatalf("documentation %v type %v", ret.Documentation, ret.ConfigType)
	}
	// A config the topic does not override comes from the broker.
	seg := configEntry(t, r, "segment.bytes")
	if seg.Source != kmsg.ConfigSourceDefaultConfig || deref(seg.Value) != "1073741824" {
		t.Fatalf("segment.bytes %+v", seg)
	}

	// Filtering, no synonyms or documentation unless asked, v0 IsDefault.
	r = describeConfigs(t, e, 0, kmsg.ConfigResourceTypeTopic, "cfg", []string{"segment.bytes", "retention.ms"}, false, false)
	if len(r.Configs) != 2 {
		t.Fatalf("filtered: %d entries", len(r.Configs))
	}
	if c := configEntry(t, r, "segment.bytes"); !c.IsDefault || c.ConfigSynonyms != nil || c.Documentation != nil {
		t.Fatalf("v0 segment.bytes %+v", c)
	}
	if c := configEntry(t, r, "retention.ms"); c.IsDefault {
		t.Fatalf("v0 retention.ms is an override: %+v", c)
	}

	if r := describeConfigs(t, e, 4, kmsg.ConfigResourceTypeTopic, "missing", nil, false, false); r.ErrorCode != kerr.UnknownTopicOrPartition.Code || r.ErrorMessage == nil {
		t.Fatalf("unknown topic: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := describeConfigs(t, e, 4, kmsg.ConfigResourceTypeTopic, "bad/name", nil, false, false); r.ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("invalid topic name: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

func TestDescribeConfigsBroker(t *testing.T) {
	e := newEnv(t, map[string]string{"log.retention.hours": "100", "ssl.keystore.password": "secret"})
	r := describeConfigs(t, e, 4, kmsg.ConfigResourceTypeBroker, "1", nil, true, false)
	if r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	if c := configEntry(t, r, "log.retention.hours"); deref(c.Value) != "100" || c.Source != kmsg.ConfigSourceStaticBrokerConfig {
		t.Fatalf("log.retention.hours %+v", c)
	}
	pw := configEntry(t, r, "ssl.keystore.password")
	if pw.Value != nil || !pw.IsSensitive {
		t.Fatalf("sensitive value returned: %+v", pw)
	}
	for _, s := range pw.ConfigSynonyms {
		if s.Value != nil {
			t.Fatalf("sensitive synonym value returned: %+v", s)
		}
	}

	// A dynamic cluster default shows under the empty name and in the
	// broker's own view.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "log.retention.ms", kmsg.StringPtr("5000")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	if r := e.call(req).(*kmsg.IncrementalAlterConfigsResponse); r.Resources[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.Resources[0].ErrorCode))
	}
	r = describeConfigs(t, e, 4, kmsg.ConfigResourceTypeBroker, "", nil, true, false)
	if len(r.Configs) != 1 || r.Configs[0].Name != "log.retention.ms" || deref(r.Configs[0].Value) != "5000" ||
		r.Configs[0].Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("cluster defaults %+v", r.Configs)
	}
	r = describeConfigs(t, e, 4, kmsg.ConfigResourceTypeBroker, "1", []string{"log.retention.ms"}, true, false)
	if c := configEntry(t, r, "log.retention.ms"); deref(c.Value) != "5000" || c.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Fatalf("broker view of the dynamic default %+v", c)
	}
	// The new default reaches topics without an override.
	e.createTopic("after", 1, nil)
	if lc := e.partition("after", 0).Log().Config(); lc.RetentionMs != 5000 {
		t.Fatalf("retention.ms of a new topic %d", lc.RetentionMs)
	}

	if r := describeConfigs(t, e, 4, kmsg.ConfigResourceTypeBroker, "7", nil, false, false); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("another broker: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := describeConfigs(t, e, 4, kmsg.ConfigResourceType(99), "x", nil, false, false); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown resource type: %v", kerr.ErrorForCode(r.ErrorCode))
	}
}

// A config changed through a broker reads back from it at once, though the
// image reaches the broker's publishers after the metadata source applied
// it: the forwarded change answers only once the broker's image caught up.
func TestAlterConfigsReadYourWrites(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("ryw", 1, map[string]string{"retention.ms": "1000"})
	e.meta.lagPublications(t, 100*time.Millisecond)

	for i, v := range []string{"2000", "3000"} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "ryw"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", kmsg.StringPtr(v)
		res.Configs = append(res.Configs, c)
		req.Resources = append(req.Resources, res)
		if r := e.call(req).(*kmsg.IncrementalAlterConfigsResponse); r.Resources[0].ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.Resources[0].ErrorCode))
		}
		r := describeConfigs(t, e, 4, kmsg.ConfigResourceTypeTopic, "ryw", []string{"retention.ms"}, false, false)
		if got := deref(configEntry(t, r, "retention.ms").Value); got != v {
			t.Fatalf("alter %d: retention.ms read back %s, want %s", i, got, v)
		}
	}
}
