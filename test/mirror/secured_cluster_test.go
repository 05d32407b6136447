package mirror_test

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kmirror/kmirror/internal/auth/authtest"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// securedNodePW is the nodes' own PLAIN password on the secured listener.
const securedNodePW = "planted-node-pw-6120"

// TestSecuredInterBrokerCluster runs a three-node destination whose only
// broker listener — the inter-broker one — takes SASL_SSL, with ACLs on
// and only the nodes' own login a super user. Every node-to-node connection
// must then present TLS and the node's login: followers fetching from
// leaders (RF=3, acks=-1 with min.insync.replicas=2), the mirror's state
// store and coordinators across brokers (__mirror_state spread over the
// three), DescribeMirrors' fan-out, the sync, the controller's reads of
// mirror states at failover. The cluster replicates a produced topic to
// every replica, mirrors a topic from a plaintext source byte for byte
// onto all three replicas, and fails it over; no log line holds the
// password.
func TestSecuredInterBrokerCluster(t *testing.T) {
	dir := t.TempDir()
	ca := authtest.NewCA(t, "cluster-ca")
	files := ca.WriteFiles(t, dir, "node", pkix.Name{CommonName: "node"}, "127.0.0.1", "localhost")
	logs := &syncLogs{}
	nodeJAAS := `org.apache.kafka.common.security.plain.PlainLoginModule required username="node" password="` + securedNodePW +
		`" user_node="` + securedNodePW + `";`
	src := syncCluster(t, nil)
	dst := testcluster.Start(syncTB{T: t, logs: logs},
		testcluster.Nodes(3),
		testcluster.LogLevel(slog.LevelDebug), // every line is searched for the password
		testcluster.Config("listener.security.protocol.map", "PLAINTEXT:SASL_SSL,CONTROLLER:SASL_PLAINTEXT"),
		testcluster.Config("sasl.enabled.mechanisms", "PLAIN"),
		testcluster.Config("sasl.mechanism.inter.broker.protocol", "PLAIN"),
		testcluster.Config("sasl.mechanism.controller.protocol", "PLAIN"),
		testcluster.Config("listener.name.plaintext.plain.sasl.jaas.config", nodeJAAS),
		testcluster.Config("listener.name.controller.plain.sasl.jaas.config", nodeJAAS),
		testcluster.Config("ssl.certificate.location", files.Cert),
		testcluster.Config("ssl.key.location", files.Key),
		testcluster.Config("ssl.ca.location", files.CA),
		testcluster.Config("authorizer.class.name", "kmirror.acl"),
		testcluster.Config("super.users", "User:node"),
		testcluster.Config("default.replication.factor", "3"),
		testcluster.Config("min.insync.replicas", "2"),
		testcluster.Config("offsets.topic.replication.factor", "3"),
		testcluster.Config("offsets.topic.num.partitions", "3"),
		testcluster.Config("transaction.state.log.replication.factor", "3"),
		testcluster.Config("transaction.state.log.num.partitions", "3"),
		testcluster.Config("mirror.state.topic.num.partitions", "6"),
		testcluster.Config("mirror.state.topic.replication.factor", "3"),
		testcluster.Config("replica.fetch.wait.max.ms", "100"),
		testcluster.Config("replica.fetch.backoff.ms", "100"),
		testcluster.Config("mirror.metadata.refresh.interval.ms", fmt.Sprint(syncRefresh.Milliseconds())),
	)
	ctx := syncCtx(t)
	login := []kgo.Opt{
		kgo.DialTLSConfig(syncTLSClient(t, ca, nil)),
		kgo.SASL(plain.Auth{User: "node", Pass: securedNodePW}.AsMechanism()),
	}
	adm := kadm.NewClient(syncClient(t, dst, login...))

	// Replication: RF=3, acks=-1.
	const records = 300
	if r, err := adm.CreateTopic(ctx, 3, 3, nil, "replicated"); err != nil || r.Err != nil {
		t.Fatalf("create replicated: %v %v", err, r.Err)
	}
	producer := syncClient(t, dst, append(login, kgo.DefaultProduceTopic("replicated"), kgo.RequiredAcks(kgo.AllISRAcks()))...)
	var batch []*kgo.Record
	for i := range records {
		batch = append(batch, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: bytes.Repeat([]byte("r"), 100)})
	}
	if err := producer.ProduceSync(ctx, batch...).FirstErr(); err != nil {
		t.Fatalf("produce with acks=-1: %v", err)
	}
	var total int64
	for p := range int32(3) {
		dst.WaitReplicasIdentical(t, "replicated", p)
		st, _ := dst.PartitionState("replicated", p)
		if len(st.ISR) != 3 {
			t.Fatalf("replicated-%d: ISR %v", p, st.ISR)
		}
		lp, _ := dst.Node(st.Leader).Server().Broker().Replicas().Partition(storage.TopicPartition{Topic: "replicated", Partition: p})
		total += lp.Log().LogEndOffset()
	}
	if total != records {
		t.Fatalf("the replicas hold %d records, %d were acknowledged", total, records)
	}

	// Mirroring from a plaintext source onto three replicas.
	srcSeeds := src.BootstrapAddrs()
	createTopicOn(t, srcSeeds, "mirrored", 2)
	produceSome(t, srcSeeds, "mirrored", "m", 200)
	madm := syncMirrorAdmin(t, dst, append(login, mirroradmin.ClientOpts()...)...)
	mirrorFrom(t, madm, "from-src", srcSeeds, "mirrored")
	waitStates(t, madm, "from-src", "mirrored", 2, mirroradmin.StateMirroring)
	for p := range int32(2) {
		_, want := src.Node(1).ReplicaLog(t, "mirrored", p)
		syncPoll(t, fmt.Sprintf("mirrored-%d on every destination replica", p), func() (bool, string) {
			st, ok := dst.PartitionState("mirrored", p)
			if !ok || len(st.Replicas) != 3 {
				return false, fmt.Sprintf("state %+v", st)
			}
			got := dst.WaitReplicasIdentical(t, "mirrored", p)
			return bytes.Equal(got, want), fmt.Sprintf("%d of %d bytes", len(got), len(want))
		})
	}

	failover(t, madm, "from-src", "mirrored")
	waitStates(t, madm, "from-src", "mirrored", 2, mirroradmin.StateStopped)
	writer := syncClient(t, dst, append(login, kgo.DefaultProduceTopic("mirrored"))...)
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := writer.ProduceSync(pctx, &kgo.Record{Value: []byte("after failover")}).FirstErr(); err != nil {
		t.Fatalf("produce after failover: %v", err)
	}
	noSecret(t, logs.String(), securedNodePW)
}

// noSecret fails the test if text contains secret.
func noSecret(t *testing.T, text, secret string) {
	t.Helper()
	if bytes.Contains([]byte(text), []byte(secret)) {
		t.Errorf("the logs hold the password %q", secret)
	}
}
