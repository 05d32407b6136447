package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/auth/authtest"
	"github.com/kmirror/kmirror/internal/config"
)

func TestDistinguishedName(t *testing.T) {
	name := pkix.Name{
		CommonName:         "alice, the \"admin\"",
		OrganizationalUnit: []string{"eng"},
		Organization:       []string{"acme"},
		Country:            []string{"NL"},
		ExtraNames: []pkix.AttributeTypeAndValue{
			{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}, Value: "example"},
			{Type: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, Value: "a@b.c"},
		},
	}
	raw, err := asn1.Marshal(name.ToRDNSequence())
	if err != nil {
		t.Fatal(err)
	}
	got, err := DistinguishedName(raw)
	if err != nil {
		t.Fatal(err)
	}
	// ExtraNames come last in the DER sequence, so first in RFC 2253;
	// the e-mail OID is not a keyword and prints as #hex of its DER
	// (UTF8String, tag 0x0c).
	want := `1.2.840.113549.1.9.1=#0c056140622e63,DC=example,CN=alice\, the \"admin\",OU=eng,O=acme,C=NL`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if _, err := DistinguishedName([]byte{0x30, 0x05, 1, 2}); err == nil {
		t.Fatal("garbage subject accepted")
	}
	if got := escapeDNValue(" #x; "); got != `\ #x\;\ ` {
		t.Fatalf("escape: %q", got)
	}
}

func TestPrincipalMappingRules(t *testing.T) {
	m, err := ParsePrincipalMappingRules(`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/L,DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	for dn, want := range map[string]string{
		"CN=kafka-broker,OU=ServiceUsers,O=acme": "kafka-broker",
		"CN=Alice,OU=ENG,O=acme":                 "alice@eng",
		"CN=bob":                                 "CN=bob",
	} {
		got, err := m.Map(dn)
		if err != nil || got != want {
			t.Errorf("%s → %q %v, want %q", dn, got, err, want)
		}
	}
	strict, err := ParsePrincipalMappingRules(`RULE:^CN=([a-z]+)$/$1/U`)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := strict.Map("CN=joe"); err != nil || got != "JOE" {
		t.Fatalf("upper: %q %v", got, err)
	}
	if _, err := strict.Map("CN=Joe,O=x"); err == nil {
		t.Fatal("a DN no rule matches was mapped")
	}
	for _, bad := range []string{"RULE:abc", "RULE:a/b", "BOGUS", "RULE:(/x/", "DEFAULT DEFAULT"} {
		if _, err := ParsePrincipalMappingRules(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// tlsProps returns the properties of a node with an SSL listener using the
// given files and client auth mode.
func tlsProps(f authtest.Files, clientAuth string) map[string]string {
	return map[string]string{
		"node.id":                           "1",
		"process.roles":                     "broker,controller",
		"listeners":                         "SSL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map":    "SSL:SSL,CONTROLLER:PLAINTEXT",
		"inter.broker.listener.name":        "SSL",
		"controller.listener.names":         "CONTROLLER",
		"controller.quorum.voters":          "1@127.0.0.1:9093",
		"listener.name.ssl.ssl.client.auth": clientAuth,
		"ssl.certificate.location":          f.Cert,
		"ssl.key.location":                  f.Key,
		"ssl.ca.location":                   f.CA,
		"log.dirs":                          "/nonexistent",
	}
}

// handshake runs a TLS handshake over a pipe and returns the server's view.
func handshake(t *testing.T, server, client *tls.Config) (tls.ConnectionState, error, error) {
	t.Helper()
	// Real sockets, not net.Pipe: their buffers take the alert a failing
	// server sends after a TLS 1.3 client has finished its handshake.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	b, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv := tls.Server(a, server)
	cli := tls.Client(b, client)
	errc := make(chan error, 1)
	go func() {
		err := cli.HandshakeContext(ctx)
		if err != nil {
			b.Close()
		}
		errc <- err
	}()
	serr := srv.HandshakeContext(ctx)
	if serr != nil {
		a.Close()
	}
	cerr := <-errc
	return srv.ConnectionState(), serr, cerr
}

func TestListenerTLS(t *testing.T) {
	dir := t.TempDir()
	ca := authtest.NewCA(t, "test-ca")
	node := ca.WriteFiles(t, dir, "node", pkix.Name{CommonName: "broker-1"}, "127.0.0.1", "localhost")
	cfg, _, err := config.Load("", nil, tlsProps(node, "required"))
	if err != nil {
		t.Fatal(err)
	}
	var ssl config.Listener
	for _, l := range cfg.Listeners {
		if l.Name == "SSL" {
			ssl = l
		}
	}
	sec, warnings, err := NewListener(cfg, ssl, nil)
	if err != nil || len(warnings) > 0 {
		t.Fatal(err, warnings)
	}
	if sec.TLS == nil || sec.TLS.ClientAuth != tls.RequireAndVerifyClientCert || sec.SASL != nil {
		t.Fatalf("listener security %+v", sec)
	}

	// A client with a certificate of the same CA: its DN is the principal.
	certPEM, keyPEM := ca.Issue(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"acme"}})
	clientCert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	cs, serr, cerr := handshake(t, sec.TLS, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", Certificates: []tls.Certificate{clientCert}})
	if serr != nil || cerr != nil {
		t.Fatalf("handshake: server %v client %v", serr, cerr)
	}
	p, err := sec.TLSPrincipal(cs)
	if err != nil || p != "User:CN=alice,OU=eng,O=acme" {
		t.Fatalf("principal %q %v", p, err)
	}

	// Without a client certificate: refused (required).
	if _, serr, _ := handshake(t, sec.TLS, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}); serr == nil {
		t.Fatal("client without certificate accepted with ssl.client.auth=required")
	}
	// A client certificate of another CA: refused.
	other := authtest.NewCA(t, "other-ca")
	oc, ok := other.Issue(t, pkix.Name{CommonName: "mallory"})
	otherCert, _ := tls.X509KeyPair(oc, ok)
	if _, serr, _ := handshake(t, sec.TLS, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", Certificates: []tls.Certificate{otherCert}}); serr == nil {
		t.Fatal("client certificate of another CA accepted")
	}
	// A client trusting another CA refuses the server.
	otherRoots := x509.NewCertPool()
	otherRoots.AddCert(other.Cert)
	if _, _, cerr := handshake(t, sec.TLS, &tls.Config{RootCAs: otherRoots, ServerName: "127.0.0.1", Certificates: []tls.Certificate{clientCert}}); cerr == nil {
		t.Fatal("client accepted a server certificate of a CA it does not trust")
	}

	// The node's own client configuration talks to the listener, with its
	// certificate as the principal.
	cc, err := ClientTLSConfig(cfg, "SSL")
	if err != nil {
		t.Fatal(err)
	}
	cc.ServerName = "localhost"
	cs, serr, cerr = handshake(t, sec.TLS, cc)
	if serr != nil || cerr != nil {
		t.Fatalf("node handshake: server %v client %v", serr, cerr)
	}
	if p, _ := sec.TLSPrincipal(cs); p != "User:CN=broker-1" {
		t.Fatalf("node principal %q", p)
	}
}

func TestListenerTLSRequestedAndErrors(t *testing.T) {
	dir := t.TempDir()
	ca := authtest.NewCA(t, "test-ca")
	node := ca.WriteFiles(t, dir, "node", pkix.Name{CommonName: "broker-1"}, "127.0.0.1")
	props := tlsProps(node, "requested")
	cfg, _, err := config.Load("", nil, props)
	if err != nil {
		t.Fatal(err)
	}
	sec, _, err := NewListener(cfg, config.Listener{Name: "SSL", SecurityProtocol: "SSL"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	cs, serr, cerr := handshake(t, sec.TLS, &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"})
	if serr != nil || cerr != nil {
		t.Fatalf("requested: a client without certificate must be accepted: %v %v", serr, cerr)
	}
	if p, _ := sec.TLSPrincipal(cs); p != "User:ANONYMOUS" {
		t.Fatalf("principal without certificate %q", p)
	}

	for name, mod := range map[string]func(map[string]string){
		"no certificate":   func(p map[string]string) { delete(p, "ssl.certificate.location"); delete(p, "ssl.key.location") },
		"missing key file": func(p map[string]string) { p["ssl.key.location"] = dir + "/nope.pem" },
		"jks keystore": func(p map[string]string) {
			delete(p, "ssl.certificate.location")
			delete(p, "ssl.key.location")
			p["ssl.keystore.location"] = dir + "/ks.jks"
		},
		"requested without ca": func(p map[string]string) { delete(p, "ssl.ca.location") },
	} {
		p := tlsProps(node, "requested")
		mod(p)
		cfg, _, err := config.Load("", nil, p)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := NewListener(cfg, config.Listener{Name: "SSL", SecurityProtocol: "SSL"}, nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}

	// A PEM key store holding certificate and key in one file.
	p := tlsProps(node, "none")
	delete(p, "ssl.certificate.location")
	delete(p, "ssl.key.location")
	p["ssl.keystore.type"] = "PEM"
	p["ssl.keystore.location"] = writeConcat(t, dir, node.Cert, node.Key)
	cfg, _, err = config.Load("", nil, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := NewListener(cfg, config.Listener{Name: "SSL", SecurityProtocol: "SSL"}, nil); err != nil {
		t.Fatalf("PEM key store: %v", err)
	}
}

func writeConcat(t *testing.T, dir string, files ...string) string {
	t.Helper()
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	path := filepath.Join(dir, "keystore.pem")
	if err := os.WriteFile(path, all, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// FuzzDistinguishedName formats arbitrary DER as a certificate subject: it
// must fail or return text, never panic.
func FuzzDistinguishedName(f *testing.F) {
	name := pkix.Name{CommonName: "a,b", Organization: []string{"o"}, ExtraNames: []pkix.AttributeTypeAndValue{
		{Type: asn1.ObjectIdentifier{1, 2, 3}, Value: "x"}}}
	raw, _ := asn1.Marshal(name.ToRDNSequence())
	f.Add(raw)
	f.Add([]byte{0x30, 0x00})
	f.Fuzz(func(t *testing.T, der []byte) {
		_, _ = DistinguishedName(der)
	})
}
