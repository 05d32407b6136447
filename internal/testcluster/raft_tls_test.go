package testcluster

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
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
	quorumSurvivesLeaderLoss(t, c, "over-tls")

	pem, err := os.ReadFile(files.CA)
	if err != nil {
		t.Fatal(err)
	}
	intruderCert, intruderKey := ca.Issue(t, pkix.Name{CommonName: "intruder"}, "127.0.0.1")
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cert, err := tls.X509KeyPair(intruderCert, intruderKey)
	if err != nil {
		t.Fatal(err)
	}
	dialTLS := func(addr string, certs []tls.Certificate) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
			&tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: certs})
	}
	for _, n := range c.Nodes() {
		// A raft peer in plain TCP is refused...
		raw, err := net.DialTimeout("tcp", n.ControllerAddr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := raftPeerRefused(raw); err != nil {
			t.Fatalf("node %d: a plain raft connection to the TLS controller listener: %v", n.ID, err)
		}
		// ...and so is a TLS peer without a client certificate (the
		// handshake or the first read fails; a raft peer handed on would
		// only time out)...
		if tc, err := dialTLS(n.ControllerAddr(), nil); err == nil {
			if err := raftPeerRefused(tc); err != nil {
				t.Fatalf("node %d: a TLS connection without a client certificate: %v", n.ID, err)
			}
		}
		// ...and one whose certificate is trusted but whose principal may
		// not act for the cluster.
		ic, err := dialTLS(n.ControllerAddr(), []tls.Certificate{cert})
		if err != nil {
			t.Fatalf("node %d: TLS with a trusted certificate: %v", n.ID, err)
		}
		if err := raftPeerRefused(ic); err != nil {
			t.Fatalf("node %d: a raft peer without CLUSTER_ACTION: %v", n.ID, err)
		}
	}
}

// quorumSurvivesLeaderLoss creates topic (RF 3) and round-trips a record,
// stops the quorum leader, waits for another to be elected, starts the old
// one again and round-trips another record: raft connects, replicates and
// re-elects between the nodes.
func quorumSurvivesLeaderLoss(t *testing.T, c *Cluster, topic string) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	if _, err := c.Admin(t).CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, topic, "one")
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
	roundTrip(t, c, topic, "two")
}

// raftPreamble is what a raft peer sends first (quorum's preamble, version 1).
var raftPreamble = []byte{0xFF, 'K', 'R', 'F', 0, 1, 0, 0}

// raftPeerRefused sends a raft preamble on c and reports an error unless
// the server closes the connection (or fails it, as a TLS alert does)
// instead of waiting for raft's first request. It closes c.
func raftPeerRefused(c net.Conn) error {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Write(raftPreamble)
	if err == nil {
		_, err = c.Read(make([]byte, 1))
	}
	var ne net.Error
	switch {
	case err == nil:
		return errors.New("the server answered a raft preamble")
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("the connection was kept open: %w", err)
	}
	return nil
}
