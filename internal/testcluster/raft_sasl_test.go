package testcluster

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kmirror/kmirror/internal/wire"
)

// raftSASLPreamble is a raft peer's preamble announcing a SASL login.
var raftSASLPreamble = []byte{0xFF, 'K', 'R', 'F', 0, 1, 0, 1}

// TestRaftOverSASL runs three voters whose controller listener takes
// SASL_PLAINTEXT. Such a listener refuses raft peers that do not log in, so
// the quorum can only form, replicate and re-elect if raft logs in with the
// node's own credentials (sasl.mechanism.controller.protocol and the
// listener's JAAS entry). It refuses peers that do not log in, that log in
// with a wrong password, that log in as a principal without CLUSTER_ACTION
// or that send anything but their login — and keeps one that logs in as the
// nodes do waiting for raft's first request, so a refusal is the server's
// doing.
func TestRaftOverSASL(t *testing.T) {
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="node" password="node-secret"` +
		` user_node="node-secret" user_intruder="intruder-secret";`
	c := Start(t, Nodes(3),
		Config("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"),
		Config("sasl.enabled.mechanisms", "PLAIN"),
		Config("sasl.mechanism.controller.protocol", "PLAIN"),
		Config("listener.name.controller.plain.sasl.jaas.config", jaas),
		// The tests' clients are anonymous on the PLAINTEXT listener; on
		// the controller listener nobody is anonymous.
		Config("authorizer.class.name", "kmirror.acl"),
		Config("super.users", "User:node;User:ANONYMOUS"),
	)
	quorumSurvivesLeaderLoss(t, c, "over-sasl")

	login := func(addr, user, pass string) (net.Conn, error) {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nc.Write(raftSASLPreamble); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = wire.Authenticate(ctx, nc, "test", plain.Auth{User: user, Pass: pass}.AsMechanism(), addr)
		return nc, err
	}
	for _, n := range c.Nodes() {
		addr := n.ControllerAddr()
		// A peer that logs in as the nodes do is handed to raft, which
		// waits for its first request: the connection stays open.
		ok, err := login(addr, "node", "node-secret")
		if err != nil {
			t.Fatalf("node %d: the nodes' own login: %v", n.ID, err)
		}
		_ = ok.SetDeadline(time.Now().Add(time.Second))
		var ne net.Error
		if _, err := ok.Read(make([]byte, 1)); !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("node %d: a logged-in raft peer: read %v, want it kept open", n.ID, err)
		}
		ok.Close()

		// A raft peer that does not log in is refused...
		raw, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := raftPeerRefused(raw); err != nil {
			t.Fatalf("node %d: a raft peer without a login: %v", n.ID, err)
		}
		// ...as is one with a wrong password...
		bad, err := login(addr, "node", "guess")
		if !errors.Is(err, wire.ErrSASLAuthentication) {
			t.Fatalf("node %d: a wrong password: %v", n.ID, err)
		}
		bad.Close()
		// ...one whose principal may not act for the cluster...
		in, err := login(addr, "intruder", "intruder-secret")
		if err != nil {
			t.Fatalf("node %d: the intruder's valid login: %v", n.ID, err)
		}
		if err := closedByServer(in); err != nil {
			t.Fatalf("node %d: a raft peer without CLUSTER_ACTION: %v", n.ID, err)
		}
		// ...and one that sends a request instead of its login.
		other, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Write(raftSASLPreamble); err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(9)
		if _, err := other.Write(wire.AppendRequest(nil, 1, nil, req)); err != nil {
			t.Fatal(err)
		}
		if err := closedByServer(other); err != nil {
			t.Fatalf("node %d: a raft peer that skipped its login: %v", n.ID, err)
		}
	}
}

// closedByServer reports an error unless the server closes c (read EOF or
// a reset) instead of keeping it open. It closes c.
func closedByServer(c net.Conn) error {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	switch {
	case err == nil:
		return errors.New("the server sent something")
	case errors.As(err, &ne) && ne.Timeout():
		return errors.New("the connection was kept open")
	}
	return nil
}
