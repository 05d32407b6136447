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

// TestSeparateRoles runs a controller-only node and a broker-only node: the
// controller node hosts no partitions and serves only the controller APIs;
// the broker serves clients and creates topics through it.
func TestSeparateRoles(t *testing.T) {
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctrl := cl.Addr().String()
	cprops := map[string]string{
		"node.id":                   "1",
		"process.roles":             "controller",
		"listeners":                 "CONTROLLER://" + ctrl,
		"controller.listener.names": "CONTROLLER",
		"controller.quorum.voters":  "1@" + ctrl,
		"log.dirs":                  filepath.Join(t.TempDir(), "data"),
	}
	ccfg, _, err := config.Load("", nil, cprops)
	if err != nil {
		t.Fatal(err)
	}
	cn, err := New(ccfg, testLogger(t), WithListener("CONTROLLER", cl))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cn.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer cn.Shutdown(context.Background())
	if cn.Broker() != nil || cn.Logs() != nil {
		t.Fatal("a controller-only node runs a broker")
	}

	kl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bprops := map[string]string{
		"node.id":                   "2",
		"process.roles":             "broker",
		"listeners":                 "PLAINTEXT://" + kl.Addr().String(),
		"controller.listener.names": "CONTROLLER",
		"controller.quorum.voters":  "1@" + ctrl,
		"log.dirs":                  filepath.Join(t.TempDir(), "data"),
	}
	bcfg, _, err := config.Load("", nil, bprops)
	if err != nil {
		t.Fatal(err)
	}
	bn, err := New(bcfg, testLogger(t), WithListener("PLAINTEXT", kl), WithClusterID(cn.ClusterID()))
	if err != nil {
		t.Fatal(err)
	}
	if err := bn.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer bn.Shutdown(context.Background())

	c := dial(t, kl.Addr().String())
	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7)
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "separate", 2, 1
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = 10000
	resp := request(t, c, create).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create through a broker-only node: %+v", resp.Topics)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	mresp := request(t, c, md).(*kmsg.MetadataResponse)
	if len(mresp.Brokers) != 1 || mresp.Brokers[0].NodeID != 2 {
		t.Fatalf("brokers %+v: the controller-only node must not be listed", mresp.Brokers)
	}
}
