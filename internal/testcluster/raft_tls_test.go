package testcluster

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/auth/authtest"
)

// TestRaftOverTLS runs three voters whose controller listener takes SSL
// with client certificates required. A TLS listener refuses raft peers that
// connect in plain TCP, so the quorum can only form, elect and replicate if
// raft itself runs over TLS, each node presenting its certificate.
func TestRaftOverTLS(t *testing.T) {
	ca := authtest.NewCA(t, "raft-ca")
	files := ca.WriteFiles(t, t.TempDir(), "node", pkix.Name{CommonName: "node"}, "127.0.0.1", "localhost")
	c := Start(t, Nodes(3),
		Config("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"),
		Config("listener.name.controller.ssl.client.auth", "required"),
		Config("ssl.certificate.location", files.Cert),
		Config("ssl.key.location", files.Key),
		Config("ssl.ca.location", files.CA),
		// Raft peers must be allowed CLUSTER_ACTION: the nodes' certificate
		// principal is a super user (as are the tests' anonymous clients
		// on the PLAINTEXT listener), another certificate's is not.
		Config("authorizer.class.name", "kmirror.acl"),
		Config("super.users", "User:CN=node;User:ANONYMOUS"),
	)
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Admin(t).CreateTopic(ctx, 1, 3, nil, "over-tls"); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, "over-tls", "one")

	// A new leader is elected, over TLS, when the old one stops.
	leader, _, ok := c.Node(1).Server().Quorum().Leader()
	if !ok {
		t.Fatal("no quorum leader")
	}
	c.Node(leader).Stop()
	deadline := time.Now().Add(StartTimeout)
	for {
		other := c.Node(leader%3 + 1)
		if id, _, ok := other.Server().Quorum().Leader(); ok && id != leader {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new quorum leader after the old one stopped")
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.Node(leader).Start()
	roundTrip(t, c, "over-tls", "two")

	pem, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	intruderCert, intruderKey := ca.Issue(t, pkix.Name{CommonName: "intruder"}, "127.0.0.1")
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	for _, n := range c.Nodes() {
		// A raft peer in plain TCP is refused...
		raw, err := net.DialTimeout("tcp", n.ControllerAddr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = raw.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := raw.Write([]byte{0xFF, 'K', 'R', 'F', 0, 1, 0, 0}); err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("node %d: a plain raft connection to the TLS controller listener was not closed: %v", n.ID, err)
		}
		raw.Close()
		// ...and so is a TLS peer without a client certificate.
		tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", n.ControllerAddr(),
			&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err == nil {
			_ = tc.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err = tc.Write([]byte{0xFF, 'K', 'R', 'F', 0, 1, 0, 0}); err == nil {
				_, err = tc.Read(make([]byte, 1))
			}
			tc.Close()
		}
		if err == nil {
			t.Fatalf("node %d: a TLS connection without a client certificate was served", n.ID)
		}
		// A raft peer whose certificate is trusted but whose principal may
		// not act for the cluster is refused.
		cert, err := tls.X509KeyPair(intruderCert, intruderKey)
		if err != nil {
			t.Fatal(err)
		}
		ic, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", n.ControllerAddr(),
			&tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{cert}})
		if err != nil {
			t.Fatalf("node %d: TLS with a trusted certificate: %v", n.ID, err)
		}
		_ = ic.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := ic.Write([]byte{0xFF, 'K', 'R', 'F', 0, 1, 0, 0}); err != nil {
			t.Fatal(err)
		}
		if _, err := ic.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("node %d: a raft peer without CLUSTER_ACTION was not closed: %v", n.ID, err)
		}
		ic.Close()
	}
}
