package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/kmirror/kmirror/internal/auth/authtest"
	"github.com/kmirror/kmirror/internal/config"
)

// lockedBuffer collects a node's log lines so a test can search them for
// secrets.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// secureNode is a single combined node whose client listener is called
// CLIENT and uses a chosen security protocol; its logs are kept.
type secureNode struct {
	*Node
	dir  string
	logs *lockedBuffer
	ca   *authtest.CA
	// files are the node's certificate, key and CA.
	files authtest.Files
}

// startSecureNode starts a node with a CLIENT listener of protocol
// clientProto, a CONTROLLER listener of protocol ctrlProto, a test CA and a
// node certificate for 127.0.0.1 configured as ssl.*, and extra properties.
func startSecureNode(t *testing.T, clientProto, ctrlProto string, extra map[string]string) *secureNode {
	t.Helper()
	dir := t.TempDir()
	ca := authtest.NewCA(t, "kmirror-test-ca")
	files := ca.WriteFiles(t, dir, "node", pkix.Name{CommonName: "node-1", OrganizationalUnit: []string{"brokers"}}, "127.0.0.1", "localhost")
	kl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	kport, cport := kl.Addr().(*net.TCPAddr).Port, cl.Addr().(*net.TCPAddr).Port
	props := map[string]string{
		"node.id":                        "1",
		"process.roles":                  "broker,controller",
		"listeners":                      fmt.Sprintf("CLIENT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", kport, cport),
		"listener.security.protocol.map": "CLIENT:" + clientProto + ",CONTROLLER:" + ctrlProto,
		"inter.broker.listener.name":     "CLIENT",
		"controller.listener.names":      "CONTROLLER",
		"controller.quorum.voters":       fmt.Sprintf("1@127.0.0.1:%d", cport),
		"log.dirs":                       filepath.Join(dir, "data"),
		"ssl.certificate.location":       files.Cert,
		"ssl.key.location":               files.Key,
		"ssl.ca.location":                files.CA,
	}
	for k, v := range extra {
		props[k] = v
	}
	cfg, _, err := config.Load("", nil, props)
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewTextHandler(multiWriter{logs, testWriter{t}}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	n, err := New(cfg, logger, WithListener("CLIENT", kl), WithListener("CONTROLLER", cl))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := n.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return &secureNode{Node: n, dir: dir, logs: logs, ca: ca, files: files}
}

type multiWriter struct {
	a *lockedBuffer
	b testWriter
}

func (m multiWriter) Write(p []byte) (int, error) {
	m.a.Write(p)
	return m.b.Write(p)
}

// addr is the CLIENT listener's address.
func (n *secureNode) addr() string { return n.Addr("CLIENT").String() }

// clientTLS returns a client TLS configuration trusting the node's CA, with
// a client certificate for subject when cn is not empty.
func (n *secureNode) clientTLS(t *testing.T, subject *pkix.Name) *tls.Config {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(n.ca.Cert)
	tc := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}
	if subject != nil {
		certPEM, keyPEM := n.ca.Issue(t, *subject)
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc
}

// client returns a franz-go client of the CLIENT listener.
func (n *secureNode) client(t *testing.T, tc *tls.Config, m sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	o := []kgo.Opt{kgo.SeedBrokers(n.addr()), kgo.RetryTimeout(5 * time.Second), kgo.RequestRetries(2)}
	if tc != nil {
		o = append(o, kgo.DialTLSConfig(tc))
	}
	if m != nil {
		o = append(o, kgo.SASL(m))
	}
	cl, err := kgo.NewClient(append(o, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// noSecretsIn fails the test if any secret appears in text.
func noSecretsIn(t *testing.T, what, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("%s contains the secret %q", what, s)
		}
	}
}

// tlsCert is a client certificate.
type tlsCert = tls.Certificate

func mustPair(t *testing.T, certPEM, keyPEM []byte) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// otherCA is a second authority the node does not trust.
type otherCA struct{ *authtest.CA }

func startCAOnly(t *testing.T) otherCA { return otherCA{authtest.NewCA(t, "other-ca")} }

func (c otherCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(c.Cert)
	return p
}

// loggerTo returns a debug logger writing to the test log and to logs.
func loggerTo(t *testing.T, logs *lockedBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(multiWriter{logs, testWriter{t}}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
