package mirrorconfig

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
)

func TestTableDefaultsValidateAndSecretsAreSensitive(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Definitions() {
		if seen[d.Name] {
			t.Errorf("%s defined twice", d.Name)
		}
		seen[d.Name] = true
		if d.Doc == "" {
			t.Errorf("%s has no doc", d.Name)
		}
		if d.Default != nil {
			if _, err := d.Parse(*d.Default); err != nil {
				t.Errorf("default of %s does not validate: %v", d.Name, err)
			}
		}
		if d.Type == config.TypePassword && !d.Sensitive {
			t.Errorf("%s is a password but not sensitive", d.Name)
		}
	}
	for _, secret := range []string{SASLPassword, SASLJAASConfig, SSLKeyPassword, SSLKeystorePassword, SSLTruststorePassword} {
		if !IsSensitive(secret) {
			t.Errorf("%s is not sensitive", secret)
		}
	}
	for _, plain := range []string{BootstrapServers, ClientID, SecurityProtocol, SASLUsername, SASLMechanism} {
		if IsSensitive(plain) {
			t.Errorf("%s is sensitive", plain)
		}
	}
	if !IsSensitive("sasl.pasword") {
		t.Error("an unknown (misspelt) name must count as sensitive")
	}
}

func TestParseErrors(t *testing.T) {
	const secret = "s3cr3t-planted"
	cases := []struct {
		name  string
		props map[string]string
		key   string // the property the message must name
	}{
		{"missing bootstrap", map[string]string{ClientID: "x"}, BootstrapServers},
		{"empty bootstrap", map[string]string{BootstrapServers: " "}, BootstrapServers},
		{"no port", map[string]string{BootstrapServers: "a:9092,b"}, BootstrapServers},
		{"bad port", map[string]string{BootstrapServers: "a:99999"}, BootstrapServers},
		{"unbracketed ipv6", map[string]string{BootstrapServers: "::1:9092"}, BootstrapServers},
		{"unknown key", map[string]string{BootstrapServers: "a:1", "sasl.pasword": secret}, "sasl.pasword"},
		{"prefixed key", map[string]string{BootstrapServers: "a:1", "source.client.id": "x"}, "did you mean client.id"},
		{"bad protocol", map[string]string{BootstrapServers: "a:1", SecurityProtocol: "TLS"}, SecurityProtocol},
		{"bad mechanism", map[string]string{BootstrapServers: "a:1", SASLMechanism: "GSSAPI"}, SASLMechanism},
		{"bad bool", map[string]string{BootstrapServers: "a:1", SyncGroupOffsetsEnabled: "yes"}, SyncGroupOffsetsEnabled},
		{"bad regex", map[string]string{BootstrapServers: "a:1", Groups: "a(("}, Groups},
		{"idle too long", map[string]string{BootstrapServers: "a:1", ConnectionsMaxIdleMs: "3600000"}, ConnectionsMaxIdleMs},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.props)
			if !errors.Is(err, kerr.InvalidConfig) {
				t.Fatalf("Parse(%v) = %v, want INVALID_CONFIG", c.props, err)
			}
			if !strings.Contains(err.Error(), c.key) {
				t.Errorf("error %q does not name %q", err, c.key)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q quotes a value that may be a secret", err)
			}
		})
	}
}

func TestParseDefaultsAndValues(t *testing.T) {
	c, err := Parse(map[string]string{
		BootstrapServers: " a:9092 , [::1]:9093 ", SecurityProtocol: "plaintext",
		Groups: "app-.*,billing", GroupsExclude: "app-test", SyncTopicACLsEnabled: "false",
		SASLPassword: "pw",
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.BootstrapServers, " "); got != "a:9092 [::1]:9093" {
		t.Errorf("bootstrap = %q", got)
	}
	if c.SecurityProtocol != "PLAINTEXT" || c.ClientID != defaultClientID {
		t.Errorf("protocol %q client id %q", c.SecurityProtocol, c.ClientID)
	}
	if c.DialTimeout != 10*time.Second || c.ConnectionsMaxIdle != 9*time.Minute || c.MetadataMaxAge != 5*time.Minute {
		t.Errorf("timeouts %v %v %v", c.DialTimeout, c.ConnectionsMaxIdle, c.MetadataMaxAge)
	}
	if !c.SyncTopicConfigs || !c.SyncTopicPartitions || !c.SyncGroupOffsets || c.SyncTopicACLs {
		t.Errorf("syncs %v %v %v %v", c.SyncTopicConfigs, c.SyncTopicPartitions, c.SyncGroupOffsets, c.SyncTopicACLs)
	}
	for group, want := range map[string]bool{"app-1": true, "billing": true, "billing2": false, "app-test": false, "other": false} {
		if got := c.SyncsGroup(group); got != want {
			t.Errorf("SyncsGroup(%q) = %v, want %v", group, got, want)
		}
	}
	all, err := Parse(map[string]string{BootstrapServers: "a:1"})
	if err != nil {
		t.Fatal(err)
	}
	if !all.SyncsGroup("anything") {
		t.Error("the default groups must sync every group")
	}
}

func TestDescribeAndRedactHideSecrets(t *testing.T) {
	props := map[string]string{BootstrapServers: "a:1", SASLUsername: "mirror", SASLPassword: "pw1", SASLJAASConfig: "jaas pw2", "unknown.key": "pw3"}
	entries := Describe(props)
	if len(entries) != len(props) {
		t.Fatalf("Describe returned %d entries, want %d", len(entries), len(props))
	}
	for i, e := range entries {
		if i > 0 && entries[i-1].Name >= e.Name {
			t.Errorf("entries not sorted: %s before %s", entries[i-1].Name, e.Name)
		}
		wantSecret := e.Name == SASLPassword || e.Name == SASLJAASConfig || e.Name == "unknown.key"
		if e.Sensitive != wantSecret {
			t.Errorf("%s: Sensitive = %v", e.Name, e.Sensitive)
		}
		if wantSecret && e.Value != nil {
			t.Errorf("%s: secret returned as %q", e.Name, *e.Value)
		}
		if !wantSecret && (e.Value == nil || *e.Value != props[e.Name]) {
			t.Errorf("%s: value %v, want %q", e.Name, e.Value, props[e.Name])
		}
	}
	red := Redact(props)
	for k, v := range red {
		if strings.Contains(v, "pw") {
			t.Errorf("Redact kept %s=%q", k, v)
		}
	}
	if red[SASLUsername] != "mirror" || red[SASLPassword] != Hidden {
		t.Errorf("Redact = %v", red)
	}
	if props[SASLPassword] != "pw1" {
		t.Error("Redact changed its input")
	}
}

func TestSourceClientOptsNeedsBootstrap(t *testing.T) {
	if _, err := SourceClientOpts(map[string]string{ClientID: "x"}); !errors.Is(err, kerr.InvalidConfig) {
		t.Errorf("missing bootstrap: err = %v", err)
	}
}

// TestSourceClientReachesSource builds a client from the options and asks a
// kfake cluster for its metadata; the client has the configured client id.
func TestSourceClientReachesSource(t *testing.T) {
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	opts, err := SourceClientOpts(map[string]string{BootstrapServers: strings.Join(src.ListenAddrs(), ","), ClientID: "mirror-east"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr("orders")
	req.Topics = append(req.Topics, topic)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
		t.Fatalf("metadata = %+v", resp.Topics)
	}
	if id := cl.OptValue(kgo.ClientID); id != "mirror-east" {
		t.Errorf("client id = %v", id)
	}
}

func TestCheckHostPort(t *testing.T) {
	for s, ok := range map[string]bool{
		"a:1": true, "host.example:9092": true, "[::1]:9092": true, "10.0.0.1:65535": true,
		"a": false, ":9092": false, "a:": false, "a:0": false, "a:65536": false, "a:x": false,
		"[::1:9092": false, "::1:9092": false, "[]:1": false, "a:99999999999999999999": false,
	} {
		if err := checkHostPort(s); (err == nil) != ok {
			t.Errorf("checkHostPort(%q) = %v, want ok=%v", s, err, ok)
		}
	}
}

func TestNeverSyncedTopicConfigs(t *testing.T) {
	for _, name := range []string{"mirror.name", "min.insync.replicas", "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"} {
		if SyncsTopicConfig(name) {
			t.Errorf("%s is synced", name)
		}
	}
	for _, name := range []string{"retention.ms", "cleanup.policy", "max.message.bytes"} {
		if !SyncsTopicConfig(name) {
			t.Errorf("%s is not synced", name)
		}
	}
}
