package kafkamirror_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster/kafkacluster"
)

// The mirror's login on the source, and a user with no ACLs at all.
const (
	mirrorUser     = "kmirror"
	mirrorPassword = "mirror-secret-5b81"
	nobodyUser     = "nobody"
	nobodyPassword = "nobody-secret-2c07"
)

// source is the shared Kafka cluster, seen from one (sub)test.
type source struct {
	kc *kafkacluster.Cluster
	t  *testing.T
}

// startSource starts the three Kafka nodes and grants the mirror's user
// the rights docs/mirroring.md lists, with Kafka's own kafka-acls: READ,
// DESCRIBE and DESCRIBE_CONFIGS on topics, DESCRIBE on groups and on the
// cluster. They are wildcard ACLs, which the ACL sync never copies.
func startSource(t *testing.T) *source {
	t.Helper()
	kc := kafkacluster.Start(t, kafkacluster.Nodes(3), kafkacluster.SASLSSL(),
		kafkacluster.SCRAMUser(mirrorUser, mirrorPassword),
		kafkacluster.SCRAMUser(nobodyUser, nobodyPassword),
		kafkacluster.BrokerConfig("default.replication.factor", "3"),
		kafkacluster.BrokerConfig("min.insync.replicas", "2"),
		kafkacluster.BrokerConfig("offsets.topic.num.partitions", "3"),
		kafkacluster.BrokerConfig("transaction.state.log.num.partitions", "3"),
		// A killed node is fenced, and its partitions get a new leader,
		// within seconds rather than nine.
		kafkacluster.BrokerConfig("broker.session.timeout.ms", "3000"),
		kafkacluster.BrokerConfig("broker.heartbeat.interval.ms", "500"),
		// The tests decide leadership.
		kafkacluster.BrokerConfig("auto.leader.rebalance.enable", "false"),
		// The cleaner looks for work often (default 15 s).
		kafkacluster.BrokerConfig("log.cleaner.backoff.ms", "100"),
	)
	s := &source{kc: kc, t: t}
	s.tool(t, "org.apache.kafka.tools.AclCommand", s.adminArgs("--add",
		"--allow-principal", "User:"+mirrorUser,
		"--operation", "Read", "--operation", "Describe", "--operation", "DescribeConfigs", "--topic", "*")...)
	s.tool(t, "org.apache.kafka.tools.AclCommand", s.adminArgs("--add",
		"--allow-principal", "User:"+mirrorUser, "--operation", "Describe", "--group", "*", "--cluster")...)
	return s
}

// forTest returns the source seen from t: the cluster's methods fail t.
func (s *source) forTest(t *testing.T) *source { return &source{kc: s.kc.For(t), t: t} }

// adminArgs prefixes a Kafka admin tool's arguments with the bootstrap
// servers and the admin's client config.
func (s *source) adminArgs(args ...string) []string {
	return append([]string{"--bootstrap-server", s.kc.Bootstrap(), "--command-config", s.kc.ClientProperties()}, args...)
}

// tool runs a Kafka tool and fails the test unless it exits 0.
func (s *source) tool(t testing.TB, class string, args ...string) kafkacluster.ToolResult {
	t.Helper()
	res := kafkacluster.RunTool(t, class, args...)
	if res.ExitCode != 0 {
		t.Fatalf("%s %s exited %d\nstdout:\n%s\nstderr:\n%s", shortClass(class), strings.Join(args, " "), res.ExitCode, res.Stdout, res.Stderr)
	}
	return res
}

func shortClass(class string) string { return class[strings.LastIndex(class, ".")+1:] }

// client returns an admin-authenticated franz-go client of the source.
func (s *source) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	return s.kc.Client(t, opts...)
}

func (s *source) admin(t testing.TB) *kadm.Client { return kadm.NewClient(s.client(t)) }

// createTopic creates a topic on the source (replication factor 3) with
// configs, and waits until every partition has a leader.
func (s *source) createTopic(t testing.TB, topic string, partitions int32, configs map[string]string) {
	t.Helper()
	cfg := map[string]*string{}
	for k, v := range configs {
		cfg[k] = &v
	}
	adm := s.admin(t)
	resp, err := adm.CreateTopic(ctxFor(t), partitions, -1, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s on the source: %v", topic, err)
	}
	poll(t, topic+" has leaders on the source", func() (bool, string) {
		md, err := adm.Metadata(ctxFor(t), topic)
		if err != nil {
			return false, err.Error()
		}
		td := md.Topics[topic]
		if td.Err != nil || len(td.Partitions) != int(partitions) {
			return false, fmt.Sprintf("%v, %d partitions", td.Err, len(td.Partitions))
		}
		for _, p := range td.Partitions {
			if p.Leader < 0 {
				return false, fmt.Sprintf("partition %d has no leader", p.Partition)
			}
		}
		return true, ""
	})
}

// mirrorProps are the mirror properties that reach the source as user,
// over SASL_SSL with SCRAM-SHA-512, trusting the generated CA (a PEM trust
// store, as a Java client is configured).
func (s *source) mirrorProps(user, password string) map[string]string {
	return map[string]string{
		"bootstrap.servers":       s.kc.Bootstrap(),
		"security.protocol":       "SASL_SSL",
		"sasl.mechanism":          "SCRAM-SHA-512",
		"sasl.jaas.config":        fmt.Sprintf(`org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, user, password),
		"ssl.truststore.type":     "PEM",
		"ssl.truststore.location": s.kc.CAFile(),
	}
}

// producerConfig writes a Java producer config file: the admin's client
// settings and extra (key=value lines).
func (s *source) producerConfig(t testing.TB, extra ...string) string {
	t.Helper()
	base, err := os.ReadFile(s.kc.ClientProperties())
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "producer.properties")
	if err := os.WriteFile(f, append(base, []byte(strings.Join(extra, "\n")+"\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// ctxFor returns a context for one wait's requests, cancelled when the
// test ends.
func ctxFor(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// poll calls cond (every 50 ms: the clusters change on their own, there is
// no event to wait on from outside) until it holds, failing the test with
// its last reason after waitTimeout.
func poll(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	pollFor(t, waitTimeout, what, cond)
}

func pollFor(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", d, what, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
