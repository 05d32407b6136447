package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustLoad(t *testing.T, file string, env []string, overrides map[string]string) *Config {
	t.Helper()
	c, warnings, err := Load(file, env, overrides)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Fatalf("unexpected warnings: %v", warnings)
	}
	return c
}

func TestDefaultsWithNoFile(t *testing.T) {
	c := mustLoad(t, "", nil, nil)
	if c.NodeID != 1 || !reflect.DeepEqual(c.ProcessRoles, []string{"broker", "controller"}) {
		t.Errorf("node %d roles %v", c.NodeID, c.ProcessRoles)
	}
	wantL := []Listener{
		{Name: "PLAINTEXT", Host: "localhost", Port: 9092, SecurityProtocol: "PLAINTEXT"},
		{Name: "CONTROLLER", Host: "localhost", Port: 9093, SecurityProtocol: "PLAINTEXT"},
	}
	if !reflect.DeepEqual(c.Listeners, wantL) {
		t.Errorf("listeners %+v", c.Listeners)
	}
	if !reflect.DeepEqual(c.AdvertisedListeners, wantL[:1]) {
		t.Errorf("advertised %+v", c.AdvertisedListeners)
	}
	if !reflect.DeepEqual(c.ControllerListenerNames, []string{"CONTROLLER"}) || c.InterBrokerListenerName != "PLAINTEXT" {
		t.Errorf("controller listeners %v inter-broker %q", c.ControllerListenerNames, c.InterBrokerListenerName)
	}
	if !reflect.DeepEqual(c.QuorumVoters, []Voter{{ID: 1, Host: "localhost", Port: 9093}}) {
		t.Errorf("voters %+v", c.QuorumVoters)
	}
	if !reflect.DeepEqual(c.LogDirs, []string{"./data"}) || c.MetadataLogDir != "./data" {
		t.Errorf("dirs %v %q", c.LogDirs, c.MetadataLogDir)
	}
	// Kafka defaults elsewhere.
	if c.NumPartitions != 1 || c.DefaultReplicationFactor != 1 || c.MessageMaxBytes != 1048588 ||
		c.SocketRequestMaxBytes != 104857600 || c.OffsetsTopicNumPartitions != 50 || c.FetchMaxBytes != 57671680 ||
		!c.AutoCreateTopicsEnable || c.MinInsyncReplicas != 1 || c.ReplicaLagTimeMaxMs != 30000 {
		t.Errorf("Kafka defaults: %+v", c)
	}
	// kmirror's settings.
	if c.MetricsListener != "localhost:9644" || c.MirrorStateTopicNumPartitions != 50 || c.MirrorMetadataRefreshIntervalMs != 30000 ||
		c.MirrorSupportUncleanLeaderElection || c.MirrorReplicationThrottledRate != -1 {
		t.Errorf("mirror defaults: %+v", c)
	}
	// Without a file, internal topics get one replica (a single node).
	if c.OffsetsTopicReplicationFactor != 1 || c.TransactionStateLogReplicationFactor != 1 ||
		c.TransactionStateLogMinISR != 1 || c.MirrorStateTopicReplicationFactor != 1 {
		t.Errorf("single-node profile not applied: %d %d %d %d", c.OffsetsTopicReplicationFactor,
			c.TransactionStateLogReplicationFactor, c.TransactionStateLogMinISR, c.MirrorStateTopicReplicationFactor)
	}
	for _, n := range []string{"node.id", "listeners", "offsets.topic.replication.factor", "retention.ms"} {
		if s := c.Source(n); s != SourceDefault {
			t.Errorf("Source(%s) = %v", n, s)
		}
	}
	if v, ok := c.Get("retention.ms"); !ok || v.Long() != 7*24*3600*1000 {
		t.Errorf("retention.ms default = %v", v)
	}
	if v, ok := c.Get("log.retention.ms"); !ok || !v.IsNull() {
		t.Errorf("log.retention.ms = %v, want null", v)
	}
	if _, ok := c.Get("no.such.config"); ok {
		t.Error("Get of an unknown name succeeded")
	}
}

func TestWithFileKafkaDefaultsApply(t *testing.T) {
	c := mustLoad(t, writeFile(t, "num.partitions=3\n"), nil, nil)
	if c.OffsetsTopicReplicationFactor != 3 || c.TransactionStateLogMinISR != 2 {
		t.Errorf("with a file Kafka's defaults apply: %d %d", c.OffsetsTopicReplicationFactor, c.TransactionStateLogMinISR)
	}
}

func TestPrecedenceFileEnvOverrides(t *testing.T) {
	file := writeFile(t, strings.Join([]string{
		"num.partitions=2",
		"message.max.bytes=100",
		"log.retention.hours=1",
		"log.cleaner.threads=4",
	}, "\n"))
	env := []string{
		"KMIRROR_NUM_PARTITIONS=3",
		"KMIRROR_MESSAGE_MAX_BYTES=200",
		"KMIRROR_LOG_CLEANER_THREADS=5",
		"PATH=/usr/bin",        // not ours
		"KMIRROR_BROKER_RACK=", // an empty value is a value
	}
	over := map[string]string{"num.partitions": "4"}
	c := mustLoad(t, file, env, over)
	if c.NumPartitions != 4 || c.MessageMaxBytes != 200 || c.LogCleanerThreads != 5 {
		t.Errorf("num.partitions %d message.max.bytes %d cleaner threads %d", c.NumPartitions, c.MessageMaxBytes, c.LogCleanerThreads)
	}
	if v, _ := c.Get("log.retention.hours"); v.Int() != 1 {
		t.Errorf("log.retention.hours = %v", v)
	}
	if v, _ := c.Get("retention.ms"); v.Long() != 3600000 {
		t.Errorf("retention.ms from log.retention.hours=1: %v", v)
	}
	for name, want := range map[string]string{
		"num.partitions":      "override",
		"message.max.bytes":   "environment KMIRROR_MESSAGE_MAX_BYTES",
		"log.retention.hours": "file " + file + ":3",
		"broker.rack":         "environment KMIRROR_BROKER_RACK",
		"node.id":             "",
	} {
		if got := c.Origin(name); got != want {
			t.Errorf("Origin(%s) = %q, want %q", name, got, want)
		}
	}
	if c.Source("num.partitions") != SourceStaticBroker || c.Source("node.id") != SourceDefault {
		t.Errorf("sources %v %v", c.Source("num.partitions"), c.Source("node.id"))
	}
}

func TestEnvNames(t *testing.T) {
	cases := map[string]string{
		"KMIRROR_NODE_ID": "node.id",
		"KMIRROR_LISTENER_NAME_SASL__SSL_SSL_KEYSTORE_LOCATION": "listener.name.sasl_ssl.ssl.keystore.location",
		"KMIRROR_LOG_DIRS": "log.dirs",
	}
	for env, name := range cases {
		if got, ok := ConfigNameFromEnv(env); !ok || got != name {
			t.Errorf("ConfigNameFromEnv(%s) = %q", env, got)
		}
		if got := EnvName(name); got != env {
			t.Errorf("EnvName(%s) = %q", name, got)
		}
	}
	for _, bad := range []string{"NODE_ID", "KMIRROR_", "kmirror_node_id"} {
		if _, ok := ConfigNameFromEnv(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestInvalidValuesNameTheKey(t *testing.T) {
	cases := []struct {
		key, value, want string
	}{
		{"log.segment.bytes", "12", "log.segment.bytes: 12 is below the minimum 14"},
		{"num.partitions", "abc", `num.partitions: "abc" is not an integer (int)`},
		{"num.partitions", "0", "num.partitions: 0 is below the minimum 1"},
		{"node.id", "99999999999", "node.id: 99999999999 is out of range for the type int"},
		{"auto.create.topics.enable", "yes", `auto.create.topics.enable: "yes" is not a boolean (true or false)`},
		{"compression.type", "brotli", `compression.type: "brotli" is not one of [uncompressed, zstd, lz4, snappy, gzip, producer]`},
		{"log.cleaner.min.cleanable.ratio", "1.5", "log.cleaner.min.cleanable.ratio: 1.5 is above the maximum 1.0"},
		{"process.roles", "broker,router", `process.roles: "router" is not one of [broker, controller]`},
		{"process.roles", "", "process.roles: an empty list is not allowed; use some of [broker, controller]"},
		{"listeners", "PLAINTEXT://localhost:x", `listeners: "localhost:x" has an invalid port "x"`},
		{"listeners", "A://:9092,B://:9092", "listeners: listeners A and B use the same port 9092"},
		{"controller.quorum.voters", "1@host", `controller.quorum.voters: "host" is not host:port`},
		{"listener.security.protocol.map", "PLAINTEXT:TLS", `listener.security.protocol.map: "PLAINTEXT:TLS": unknown security protocol "TLS" (use one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)`},
		{"mirror.replication.throttled.rate", "-2", "mirror.replication.throttled.rate: -2 is below the minimum -1"},
	}
	for _, c := range cases {
		_, _, err := Load(writeFile(t, c.key+"="+c.value), nil, nil)
		if err == nil {
			t.Errorf("%s=%s accepted", c.key, c.value)
			continue
		}
		if err.Error() != c.want {
			t.Errorf("%s=%s:\n got %q\nwant %q", c.key, c.value, err, c.want)
		}
		var ve *ValueError
		if !errors.As(err, &ve) || ve.Name != c.key || !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("%s: error %T does not carry the key and INVALID_CONFIG", c.key, err)
		}
	}
}

func TestInvalidValuesAllReportedWithOrigin(t *testing.T) {
	_, _, err := Load(writeFile(t, "num.partitions=0\nlog.segment.bytes=1"), []string{"KMIRROR_MESSAGE_MAX_BYTES=-5"}, map[string]string{"num.io.threads": "0"})
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		"num.partitions: 0 is below the minimum 1",
		"log.segment.bytes: 1 is below the minimum 14",
		"message.max.bytes: -5 is below the minimum 0 (set by environment KMIRROR_MESSAGE_MAX_BYTES)",
		"num.io.threads: 0 is below the minimum 1 (set by override)",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
}

func TestUnknownKeysWarn(t *testing.T) {
	c, warnings, err := Load(writeFile(t, "node.id=1\nfoo.bar=1\nretention.ms=5\nlistener.name.plaintext.no.such=1"), []string{"KMIRROR_SOME_THING=1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 4 {
		t.Fatalf("warnings %v", warnings)
	}
	joined := strings.Join(warnings, "\n")
	for _, want := range []string{
		`unknown config "foo.bar" (file `,
		`unknown config "retention.ms" (file `, "the broker-wide default is log.retention.ms",
		`unknown config "some.thing" (environment KMIRROR_SOME_THING) ignored`,
		`unknown config "listener.name.plaintext.no.such"`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("missing %q in %s", want, joined)
		}
	}
	if _, ok := c.Get("foo.bar"); ok {
		t.Error("unknown key kept")
	}
}

func TestMissingFile(t *testing.T) {
	if _, _, err := Load(filepath.Join(t.TempDir(), "nope.properties"), nil, nil); err == nil || !strings.Contains(err.Error(), "nope.properties") {
		t.Fatalf("err = %v", err)
	}
}

func TestCrossConfigRules(t *testing.T) {
	cases := []struct {
		name  string
		props string
		want  string
	}{
		{"broker-only node on a controller listener", "process.roles=broker", "listeners: a broker-only node must not listen on controller listener CONTROLLER"},
		{"controller not a voter", "node.id=2", "controller.quorum.voters: node.id 2 has the controller role but is not a voter"},
		{"no voters", "controller.quorum.voters=", "controller.quorum.voters: must list the quorum's voters"},
		{"advertise 0.0.0.0", "advertised.listeners=PLAINTEXT://0.0.0.0:9092", `advertised.listeners: PLAINTEXT cannot advertise the non-routable address "0.0.0.0"`},
		{"derived advertise of 0.0.0.0", "listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://:9093", `advertised.listeners: listener PLAINTEXT binds "0.0.0.0", which cannot be advertised`},
		{"advertised name not listening", "advertised.listeners=EXTERNAL://h:1", "advertised.listeners: EXTERNAL is not in listeners"},
		{"listener without protocol", "listeners=PLAINTEXT://:9092,CONTROLLER://:9093,INTERNAL://:9094", "listener.security.protocol.map: no security protocol for listener INTERNAL"},
		{"custom map must name the controller", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT", "listener.security.protocol.map: no security protocol for listener CONTROLLER"},
		{"inter-broker listener missing", "inter.broker.listener.name=INTERNAL", "inter.broker.listener.name: no advertised listener named INTERNAL"},
		{"both inter-broker settings", "inter.broker.listener.name=PLAINTEXT\nsecurity.inter.broker.protocol=PLAINTEXT", "inter.broker.listener.name: set either it or security.inter.broker.protocol, not both"},
		{"controller listener not bound", "controller.listener.names=CTL", "controller.listener.names: listener CTL is not in listeners"},
		{"fetch wait above socket timeout", "replica.fetch.wait.max.ms=40000", "replica.fetch.wait.max.ms: 40000 is above replica.socket.timeout.ms 30000"},
		{"empty log dirs", "log.dirs= , ", "log.dirs: at least one data directory is required"},
	}
	for _, c := range cases {
		_, _, err := Load(writeFile(t, c.props), nil, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v\nwant %q", c.name, err, c.want)
		}
		if err != nil && !errors.Is(err, kerr.InvalidConfig) {
			t.Errorf("%s: not INVALID_CONFIG", c.name)
		}
	}
}

func TestListenerConfigurations(t *testing.T) {
	// A test cluster on ephemeral ports: advertised listeners follow.
	c := mustLoad(t, "", nil, map[string]string{
		"listeners":                "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters": "1@127.0.0.1:0",
	})
	if !reflect.DeepEqual(c.AdvertisedListeners, []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 0, SecurityProtocol: "PLAINTEXT"}}) {
		t.Errorf("advertised %+v", c.AdvertisedListeners)
	}
	// A broker-only node with its own protocol map and an IPv6 listener.
	c = mustLoad(t, writeFile(t, strings.Join([]string{
		"process.roles=broker",
		"node.id=7",
		"listeners=INTERNAL://[::1]:9092,external://0.0.0.0:19092",
		"advertised.listeners=INTERNAL://[::1]:9092,EXTERNAL://kafka.example.com:19092",
		"listener.security.protocol.map=INTERNAL:SASL_PLAINTEXT,EXTERNAL:SASL_SSL,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name=internal",
		"controller.quorum.voters=1@c1:9093,2@c2:9093,3@c3:9093",
		"log.dirs=/d1, /d2",
		"metadata.log.dir=/meta",
	}, "\n")), nil, nil)
	if c.InterBrokerListenerName != "INTERNAL" || c.Listeners[0].Host != "::1" || c.Listeners[1].SecurityProtocol != "SASL_SSL" {
		t.Errorf("listeners %+v inter-broker %q", c.Listeners, c.InterBrokerListenerName)
	}
	if c.AdvertisedListeners[1].String() != "EXTERNAL://kafka.example.com:19092" || c.AdvertisedListeners[0].Address() != "[::1]:9092" {
		t.Errorf("advertised %v", c.AdvertisedListeners)
	}
	if len(c.QuorumVoters) != 3 || c.QuorumVoters[2].String() != "3@c3:9093" {
		t.Errorf("voters %v", c.QuorumVoters)
	}
	if !reflect.DeepEqual(c.LogDirs, []string{"/d1", "/d2"}) || c.MetadataLogDir != "/meta" {
		t.Errorf("dirs %v %s", c.LogDirs, c.MetadataLogDir)
	}
}

func TestListenerOverrides(t *testing.T) {
	c := mustLoad(t, writeFile(t, strings.Join([]string{
		"ssl.client.auth=none",
		"listener.name.plaintext.ssl.client.auth=required",
		"listener.name.plaintext.plain.sasl.jaas.config=secret stuff",
	}, "\n")), nil, nil)
	if v, _ := c.ListenerValue("PLAINTEXT", "ssl.client.auth"); v.Str() != "required" {
		t.Errorf("override = %v", v)
	}
	if v, _ := c.ListenerValue("CONTROLLER", "ssl.client.auth"); v.Str() != "none" {
		t.Errorf("base = %v", v)
	}
	if v, ok := c.Get("listener.name.plaintext.plain.sasl.jaas.config"); !ok || v.Password() != "secret stuff" || v.String() != "[hidden]" {
		t.Errorf("jaas = %v %v", v, ok)
	}
	if l, d, ok := BaseName("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"); !ok || l != "SASL_SSL" || d.Name != "sasl.jaas.config" {
		t.Errorf("BaseName = %q %q %v", l, d.Name, ok)
	}
	// Overrides are validated with their base definition.
	_, _, err := Load(writeFile(t, "listener.name.plaintext.ssl.client.auth=maybe"), nil, nil)
	if err == nil || !strings.HasPrefix(err.Error(), `listener.name.plaintext.ssl.client.auth: "maybe" is not one of`) {
		t.Errorf("err = %v", err)
	}
}
