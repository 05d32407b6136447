package kafkacluster_test

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kmirror/kmirror/internal/testcluster/kafkacluster"
)

// TestSASLSSL runs one node with a SASL_SSL listener, SCRAM-SHA-512 users
// made at format time and the StandardAuthorizer, and checks who gets in.
func TestSASLSSL(t *testing.T) {
	c := kafkacluster.Start(t, kafkacluster.SASLSSL(), kafkacluster.SCRAMUser("bob", "bob-secret"))
	topic := createTopic(t, c, "secured", 1)

	t.Run("Admin", func(t *testing.T) {
		// ClientOpts verify the broker against the generated CA.
		cl := c.Client(t)
		want := produce(t, cl, topic, "admin", 3)
		if got := consume(t, c, topic, len(want)); len(got) != len(want) {
			t.Fatalf("consumed %v, want %v", got, want)
		}
	})

	t.Run("ToolClientProperties", func(t *testing.T) {
		// Kafka's tools connect with the helper's client config.
		res := kafkacluster.RunTool(t, "org.apache.kafka.tools.GetOffsetShell",
			"--bootstrap-server", c.Bootstrap(), "--command-config", c.ClientProperties(), "--topic", topic)
		if want := topic + ":0:3"; res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != want {
			t.Fatalf("GetOffsetShell exited %d printing %q, want %q\nstderr:\n%s", res.ExitCode, res.Stdout, want, res.Stderr)
		}
	})

	t.Run("UntrustedCA", func(t *testing.T) {
		// The same credentials without the CA: the handshake must fail.
		cl := newClient(t, kgo.SeedBrokers(c.Addr(1)),
			kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}),
			kgo.SASL(scram.Auth{User: kafkacluster.AdminUser, Pass: c.AdminPassword()}.AsSha512Mechanism()))
		var verr *tls.CertificateVerificationError
		if err := pingErr(cl); !errors.As(err, &verr) {
			t.Fatalf("ping without the CA: %v, want a certificate verification error", err)
		}
	})

	t.Run("WrongPassword", func(t *testing.T) {
		cl := newClient(t, c.ClientOptsAs(kafkacluster.AdminUser, "not-the-password")...)
		if err := pingErr(cl); !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("ping with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	})

	t.Run("NoACLs", func(t *testing.T) {
		// bob authenticates but has no ACLs: the authorizer denies the topic.
		cl := newClient(t, append(c.ClientOptsAs("bob", "bob-secret"), kgo.RecordRetries(1))...)
		if err := pingErr(cl); err != nil {
			t.Fatalf("bob cannot connect: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("bob's produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
	})
}

func newClient(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// pingErr connects (TLS, SASL, ApiVersions) and returns the error.
func pingErr(cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}
