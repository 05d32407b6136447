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
