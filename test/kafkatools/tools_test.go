package kafkatools

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/testcluster/kafkacluster"
)

func TestMain(m *testing.M) { os.Exit(testcluster.Main(m)) }

// cluster starts a three-node kmirror cluster for one test (in-process
// nodes start in well under a second; the tools' JVMs take longer).
func cluster(t *testing.T) *testcluster.Cluster {
	t.Helper()
	return testcluster.Start(t, testcluster.Nodes(3),
		testcluster.Config("default.replication.factor", "3"),
		testcluster.Config("offsets.topic.replication.factor", "3"),
		testcluster.Config("offsets.topic.num.partitions", "3"),
		testcluster.Config("transaction.state.log.num.partitions", "3"),
		testcluster.Config("group.initial.rebalance.delay.ms", "0"))
}

// tool runs a Kafka tool and fails the test unless it exits 0; it returns
// what the tool printed on stdout.
func tool(t *testing.T, mainClass string, args ...string) string {
	t.Helper()
	r := kafkacluster.RunTool(t, mainClass, args...)
	if r.ExitCode != 0 {
		t.Fatalf("%s %s: exit %d\nstdout:\n%s\nstderr:\n%s", mainClass, strings.Join(args, " "), r.ExitCode, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// wantLines fails unless out has a line matching each pattern.
func wantLines(t *testing.T, what, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(`(?m)` + p).MatchString(out) {
			t.Errorf("%s: no line matches %q in:\n%s", what, p, out)
		}
	}
}

// TestMetadataQuorum runs kafka-metadata-quorum describe --status and
// --replication: the leader, its epoch and high watermark, the three
// voters with their controller endpoints, and each voter's log end and lag.
func TestMetadataQuorum(t *testing.T) {
	c := cluster(t)
	bs := c.Bootstrap()
	status := tool(t, "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server", bs, "describe", "--status")
	wantLines(t, "describe --status", status,
		`^ClusterId:\s+`+regexp.QuoteMeta(c.ClusterID())+`$`,
		`^LeaderId:\s+[123]$`,
		`^LeaderEpoch:\s+[1-9][0-9]*$`,
		`^HighWatermark:\s+[1-9][0-9]*$`,
		`^CurrentVoters:\s+\[\{"id": 1, "endpoints": \["CONTROLLER://`,
		`"id": 2`, `"id": 3`,
		`^CurrentObservers:\s+\[\]$`)
	repl := tool(t, "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server", bs, "describe", "--replication")
	wantLines(t, "describe --replication", repl,
		`^NodeId\s+DirectoryId\s+LogEndOffset\s+Lag\s+LastFetchTimestamp\s+LastCaughtUpTimestamp\s+Status`,
		`^[123]\s+\S+\s+[1-9][0-9]*\s+0\s+[0-9]+\s+[0-9]+\s+Leader`)
	if n := len(regexp.MustCompile(`(?m)^[123]\s+\S+\s+[0-9]+\s+[0-9]+\s+[0-9]+\s+-?[0-9]+\s+(Leader|Follower)\s*$`).FindAllString(repl, -1)); n != 3 {
		t.Errorf("describe --replication lists %d voters, want 3:\n%s", n, repl)
	}
}

// TestTopics runs kafka-topics: create with configs and a replica
// assignment, list, describe, alter the partition count, delete.
func TestTopics(t *testing.T) {
	c := cluster(t)
	bs := c.Bootstrap()
	const cmd = "org.apache.kafka.tools.TopicCommand"
	out := tool(t, cmd, "--bootstrap-server", bs, "--create", "--topic", "orders",
		"--replica-assignment", "1:2:3,2:3:1", "--config", "retention.ms=123456", "--config", "cleanup.policy=compact")
	wantLines(t, "create", out, `^Created topic orders\.$`)
	out = tool(t, cmd, "--bootstrap-server", bs, "--create", "--topic", "plain", "--partitions", "2", "--replication-factor", "2")
	wantLines(t, "create plain", out, `^Created topic plain\.$`)
	r := kafkacluster.RunTool(t, cmd, "--bootstrap-server", bs, "--create", "--topic", "orders", "--partitions", "1")
	if r.ExitCode == 0 || !strings.Contains(r.Stdout+r.Stderr, "already exists") {
		t.Errorf("creating orders again: exit %d, %s%s", r.ExitCode, r.Stdout, r.Stderr)
	}

	out = tool(t, cmd, "--bootstrap-server", bs, "--list")
	wantLines(t, "list", out, `^orders$`, `^plain$`)

	out = tool(t, cmd, "--bootstrap-server", bs, "--describe", "--topic", "orders")
	wantLines(t, "describe", out,
		`^Topic: orders\s+TopicId: \S+\s+PartitionCount: 2\s+ReplicationFactor: 3\s+Configs: .*cleanup.policy=compact`,
		`retention.ms=123456`,
		`^\s+Topic: orders\s+Partition: 0\s+Leader: 1\s+Replicas: 1,2,3\s+Isr: [123],[123],[123]`,
		`^\s+Topic: orders\s+Partition: 1\s+Leader: 2\s+Replicas: 2,3,1\s+Isr: [123],[123],[123]`)

	tool(t, cmd, "--bootstrap-server", bs, "--alter", "--topic", "orders", "--partitions", "4")
	out = tool(t, cmd, "--bootstrap-server", bs, "--describe", "--topic", "orders")
	wantLines(t, "describe after alter", out, `PartitionCount: 4`, `Partition: 3\s+Leader: [123]`)
	r = kafkacluster.RunTool(t, cmd, "--bootstrap-server", bs, "--alter", "--topic", "orders", "--partitions", "2")
	if r.ExitCode == 0 || !strings.Contains(r.Stdout+r.Stderr, "InvalidPartitionsException") {
		t.Errorf("shrinking orders: exit %d, %s%s", r.ExitCode, r.Stdout, r.Stderr)
	}

	tool(t, cmd, "--bootstrap-server", bs, "--delete", "--topic", "plain")
	out = tool(t, cmd, "--bootstrap-server", bs, "--list")
	if regexp.MustCompile(`(?m)^plain$`).MatchString(out) {
		t.Errorf("plain listed after its deletion:\n%s", out)
	}
}

// TestClusterTools runs kafka-cluster cluster-id, kafka-broker-api-versions,
// kafka-features describe and kafka-log-dirs.
func TestClusterTools(t *testing.T) {
	c := cluster(t)
	bs := c.Bootstrap()
	out := tool(t, "org.apache.kafka.tools.ClusterTool", "cluster-id", "--bootstrap-server", bs)
	wantLines(t, "cluster-id", out, `^Cluster ID: `+regexp.QuoteMeta(c.ClusterID())+`$`)

	out = tool(t, "org.apache.kafka.tools.BrokerApiVersionsCommand", "--bootstrap-server", bs)
	wantLines(t, "broker-api-versions", out,
		`\(id: 1 rack: null isFenced: false\) -> \(`, `\(id: 2 `, `\(id: 3 `,
		`Produce\(0\): 3 to 11 \[usable: \d+\]`, `Fetch\(1\): 4 to 17 \[usable: \d+\]`,
		`DescribeQuorum\(55\): 0 to 2 \[usable: 2\]`)

	out = tool(t, "org.apache.kafka.tools.FeatureCommand", "--bootstrap-server", bs, "describe")
	wantLines(t, "features describe", out, `^Feature: kmirror.mirror.version\s+SupportedMinVersion: 1\s+SupportedMaxVersion: 1`)

	out = tool(t, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bs, "--create", "--topic", "dirs", "--partitions", "1", "--replication-factor", "3")
	wantLines(t, "create dirs", out, `^Created topic dirs\.$`)
	out = tool(t, "org.apache.kafka.tools.LogDirsCommand", "--bootstrap-server", bs, "--describe", "--topic-list", "dirs")
	wantLines(t, "log-dirs", out, `"broker":1`, `"broker":2`, `"broker":3`, `"partition":"dirs-0","size":0,"offsetLag":0,"isFuture":false`)
}
