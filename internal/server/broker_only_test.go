package server

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
)

// TestBrokerOnlyNodeJoins starts a combined node and then a broker-only
// node that knows only the voter set: it registers straight with the voter,
// is added to the metadata quorum as a non-voter at its inter-broker
// listener, replicates the metadata log, and is unfenced; both nodes then
// list both brokers.
func TestBrokerOnlyNodeJoins(t *testing.T) {
	first := startTestNode(t, nil)
	ctrl := first.Addr("CONTROLLER").String()

	dir := t.TempDir()
	kl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]string{
		"node.id":                   "2",
		"process.roles":             "broker",
		"listeners":                 fmt.Sprintf("PLAINTEXT://%s", kl.Addr()),
		"controller.listener.names": "CONTROLLER",
		"controller.quorum.voters":  "1@" + ctrl,
		"log.dirs":                  filepath.Join(dir, "data"),
	}
	cfg, _, err := config.Load("", nil, props)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(cfg, testLogger(t), WithListener("PLAINTEXT", kl), WithClusterID(first.ClusterID()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown(context.Background())
	if n.Controller() != nil {
		t.Fatal("a broker-only node runs a controller")
	}

	servers, err := first.Quorum().Servers()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range servers {
		if s.ID == 2 {
			found = true
			if s.Voter || s.Addr != kl.Addr().String() {
				t.Fatalf("node 2 in the quorum as %+v", s)
			}
		}
	}
	if !found {
		t.Fatalf("node 2 is not in the quorum: %+v", servers)
	}
	if id, _, ok := n.Quorum().Leader(); !ok || id != 1 {
		t.Fatalf("node 2's quorum member knows leader %d (%v)", id, ok)
	}

	// Node 2's own metadata lists both brokers as soon as it serves.
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	md := request(t, dial(t, n.Addr("PLAINTEXT").String()), req).(*kmsg.MetadataResponse)
	if len(md.Brokers) != 2 {
		t.Fatalf("node 2 lists brokers %+v", md.Brokers)
	}
}
