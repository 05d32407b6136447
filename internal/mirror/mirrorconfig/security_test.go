package mirrorconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth/authtest"
)

// planted is a password no message may contain.
const planted = "pw-planted-9f3a"

func TestSecurityCombinationsRefused(t *testing.T) {
	jaas := func(module string, opts string) string {
		return module + " required " + opts + ";"
	}
	scramJAAS := jaas("org.apache.kafka.common.security.scram.ScramLoginModule", `username="m" password="`+planted+`"`)
	cases := []struct {
		name  string
		props map[string]string
		key   string // what the message must name
	}{
		{"sasl without mechanism", map[string]string{SecurityProtocol: "SASL_SSL", SASLUsername: "m", SASLPassword: planted}, SASLMechanism},
		{"sasl without user", map[string]string{SecurityProtocol: "SASL_PLAINTEXT", SASLMechanism: "PLAIN", SASLPassword: planted}, SASLUsername},
		{"sasl without password", map[string]string{SecurityProtocol: "SASL_PLAINTEXT", SASLMechanism: "PLAIN", SASLUsername: "m"}, SASLPassword},
		{"jaas and password", map[string]string{SecurityProtocol: "SASL_SSL", SASLMechanism: "SCRAM-SHA-512", SASLJAASConfig: scramJAAS, SASLPassword: planted}, "not both"},
		{"jaas module mismatch", map[string]string{SecurityProtocol: "SASL_SSL", SASLMechanism: "PLAIN", SASLJAASConfig: scramJAAS}, "PlainLoginModule"},
		{"jaas without password", map[string]string{SecurityProtocol: "SASL_SSL", SASLMechanism: "SCRAM-SHA-256",
			SASLJAASConfig: jaas("org.apache.kafka.common.security.scram.ScramLoginModule", `username="m"`)}, SASLJAASConfig},
		{"jaas syntax", map[string]string{SecurityProtocol: "SASL_SSL", SASLMechanism: "SCRAM-SHA-256",
			SASLJAASConfig: `org.apache.kafka.common.security.scram.ScramLoginModule required password="` + planted + `"`}, SASLJAASConfig},
		{"pkcs12 truststore", map[string]string{SecurityProtocol: "SSL", SSLTruststoreLocation: "/x.p12"}, SSLTruststoreType},
		{"pkcs12 keystore", map[string]string{SecurityProtocol: "SSL", SSLKeystoreLocation: "/x.p12"}, SSLKeystoreType},
		{"ca twice", map[string]string{SecurityProtocol: "SSL", SSLCALocation: "/a", SSLTruststoreLocation: "/b", SSLTruststoreType: "PEM"}, SSLTruststoreLocation},
		{"cert without key", map[string]string{SecurityProtocol: "SSL", SSLCertificateLocation: "/c"}, SSLKeyLocation},
		{"key without cert", map[string]string{SecurityProtocol: "SASL_SSL", SASLMechanism: "PLAIN", SASLUsername: "m", SASLPassword: planted, SSLKeyLocation: "/k"}, SSLCertificateLocation},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.props[BootstrapServers] = "a:1"
			err := Validate(c.props)
			if !errors.Is(err, kerr.InvalidConfig) {
				t.Fatalf("Validate = %v, want INVALID_CONFIG", err)
			}
			if !strings.Contains(err.Error(), c.key) {
				t.Errorf("error %q does not name %q", err, c.key)
			}
			if strings.Contains(err.Error(), planted) {
				t.Errorf("error %q quotes the password", err)
			}
		})
	}
	// Settings of a layer the protocol does not use are ignored.
	if err := Validate(map[string]string{BootstrapServers: "a:1", SecurityProtocol: "SSL", SASLUsername: "m"}); err != nil {
		t.Errorf("sasl.username with SSL: %v", err)
	}
	if err := Validate(map[string]string{BootstrapServers: "a:1", SSLCertificateLocation: "/c"}); err != nil {
		t.Errorf("ssl.certificate.location with PLAINTEXT: %v", err)
	}
}

// tlsSource is a kfake cluster behind TLS (client certificates required
// when mutual) with SASL users when mechanisms are given.
type tlsSource struct {
	cluster *kfake.Cluster
	ca      *authtest.CA
	dir     string
}

func startTLSSource(t *testing.T, mutual bool, serverHost string, opts ...kfake.Opt) *tlsSource {
	t.Helper()
	dir := t.TempDir()
	ca := authtest.NewCA(t, "source-ca")
	certPEM, keyPEM := ca.Issue(t, pkix.Name{CommonName: "source"}, serverHost)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if mutual {
		pool := x509.NewCertPool()
		pool.AddCert(ca.Cert)
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.TLS(tc), kfake.SeedTopics(1, "orders")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &tlsSource{cluster: c, ca: ca, dir: dir}
}

// metadataWith builds a client from props and asks for metadata.
func metadataWith(t *testing.T, props map[string]string) error {
	t.Helper()
	opts, err := SourceClientOpts(props)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append(opts, kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	return err
}

func TestSourceClientSASLSSLWithSCRAM(t *testing.T) {
	src := startTLSSource(t, false, "127.0.0.1", kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "mirror", planted))
	caFile := filepath.Join(src.dir, "ca.pem")
	if err := os.WriteFile(caFile, src.ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	base := func() map[string]string {
		return map[string]string{BootstrapServers: strings.Join(src.cluster.ListenAddrs(), ","), SecurityProtocol: "SASL_SSL",
			SASLMechanism: "SCRAM-SHA-512", SSLCALocation: caFile}
	}
	ok := base()
	ok[SASLUsername], ok[SASLPassword] = "mirror", planted
	if err := metadataWith(t, ok); err != nil {
		t.Fatalf("username/password: %v", err)
	}
	viaJAAS := base()
	viaJAAS[SASLJAASConfig] = `org.apache.kafka.common.security.scram.ScramLoginModule required username="mirror" password="` + planted + `";`
	if err := metadataWith(t, viaJAAS); err != nil {
		t.Fatalf("sasl.jaas.config: %v", err)
	}
	wrong := base()
	wrong[SASLUsername], wrong[SASLPassword] = "mirror", "not-the-password"
	// kfake closes the connection of a failed login without an answer;
	// a kmirror source answers SASL_AUTHENTICATION_FAILED (test/mirror).
	err := metadataWith(t, wrong)
	if err == nil {
		t.Fatal("wrong password: the source accepted the login")
	}
	if strings.Contains(err.Error(), "not-the-password") {
		t.Errorf("error quotes the password: %v", err)
	}
	sha256 := base()
	sha256[SASLMechanism], sha256[SASLUsername], sha256[SASLPassword] = "SCRAM-SHA-256", "mirror", planted
	if err := metadataWith(t, sha256); err == nil {
		t.Error("a SCRAM-SHA-256 login of a SCRAM-SHA-512 user succeeded")
	}
}

func TestSourceClientMutualTLS(t *testing.T) {
	src := startTLSSource(t, true, "127.0.0.1")
	client := src.ca.WriteFiles(t, src.dir, "mirror", pkix.Name{CommonName: "mirror"})
	props := func(kv ...string) map[string]string {
		p := map[string]string{BootstrapServers: strings.Join(src.cluster.ListenAddrs(), ","), SecurityProtocol: "SSL", SSLCALocation: client.CA}
		for i := 0; i+1 < len(kv); i += 2 {
			p[kv[i]] = kv[i+1]
		}
		return p
	}
	if err := metadataWith(t, props(SSLCertificateLocation, client.Cert, SSLKeyLocation, client.Key)); err != nil {
		t.Fatalf("mutual TLS: %v", err)
	}
	// One PEM key store holding both.
	store := filepath.Join(src.dir, "store.pem")
	cert, _ := os.ReadFile(client.Cert)
	key, _ := os.ReadFile(client.Key)
	if err := os.WriteFile(store, append(cert, key...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := metadataWith(t, props(SSLKeystoreLocation, store, SSLKeystoreType, "PEM")); err != nil {
		t.Fatalf("PEM key store: %v", err)
	}
	if err := metadataWith(t, props()); err == nil {
		t.Error("no client certificate: the source accepted the connection")
	}
	// A CA that did not sign the source's certificate.
	other := authtest.NewCA(t, "other-ca").WriteFiles(t, src.dir, "other", pkix.Name{CommonName: "x"})
	err := metadataWith(t, props(SSLCALocation, other.CA, SSLCertificateLocation, client.Cert, SSLKeyLocation, client.Key))
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("untrusted source certificate: err = %v, want x509.UnknownAuthorityError", err)
	}
	// Missing and encrypted files are configuration errors naming the property.
	if _, err := SourceClientOpts(props(SSLCertificateLocation, filepath.Join(src.dir, "nope.pem"), SSLKeyLocation, client.Key)); !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(err.Error(), SSLCertificateLocation) {
		t.Errorf("missing certificate file: %v", err)
	}
	enc := filepath.Join(src.dir, "enc-key.pem")
	if err := os.WriteFile(enc, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1, 2, 3}}), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := SourceClientOpts(props(SSLCertificateLocation, client.Cert, SSLKeyLocation, enc)); !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(err.Error(), "encrypted") {
		t.Errorf("encrypted key: %v", err)
	}
}

func TestSourceClientEndpointIdentification(t *testing.T) {
	// The source's certificate names another host than the one dialled.
	src := startTLSSource(t, false, "source.example")
	caFile := filepath.Join(src.dir, "ca.pem")
	if err := os.WriteFile(caFile, src.ca.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	props := map[string]string{BootstrapServers: strings.Join(src.cluster.ListenAddrs(), ","), SecurityProtocol: "SSL", SSLCALocation: caFile}
	err := metadataWith(t, props)
	var host x509.HostnameError
	if !errors.As(err, &host) {
		t.Fatalf("https identification: err = %v, want x509.HostnameError", err)
	}
	props[SSLEndpointIdentification] = ""
	if err := metadataWith(t, props); err != nil {
		t.Fatalf("no identification: %v", err)
	}
	// Without identification the chain is still verified.
	props[SSLCALocation] = authtest.NewCA(t, "other").WriteFiles(t, src.dir, "o", pkix.Name{CommonName: "o"}).CA
	if err := metadataWith(t, props); err == nil {
		t.Error("no identification: a certificate of an untrusted authority was accepted")
	}
}
