package server

import (
	"context"
	"crypto/x509/pkix"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth/authtest"
	"github.com/kmirror/kmirror/internal/config"
)

// nodePassword is the nodes' own SASL password on the controller listener.
const nodePassword = "node-Pw-31337k"

// TestSecuredControllerListener runs a controller-only node whose
// controller listener takes SASL_SSL (PLAIN, ACLs on, only User:node a
// super user) and a broker-only node that registers, heartbeats and
// forwards CreateTopics through it with its own TLS and SASL login; a
// client without credentials on that listener is refused by TLS+SASL.
func TestSecuredControllerListener(t *testing.T) {
	dir := t.TempDir()
	ca := authtest.NewCA(t, "cluster-ca")
	files := ca.WriteFiles(t, dir, "ctrl", pkix.Name{CommonName: "controller-1"}, "127.0.0.1")
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="node" password="` + nodePassword +
		`" user_node="` + nodePassword + `";`
	common := map[string]string{
		"controller.listener.names":                       "CONTROLLER",
		"listener.security.protocol.map":                  "CONTROLLER:SASL_SSL,PLAINTEXT:PLAINTEXT",
		"sasl.enabled.mechanisms":                         "PLAIN",
		"sasl.mechanism.controller.protocol":              "PLAIN",
		"listener.name.controller.plain.sasl.jaas.config": jaas,
		"ssl.certificate.location":                        files.Cert,
		"ssl.key.location":                                files.Key,
		"ssl.ca.location":                                 files.CA,
		"authorizer.class.name":                           "kmirror.acl",
		"super.users":                                     "User:node",
	}
	with := func(m map[string]string) map[string]string {
		for k, v := range common {
			m[k] = v
		}
		return m
	}
	logs := &lockedBuffer{}

	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctrl := cl.Addr().String()
	ccfg, _, err := config.Load("", nil, with(map[string]string{
		"node.id":                  "1",
		"process.roles":            "controller",
		"listeners":                "CONTROLLER://" + ctrl,
		"controller.quorum.voters": "1@" + ctrl,
		"log.dirs":                 filepath.Join(dir, "c"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	cn, err := New(ccfg, loggerTo(t, logs), WithListener("CONTROLLER", cl))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cn.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer cn.Shutdown(context.Background())

	kl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bprops := with(map[string]string{
		"node.id":                  "2",
		"process.roles":            "broker",
		"listeners":                "PLAINTEXT://" + kl.Addr().String(),
		"controller.quorum.voters": "1@" + ctrl,
		"log.dirs":                 filepath.Join(dir, "b"),
	})
	// The broker's client listener is PLAINTEXT: its clients are
	// anonymous, a super user of this broker only (the broker checks
	// CreateTopics before forwarding it); the nodes' own principal is
	// User:node.
	bprops["super.users"] = "User:node;User:ANONYMOUS"
	bcfg, _, err := config.Load("", nil, bprops)
	if err != nil {
		t.Fatal(err)
	}
	bn, err := New(bcfg, loggerTo(t, logs), WithListener("PLAINTEXT", kl), WithClusterID(cn.ClusterID()))
	if err != nil {
		t.Fatal(err)
	}
	if err := bn.Start(ctx); err != nil {
		t.Fatalf("broker-only node over a SASL_SSL controller listener: %v", err)
	}
	defer bn.Shutdown(context.Background())

	// CreateTopics reaches the controller over the secured channel. The
	// client is anonymous on the broker's PLAINTEXT listener, allowed by
	// the broker; the controller sees only User:node.
	c := dial(t, kl.Addr().String())
	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7)
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "secured", 1, 1
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = 10000
	resp := request(t, c, create).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create through the secured controller channel: %+v", resp.Topics)
	}

	// A plain Kafka client on the controller listener gets no answer: the
	// listener speaks TLS.
	raw, err := net.DialTimeout("tcp", ctrl, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_ = raw.SetDeadline(time.Now().Add(20 * time.Second))
	rawSend(t, raw, kmsg.NewPtrApiVersionsRequest())
	wantClosed(t, raw, "after a plaintext request on a TLS listener")
	noSecretsIn(t, "the nodes' logs", logs.String(), nodePassword)
}

// TestRaftNeedsTheNodesLoginOnASASLControllerListener: a voter with other
// voters to reach over a SASL controller listener must be able to log in
// there, or raft could never connect; it does not start, naming the missing
// setting, instead of running without a quorum.
func TestRaftNeedsTheNodesLoginOnASASLControllerListener(t *testing.T) {
	dir := t.TempDir()
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctrl := cl.Addr().String()
	cfg, _, err := config.Load("", nil, map[string]string{
		"node.id":                            "1",
		"process.roles":                      "controller",
		"controller.listener.names":          "CONTROLLER",
		"listeners":                          "CONTROLLER://" + ctrl,
		"listener.security.protocol.map":     "CONTROLLER:SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":            "PLAIN",
		"sasl.mechanism.controller.protocol": "PLAIN",
		// Users to check others' logins, but no username/password of its own.
		"listener.name.controller.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_node="` + nodePassword + `";`,
		"controller.quorum.voters":                        "1@" + ctrl + ",2@127.0.0.1:1,3@127.0.0.1:2",
		"log.dirs":                                        filepath.Join(dir, "c"),
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(cfg, loggerTo(t, &lockedBuffer{}), WithListener("CONTROLLER", cl), WithClusterID("iZ-THgQCYFpDQnKxqbYz8w"))
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = n.Start(ctx)
		if err == nil {
			n.Shutdown(context.Background())
		}
	}
	if err == nil || !strings.Contains(err.Error(), "raft connections to the controllers") ||
		!strings.Contains(err.Error(), "listener.name.controller.plain.sasl.jaas.config") {
		t.Fatalf("start without the node's own login: %v", err)
	}
}
