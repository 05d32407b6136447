package config

import (
	"math"
	"strings"
	"testing"
)

func TestEveryDefaultPassesItsValidator(t *testing.T) {
	for _, d := range Definitions() {
		if d.Default == nil {
			continue
		}
		v, err := d.Parse(*d.Default)
		if err != nil {
			t.Errorf("%s: default %q: %v", d.Name, *d.Default, err)
			continue
		}
		if v.IsNull() || v.Type() != d.Type {
			t.Errorf("%s: default parsed as %v of type %v", d.Name, v, v.Type())
		}
		// The canonical text of a default parses back to the same value.
		if d.Type != TypePassword {
			if again, err := d.Parse(v.String()); err != nil || again.String() != v.String() {
				t.Errorf("%s: canonical %q does not round-trip: %v", d.Name, v.String(), err)
			}
		}
	}
}

func TestDefinitionTableIsWellFormed(t *testing.T) {
	defs := Definitions()
	seen := map[string]bool{}
	for _, d := range defs {
		key := d.Scope.String() + "/" + d.Name
		if seen[key] {
			t.Errorf("duplicate %s", key)
		}
		seen[key] = true
		if len(d.Doc) < 20 {
			t.Errorf("%s: doc %q is too short to help anyone", d.Name, d.Doc)
		}
		if d.Type == TypePassword && !d.Sensitive {
			t.Errorf("%s: password not sensitive", d.Name)
		}
		if d.Kmirror && !strings.Contains(d.Doc, "kmirror") {
			t.Errorf("%s: kmirror-only config whose doc does not say so", d.Name)
		}
		if d.Scope == TopicScope && d.Update != ReadOnly {
			t.Errorf("%s: topic configs carry no broker update mode", d.Name)
		}
		for _, s := range d.Synonyms {
			bd, ok := BrokerDefinition(s)
			if !ok {
				t.Errorf("%s: synonym %s is not a broker config", d.Name, s)
				continue
			}
			if bd.Update == ReadOnly && s != "log.flush.scheduler.interval.ms" {
				t.Errorf("%s: synonym %s should be dynamically updatable cluster-wide like Kafka's log configs", d.Name, s)
			}
		}
	}
	// Sorted: broker configs then topic configs, by name.
	for i := 1; i < len(defs); i++ {
		a, b := defs[i-1], defs[i]
		if a.Scope == b.Scope && a.Name >= b.Name || a.Scope > b.Scope {
			t.Fatalf("not sorted at %s/%s", a.Name, b.Name)
		}
	}
}

// The brief's broker and topic keys are all defined.
func TestRequiredKeysDefined(t *testing.T) {
	broker := `node.id process.roles listeners advertised.listeners listener.security.protocol.map controller.listener.names
	inter.broker.listener.name controller.quorum.voters log.dirs log.dir metadata.log.dir num.partitions default.replication.factor
	auto.create.topics.enable delete.topic.enable log.segment.bytes log.roll.ms log.roll.hours log.roll.jitter.ms log.roll.jitter.hours
	log.retention.ms log.retention.minutes log.retention.hours log.retention.bytes log.index.size.max.bytes log.index.interval.bytes
	log.flush.interval.messages log.flush.interval.ms log.cleanup.policy log.cleaner.enable log.cleaner.threads
	log.cleaner.delete.retention.ms log.cleaner.min.compaction.lag.ms log.cleaner.max.compaction.lag.ms log.cleaner.min.cleanable.ratio
	log.preallocate log.message.timestamp.type log.message.timestamp.before.max.ms log.message.timestamp.after.max.ms
	log.segment.delete.delay.ms log.retention.check.interval.ms log.flush.scheduler.interval.ms log.flush.offset.checkpoint.interval.ms
	log.flush.start.offset.checkpoint.interval.ms num.recovery.threads.per.data.dir message.max.bytes socket.request.max.bytes
	socket.send.buffer.bytes socket.receive.buffer.bytes connections.max.idle.ms num.network.threads num.io.threads queued.max.requests
	min.insync.replicas unclean.leader.election.enable compression.type fetch.max.bytes max.incremental.fetch.session.cache.slots
	replica.lag.time.max.ms replica.fetch.max.bytes replica.fetch.wait.max.ms replica.fetch.min.bytes replica.fetch.response.max.bytes
	replica.fetch.backoff.ms replica.socket.timeout.ms num.replica.fetchers broker.rack broker.session.timeout.ms
	broker.heartbeat.interval.ms auto.leader.rebalance.enable leader.imbalance.check.interval.seconds
	leader.imbalance.per.broker.percentage controlled.shutdown.enable offsets.topic.num.partitions offsets.topic.replication.factor
	offsets.topic.segment.bytes offsets.retention.minutes offsets.retention.check.interval.ms offsets.commit.timeout.ms
	offsets.load.buffer.size group.initial.rebalance.delay.ms group.min.session.timeout.ms group.max.session.timeout.ms group.max.size
	transaction.state.log.num.partitions transaction.state.log.replication.factor transaction.state.log.min.isr
	transaction.state.log.segment.bytes transaction.max.timeout.ms transactional.id.expiration.ms
	transaction.abort.timed.out.transaction.cleanup.interval.ms transaction.remove.expired.transaction.cleanup.interval.ms
	producer.id.expiration.ms producer.id.expiration.check.interval.ms super.users allow.everyone.if.no.acl.found
	authorizer.class.name sasl.enabled.mechanisms sasl.mechanism.inter.broker.protocol ssl.keystore.location ssl.key.password
	ssl.keystore.type ssl.truststore.location ssl.truststore.type ssl.client.auth ssl.endpoint.identification.algorithm
	ssl.certificate.location ssl.key.location ssl.ca.location metrics.listener mirror.state.topic.num.partitions
	mirror.state.topic.replication.factor mirror.metadata.refresh.interval.ms mirror.support.unclean.leader.election
	mirror.replication.throttled.rate`
	topic := `cleanup.policy compression.type delete.retention.ms file.delete.delay.ms flush.messages flush.ms index.interval.bytes
	max.compaction.lag.ms max.message.bytes message.timestamp.type message.timestamp.before.max.ms message.timestamp.after.max.ms
	min.cleanable.dirty.ratio min.compaction.lag.ms min.insync.replicas preallocate retention.bytes retention.ms segment.bytes
	segment.index.bytes segment.jitter.ms segment.ms unclean.leader.election.enable leader.replication.throttled.replicas
	follower.replication.throttled.replicas mirror.name`
	for _, n := range strings.Fields(broker) {
		if _, ok := BrokerDefinition(n); !ok {
			t.Errorf("broker config %s missing", n)
		}
	}
	for _, n := range strings.Fields(topic) {
		if _, ok := TopicDefinition(n); !ok {
			t.Errorf("topic config %s missing", n)
		}
	}
	for name, want := range map[string]string{
		"offsets.topic.num.partitions": "50", "transaction.state.log.num.partitions": "50", "mirror.state.topic.num.partitions": "50",
		"mirror.state.topic.replication.factor": "3", "mirror.metadata.refresh.interval.ms": "30000",
		"mirror.support.unclean.leader.election": "false", "mirror.replication.throttled.rate": "-1",
		"metrics.listener": "localhost:9644", "log.dir": "./data",
	} {
		if d, _ := BrokerDefinition(name); d.Default == nil || *d.Default != want {
			t.Errorf("%s default = %v, want %s", name, d.Default, want)
		}
	}
	if d, _ := TopicDefinition("mirror.name"); !d.Internal || !d.Kmirror {
		t.Error("mirror.name must be internal and kmirror's")
	}
}

// A topic config's own default equals what its broker synonyms' defaults
// resolve to, so that a topic without overrides on a broker without
// settings gets the documented default.
func TestTopicDefaultsMatchBrokerSynonyms(t *testing.T) {
	c := &Config{}
	for _, d := range Definitions() {
		if d.Scope != TopicScope || len(d.Synonyms) == 0 {
			continue
		}
		v, src, syns := c.topicValue(topicDef(d.Name), nil)
		if v.String() != d.DefaultValue().String() {
			t.Errorf("%s: synonyms give %v, table default %v (synonyms %+v)", d.Name, v, d.DefaultValue(), syns)
		}
		if src != SourceDefault {
			t.Errorf("%s: source %v", d.Name, src)
		}
	}
}

func TestValueFormatting(t *testing.T) {
	cases := map[float64]string{0.5: "0.5", 1: "1.0", 0.9: "0.9", 0: "0.0", math.MaxFloat64: "1.7976931348623157E308", 1e-5: "1.0E-5", 12345678: "1.2345678E7"}
	for f, want := range cases {
		if got := javaDouble(f); got != want {
			t.Errorf("javaDouble(%v) = %q, want %q", f, got, want)
		}
	}
	v, _ := parseValue(TypeList, " delete , compact ")
	if v.String() != "delete,compact" || len(v.List()) != 2 {
		t.Errorf("list %q %v", v, v.List())
	}
	v, _ = parseValue(TypeList, "  ")
	if v.IsNull() || v.List() != nil || v.String() != "" {
		t.Errorf("empty list %q", v)
	}
	v, _ = parseValue(TypeBoolean, " TRUE ")
	if !v.Bool() || v.String() != "true" {
		t.Errorf("bool %q", v)
	}
	v, _ = parseValue(TypePassword, "hunter2")
	if v.String() != "[hidden]" || v.Text() != nil || v.Password() != "hunter2" || v.Str() != "" {
		t.Errorf("password leaks: %q %v %q", v.String(), v.Text(), v.Str())
	}
	if n := Null(TypeLong); !n.IsNull() || n.String() != "null" || n.Text() != nil {
		t.Error("null value")
	}
	if Type(5).String() != "long" || ReadOnly.String() != "read-only" || ClusterWide.String() != "cluster-wide" ||
		High.String() != "high" || SourceDynamicDefaultBroker.String() != "DYNAMIC_DEFAULT_BROKER_CONFIG" {
		t.Error("names")
	}
}

func TestValidatorDescriptions(t *testing.T) {
	d, _ := BrokerDefinition("log.segment.bytes")
	if d.ValidValues() != "[14,...]" {
		t.Errorf("%q", d.ValidValues())
	}
	d, _ = TopicDefinition("min.cleanable.dirty.ratio")
	if d.ValidValues() != "[0.0,...,1.0]" {
		t.Errorf("%q", d.ValidValues())
	}
	d, _ = TopicDefinition("cleanup.policy")
	if d.ValidValues() != "[delete, compact]" {
		t.Errorf("%q", d.ValidValues())
	}
}
