package server_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// describeTopic returns the topic's configs by name, as DescribeConfigs
// reports them with synonyms.
func describeTopic(t *testing.T, adm *kadm.Client, topic string) map[string]kadm.Config {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(testCtx(t, 30*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		t.Fatalf("describe %s: %v", topic, err)
	}
	out := map[string]kadm.Config{}
	for _, c := range rc.Configs {
		out[c.Key] = c
	}
	return out
}

// describeUntil describes the topic until done accepts its configs, or
// fails the test after a deadline.
func describeUntil(t *testing.T, adm *kadm.Client, topic string, done func(map[string]kadm.Config) bool) map[string]kadm.Config {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		cfgs := describeTopic(t, adm, topic)
		if done(cfgs) || time.Now().After(deadline) {
			return cfgs
		}
		time.Sleep(10 * time.Millisecond) // polling a remote view, not synchronising goroutines
	}
}

// synonyms renders a config's synonyms as name=value(source) in order.
func synonyms(c kadm.Config) string {
	var parts []string
	for _, s := range c.Synonyms {
		v := "null"
		if s.Value != nil {
			v = *s.Value
		}
		parts = append(parts, fmt.Sprintf("%s=%s(%s)", s.Key, v, s.Source))
	}
	return strings.Join(parts, " ")
}

// expectConfig checks a config's value, source and synonyms.
func expectConfig(t *testing.T, cfgs map[string]kadm.Config, name, value string, source kmsg.ConfigSource, syns string) {
	t.Helper()
	c, ok := cfgs[name]
	if !ok {
		t.Fatalf("%s is not described", name)
	}
	if c.MaybeValue() != value || c.Source != source {
		t.Errorf("%s = %q (%s), want %q (%s)", name, c.MaybeValue(), c.Source, value, source)
	}
	if got := synonyms(c); got != syns {
		t.Errorf("%s synonyms:\n got %s\nwant %s", name, got, syns)
	}
}

// TestConfigsRoundTrip: topic configs set with CreateTopics and changed
// with IncrementalAlterConfigs come back from DescribeConfigs with Kafka's
// sources and synonyms, over a broker whose static config sets a default.
func TestConfigsRoundTrip(t *testing.T) {
	c := testcluster.Start(t, testcluster.Config("log.retention.ms", "7200000"))
	adm := c.Admin(t)
	const topic = "configs"
	ctx := testCtx(t, time.Minute)

	// CreateTopics v7 reports the created topic's configs with sources.
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 2, 1
	for k, v := range map[string]string{"retention.ms": "12345", "cleanup.policy": "compact"} {
		rc := kmsg.NewCreateTopicsRequestTopicConfig()
		rc.Name, rc.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, rc)
	}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, c.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %+v", resp.Topics)
	}
	created := map[string]kmsg.CreateTopicsResponseTopicConfig{}
	for _, cfg := range resp.Topics[0].Configs {
		created[cfg.Name] = cfg
	}
	if rc := created["retention.ms"]; rc.Value == nil || *rc.Value != "12345" || rc.Source != int8(kmsg.ConfigSourceDynamicTopicConfig) {
		t.Errorf("CreateTopics response retention.ms: %+v", rc)
	}
	if rc := created["segment.bytes"]; rc.Value == nil || *rc.Value != "1073741824" || rc.Source != int8(kmsg.ConfigSourceDefaultConfig) {
		t.Errorf("CreateTopics response segment.bytes: %+v", rc)
	}

	cfgs := describeTopic(t, adm, topic)
	expectConfig(t, cfgs, "retention.ms", "12345", kmsg.ConfigSourceDynamicTopicConfig,
		"retention.ms=12345(DYNAMIC_TOPIC_CONFIG) log.retention.ms=7200000(STATIC_BROKER_CONFIG) log.retention.hours=168(DEFAULT_CONFIG)")
	expectConfig(t, cfgs, "cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig,
		"cleanup.policy=compact(DYNAMIC_TOPIC_CONFIG) log.cleanup.policy=delete(DEFAULT_CONFIG)")
	expectConfig(t, cfgs, "segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig,
		"log.segment.bytes=1073741824(DEFAULT_CONFIG)")

	// IncrementalAlterConfigs: set one, delete one; the deleted one falls
	// back to the broker's static value.
	alter, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "segment.bytes", Value: kmsg.StringPtr("1048576")},
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
	}, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range alter {
		if r.Err != nil {
			t.Fatalf("alter %s: %v (%s)", r.Name, r.Err, r.ErrMessage)
		}
	}
	// The broker answers DescribeConfigs from its metadata image, which
	// follows the controller's commit by a moment (as in Kafka).
	cfgs = describeUntil(t, adm, topic, func(cfgs map[string]kadm.Config) bool {
		seg, ret := cfgs["segment.bytes"], cfgs["retention.ms"]
		return seg.MaybeValue() == "1048576" && ret.MaybeValue() == "7200000"
	})
	expectConfig(t, cfgs, "segment.bytes", "1048576", kmsg.ConfigSourceDynamicTopicConfig,
		"segment.bytes=1048576(DYNAMIC_TOPIC_CONFIG) log.segment.bytes=1073741824(DEFAULT_CONFIG)")
	expectConfig(t, cfgs, "retention.ms", "7200000", kmsg.ConfigSourceStaticBrokerConfig,
		"log.retention.ms=7200000(STATIC_BROKER_CONFIG) log.retention.hours=168(DEFAULT_CONFIG)")
	expectConfig(t, cfgs, "cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig,
		"cleanup.policy=compact(DYNAMIC_TOPIC_CONFIG) log.cleanup.policy=delete(DEFAULT_CONFIG)")

	// The broker's own configs show the static value.
	brcs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rc := range brcs {
		for _, cfg := range rc.Configs {
			if cfg.Key == "log.retention.ms" {
				found = true
				if cfg.MaybeValue() != "7200000" || cfg.Source != kmsg.ConfigSourceStaticBrokerConfig {
					t.Errorf("broker log.retention.ms = %q (%s)", cfg.MaybeValue(), cfg.Source)
				}
			}
		}
	}
	if !found {
		t.Error("broker configs lack log.retention.ms")
	}

	// Invalid values are refused with INVALID_CONFIG and change nothing.
	alter, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "segment.bytes", Value: kmsg.StringPtr("12")}}, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(alter) != 1 || !errors.Is(alter[0].Err, kerr.InvalidConfig) {
		t.Fatalf("segment.bytes=12: %+v", alter)
	}
	if seg := describeTopic(t, adm, topic)["segment.bytes"]; seg.MaybeValue() != "1048576" {
		got := seg.MaybeValue()
		t.Fatalf("a refused alter changed segment.bytes to %s", got)
	}
}
