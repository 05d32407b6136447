package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func find(rs []ResolvedConfig, name string) ResolvedConfig {
	for _, r := range rs {
		if r.Name == name {
			return r
		}
	}
	return ResolvedConfig{Name: "<missing " + name + ">"}
}

func synText(ss []Synonym) string {
	var parts []string
	for _, s := range ss {
		v := "<nil>"
		if s.Value != nil {
			v = *s.Value
		}
		parts = append(parts, fmt.Sprintf("%s=%s@%s", s.Name, v, s.Source))
	}
	return strings.Join(parts, " ")
}

func val(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestResolveTopicSynonyms(t *testing.T) {
	c := mustLoad(t, writeFile(t, "log.retention.minutes=30\nlog.roll.ms=1000\nlog.cleanup.policy=compact\nmessage.max.bytes=2000"), nil, nil)
	rs := c.ResolveTopic(map[string]string{"segment.bytes": "1048576", "mirror.name": "east"})
	cases := []struct {
		name, value string
		source      ConfigSource
		synonyms    string
	}{
		// The minutes setting wins over the hours default; both are
		// listed, the static one first.
		{"retention.ms", "1800000", SourceStaticBroker, "log.retention.minutes=30@STATIC_BROKER_CONFIG log.retention.hours=168@DEFAULT_CONFIG"},
		{"segment.ms", "1000", SourceStaticBroker, "log.roll.ms=1000@STATIC_BROKER_CONFIG log.roll.hours=168@DEFAULT_CONFIG"},
		// A topic override comes first, then the broker layers.
		{"segment.bytes", "1048576", SourceDynamicTopic, "segment.bytes=1048576@DYNAMIC_TOPIC_CONFIG log.segment.bytes=1073741824@DEFAULT_CONFIG"},
		{"cleanup.policy", "compact", SourceStaticBroker, "log.cleanup.policy=compact@STATIC_BROKER_CONFIG log.cleanup.policy=delete@DEFAULT_CONFIG"},
		{"max.message.bytes", "2000", SourceStaticBroker, "message.max.bytes=2000@STATIC_BROKER_CONFIG message.max.bytes=1048588@DEFAULT_CONFIG"},
		{"flush.ms", "9223372036854775807", SourceDefault, "log.flush.scheduler.interval.ms=9223372036854775807@DEFAULT_CONFIG"},
		{"segment.jitter.ms", "0", SourceDefault, "log.roll.jitter.hours=0@DEFAULT_CONFIG"},
		// No broker synonym at all.
		{"leader.replication.throttled.replicas", "", SourceDefault, ""},
		{"mirror.name", "east", SourceDynamicTopic, "mirror.name=east@DYNAMIC_TOPIC_CONFIG"},
	}
	for _, want := range cases {
		r := find(rs, want.name)
		if val(r.Value) != want.value || r.Source != want.source || synText(r.Synonyms) != want.synonyms {
			t.Errorf("%s:\n got %s @%v [%s]\nwant %s @%v [%s]", want.name, val(r.Value), r.Source, synText(r.Synonyms), want.value, want.source, want.synonyms)
		}
	}
	if !find(rs, "mirror.name").ReadOnly || find(rs, "retention.ms").ReadOnly {
		t.Error("read-only flags")
	}
	if len(rs) != len(topicIndex) {
		t.Errorf("%d entries, %d topic configs", len(rs), len(topicIndex))
	}
}

func TestResolveTopicRetentionUnits(t *testing.T) {
	for props, want := range map[string]string{
		"log.retention.hours=2":                               "7200000",
		"log.retention.hours=2\nlog.retention.minutes=5":      "300000",
		"log.retention.minutes=5\nlog.retention.ms=1234":      "1234",
		"log.retention.hours=-1":                              "-1",
		"log.retention.ms=-1":                                 "-1",
		"log.roll.hours=1\nlog.roll.jitter.hours=1":           "3600000",
		"log.flush.scheduler.interval.ms=5\nnum.io.threads=8": "9223372036854775807",
	} {
		c := mustLoad(t, writeFile(t, props), nil, nil)
		name := "retention.ms"
		if strings.Contains(props, "roll") {
			name = "segment.ms"
		}
		if strings.Contains(props, "flush") {
			name = "flush.messages"
		}
		if got := val(find(c.ResolveTopic(nil), name).Value); got != want {
			t.Errorf("%q: %s = %s, want %s", props, name, got, want)
		}
	}
	c := mustLoad(t, writeFile(t, "log.flush.scheduler.interval.ms=5"), nil, nil)
	if got := val(find(c.ResolveTopic(nil), "flush.ms").Value); got != "5" {
		t.Errorf("flush.ms from the scheduler interval = %s", got)
	}
}

func TestResolveTopicDynamicLayers(t *testing.T) {
	base := mustLoad(t, writeFile(t, "log.retention.ms=1000"), nil, nil)
	c, err := base.WithDynamic(map[string]string{"log.retention.ms": "2000"}, map[string]string{"log.retention.hours": "5"})
	if err != nil {
		t.Fatal(err)
	}
	r := find(c.ResolveTopic(nil), "retention.ms")
	want := "log.retention.hours=5@DYNAMIC_BROKER_CONFIG log.retention.ms=2000@DYNAMIC_DEFAULT_BROKER_CONFIG log.retention.ms=1000@STATIC_BROKER_CONFIG log.retention.hours=168@DEFAULT_CONFIG"
	if got := synText(r.Synonyms); got != want {
		t.Errorf("synonyms\n got %s\nwant %s", got, want)
	}
	if val(r.Value) != "18000000" || r.Source != SourceDynamicBroker {
		t.Errorf("value %s source %v", val(r.Value), r.Source)
	}
	tc, err := c.Topic(nil)
	if err != nil || tc.RetentionMs != 18000000 {
		t.Errorf("Topic().RetentionMs = %d %v", tc.RetentionMs, err)
	}
	// The base Config is unchanged.
	if tc, _ := base.Topic(nil); tc.RetentionMs != 1000 {
		t.Errorf("base changed: %d", tc.RetentionMs)
	}
}

func TestResolveBroker(t *testing.T) {
	c := mustLoad(t, writeFile(t, strings.Join([]string{
		"log.retention.ms=1000",
		"ssl.keystore.password=topsecret",
		"listener.name.plaintext.ssl.key.password=alsosecret",
		"num.io.threads=4",
	}, "\n")), nil, nil)
	rs := c.ResolveBroker(map[string]string{"num.io.threads": "6"})
	r := find(rs, "log.retention.ms")
	if val(r.Value) != "1000" || r.Source != SourceStaticBroker || synText(r.Synonyms) != "log.retention.ms=1000@STATIC_BROKER_CONFIG log.retention.hours=168@DEFAULT_CONFIG" {
		t.Errorf("log.retention.ms: %s %v [%s]", val(r.Value), r.Source, synText(r.Synonyms))
	}
	// Unset with no default: null, DEFAULT, and Kafka drops the synonyms
	// that belong to coarser configs.
	r = find(rs, "log.retention.minutes")
	if r.Value != nil || r.Source != SourceDefault || len(r.Synonyms) != 0 {
		t.Errorf("log.retention.minutes: %s %v [%s]", val(r.Value), r.Source, synText(r.Synonyms))
	}
	r = find(rs, "log.retention.hours")
	if val(r.Value) != "168" || r.Source != SourceDefault || synText(r.Synonyms) != "log.retention.hours=168@DEFAULT_CONFIG" {
		t.Errorf("log.retention.hours: %s %v [%s]", val(r.Value), r.Source, synText(r.Synonyms))
	}
	r = find(rs, "num.io.threads")
	if val(r.Value) != "6" || r.Source != SourceDynamicBroker || synText(r.Synonyms) != "num.io.threads=6@DYNAMIC_BROKER_CONFIG num.io.threads=4@STATIC_BROKER_CONFIG num.io.threads=8@DEFAULT_CONFIG" {
		t.Errorf("num.io.threads: %s %v [%s]", val(r.Value), r.Source, synText(r.Synonyms))
	}
	for _, name := range []string{"ssl.keystore.password", "listener.name.plaintext.ssl.key.password"} {
		r = find(rs, name)
		if !r.Sensitive || r.Value != nil || r.Source != SourceStaticBroker {
			t.Errorf("%s: sensitive %v value %s source %v", name, r.Sensitive, val(r.Value), r.Source)
		}
		for _, s := range r.Synonyms {
			if s.Value != nil {
				t.Errorf("%s: synonym %s leaks its value", name, s.Name)
			}
		}
	}
	if !find(rs, "node.id").ReadOnly || find(rs, "message.max.bytes").ReadOnly {
		t.Error("read-only flags")
	}
	if find(rs, "node.id").Type != TypeInt || find(rs, "node.id").Doc == "" {
		t.Error("type and doc")
	}
}

func TestValidateTopicConfigs(t *testing.T) {
	ok := map[string]string{"retention.ms": "-1", "cleanup.policy": "compact,delete", "segment.bytes": "1048576", "min.cleanable.dirty.ratio": "0.1"}
	if err := ValidateTopicConfigs(ok); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		cfgs map[string]string
		want string
	}{
		"unknown":        {map[string]string{"retention.ms": "1", "retention.msx": "1"}, "retention.msx: unknown topic config"},
		"bad value":      {map[string]string{"segment.bytes": "13"}, "segment.bytes: 13 is below the minimum 14"},
		"not a number":   {map[string]string{"retention.ms": "1d"}, `retention.ms: "1d" is not an integer (long)`},
		"bad enum":       {map[string]string{"cleanup.policy": "delete,archive"}, `cleanup.policy: "archive" is not one of [delete, compact]`},
		"internal":       {map[string]string{"mirror.name": "east"}, "mirror.name: is set only by kmirror's mirror APIs"},
		"lag conflict":   {map[string]string{"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}, "min.compaction.lag.ms: is above max.compaction.lag.ms"},
		"throttle":       {map[string]string{"leader.replication.throttled.replicas": "0:1,x"}, `leader.replication.throttled.replicas: "x" is not partition:broker`},
		"retention < -1": {map[string]string{"retention.ms": "-2"}, "retention.ms: -2 is below the minimum -1"},
	}
	for name, c := range cases {
		err := ValidateTopicConfigs(c.cfgs)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: err = %v, want %q", name, err, c.want)
		}
		if !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("%s: not INVALID_CONFIG", name)
		}
	}
	if err := ValidateInternalTopicConfigs(map[string]string{"mirror.name": "east.paused"}); err != nil {
		t.Errorf("internal write refused: %v", err)
	}
	if err := ValidateTopicConfigs(map[string]string{"leader.replication.throttled.replicas": "*"}); err != nil {
		t.Errorf("* refused: %v", err)
	}
}

func TestTopicConfig(t *testing.T) {
	c := mustLoad(t, writeFile(t, "log.segment.bytes=2000000\nmin.insync.replicas=2"), nil, nil)
	tc, err := c.Topic(map[string]string{"cleanup.policy": "compact", "retention.bytes": "100", "mirror.name": "east"})
	if err != nil {
		t.Fatal(err)
	}
	if !tc.Compact() || tc.Delete() || tc.RetentionBytes != 100 || tc.SegmentBytes != 2000000 || tc.MinInsyncReplicas != 2 ||
		tc.MirrorName != "east" || tc.MaxMessageBytes != 1048588 || tc.MessageTimestampType != "CreateTime" ||
		tc.RetentionMs != 604800000 || tc.MinCleanableDirtyRatio != 0.5 || tc.CompressionType != "producer" {
		t.Errorf("%+v", tc)
	}
	if _, err := c.Topic(map[string]string{"segment.bytes": "1"}); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("invalid override: %v", err)
	}
}

func TestWithDynamicAndValidateBrokerConfigs(t *testing.T) {
	c := mustLoad(t, "", nil, nil)
	d, err := c.WithDynamic(map[string]string{"message.max.bytes": "5000"}, map[string]string{"ssl.client.auth": "required"})
	if err != nil {
		t.Fatal(err)
	}
	if d.MessageMaxBytes != 5000 || c.MessageMaxBytes != 1048588 {
		t.Errorf("dynamic %d, base %d", d.MessageMaxBytes, c.MessageMaxBytes)
	}
	if d.Source("message.max.bytes") != SourceDynamicDefaultBroker || d.Source("ssl.client.auth") != SourceDynamicBroker {
		t.Errorf("sources %v %v", d.Source("message.max.bytes"), d.Source("ssl.client.auth"))
	}
	if d.OffsetsTopicReplicationFactor != 1 {
		t.Error("single-node profile lost by WithDynamic")
	}
	for name, c2 := range map[string]struct {
		cfgs      map[string]string
		perBroker bool
		want      string
	}{
		"read-only":                 {map[string]string{"node.id": "2"}, true, "node.id: cannot be updated dynamically"},
		"per-broker only":           {map[string]string{"listeners": "PLAINTEXT://:1"}, false, "listeners: can be updated only per broker"},
		"unknown":                   {map[string]string{"nope": "1"}, true, "nope: unknown broker config"},
		"invalid":                   {map[string]string{"message.max.bytes": "-1"}, false, "message.max.bytes: -1 is below the minimum 0"},
		"listener override invalid": {map[string]string{"listener.name.plaintext.ssl.client.auth": "nope"}, true, `listener.name.plaintext.ssl.client.auth: "nope" is not one of`},
	} {
		err := ValidateBrokerConfigs(c2.cfgs, c2.perBroker)
		if err == nil || !strings.HasPrefix(err.Error(), c2.want) || !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("%s: err = %v, want prefix %q", name, err, c2.want)
		}
	}
	if _, err := c.WithDynamic(nil, map[string]string{"replica.fetch.wait.max.ms": "1"}); err == nil {
		t.Error("read-only config accepted dynamically")
	}
}
