package kafkatools

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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

// TestConfigs runs kafka-configs on topics, one broker, the broker
// defaults and SCRAM users.
func TestConfigs(t *testing.T) {
	c := cluster(t)
	bs := c.Bootstrap()
	const cmd = "org.apache.kafka.tools.ConfigCommand"
	tool(t, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bs, "--create", "--topic", "conf", "--partitions", "1", "--replication-factor", "3")
	out := tool(t, cmd, "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", "conf", "--alter", "--add-config", "retention.ms=5000,segment.bytes=1048576")
	wantLines(t, "alter topic", out, `^Completed updating config for topic conf\.$`)
	out = tool(t, cmd, "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", "conf", "--describe")
	wantLines(t, "describe topic", out,
		`^Dynamic configs for topic conf are:$`,
		`^\s+retention.ms=5000 sensitive=false synonyms=\{DYNAMIC_TOPIC_CONFIG:retention.ms=5000, DEFAULT_CONFIG:log.retention.hours=168\}$`,
		`^\s+segment.bytes=1048576 sensitive=false`)
	tool(t, cmd, "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", "conf", "--alter", "--delete-config", "segment.bytes")
	out = tool(t, cmd, "--bootstrap-server", bs, "--entity-type", "topics", "--entity-name", "conf", "--describe")
	if strings.Contains(out, "segment.bytes") {
		t.Errorf("segment.bytes still set after --delete-config:\n%s", out)
	}

	out = tool(t, cmd, "--bootstrap-server", bs, "--entity-type", "brokers", "--entity-name", "2", "--alter", "--add-config", "log.cleaner.threads=2")
	wantLines(t, "alter broker", out, `^Completed updating config for broker 2\.$`)
	out = tool(t, cmd, "--bootstrap-server", bs, "--entity-type", "brokers", "--entity-name", "2", "--describe")
	wantLines(t, "describe broker", out, `^Dynamic configs for broker 2 are:$`,
		`^\s+log.cleaner.threads=2 sensitive=false synonyms=\{DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, DEFAULT_CONFIG:log.cleaner.threads=1\}$`)
	out = tool(t, cmd, "--bootstrap-server", bs, "--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "log.retention.ms=99999999")
	wantLines(t, "alter broker default", out, `^Completed updating default config for brokers in the cluster\.$`)
	out = tool(t, cmd, "--bootstrap-server", bs, "--entity-type", "brokers", "--entity-default", "--describe")
	wantLines(t, "describe broker default", out, `^\s+log.retention.ms=99999999 sensitive=false`)
	r := kafkacluster.RunTool(t, cmd, "--bootstrap-server", bs, "--entity-type", "brokers", "--entity-name", "2", "--alter", "--add-config", "no.such.config=1")
	if r.ExitCode == 0 {
		t.Errorf("an unknown broker config was accepted:\n%s%s", r.Stdout, r.Stderr)
	}

	// SCRAM credentials and client quotas of users and client ids.
	out = tool(t, cmd, "--bootstrap-server", bs, "--entity-type", "users", "--entity-name", "alice", "--alter",
		"--add-config", "SCRAM-SHA-256=[iterations=8192,password=alice-secret]")
	wantLines(t, "alter user", out, `^Completed updating config for user alice\.$`)
	out = tool(t, cmd, "--bootstrap-server", bs, "--entity-type", "users", "--entity-name", "alice", "--alter",
		"--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")
	wantLines(t, "alter user quotas", out, `^Completed updating config for user alice\.$`)
	out = tool(t, cmd, "--bootstrap-server", bs, "--entity-type", "clients", "--entity-default", "--alter", "--add-config", "request_percentage=50")
	wantLines(t, "alter the default client-id's quota", out, `^Completed updating default config for clients in the cluster\.$`)
	r = kafkacluster.RunTool(t, cmd, "--bootstrap-server", bs, "--entity-type", "users", "--entity-name", "alice", "--alter", "--add-config", "producer_byte_rate=1.5")
	if r.ExitCode == 0 || !strings.Contains(r.Stdout+r.Stderr, "InvalidRequestException: Quota producer_byte_rate must be a whole number") {
		t.Errorf("a fractional byte rate: exit %d %s%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	tool(t, cmd, "--bootstrap-server", bs, "--entity-type", "users", "--entity-name", "alice", "--alter", "--delete-config", "consumer_byte_rate")
	waitFor(t, "alice's quotas and credential described", func() bool {
		out = tool(t, cmd, "--bootstrap-server", bs, "--entity-type", "users", "--entity-name", "alice", "--describe")
		return strings.Contains(out, "Quota configs for user-principal 'alice' are producer_byte_rate=1048576.0\n") &&
			strings.Contains(out, "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192")
	})
	out = tool(t, cmd, "--bootstrap-server", bs, "--entity-type", "clients", "--entity-default", "--describe")
	wantLines(t, "describe the default client-id", out, `^Quota configs for the default client-id are request_percentage=50\.0$`)

	// (Another broker may apply the change a moment later.)
	var last string
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := c.Admin(t).DescribeUserSCRAMs(t.Context(), "alice")
		ds, ok := d["alice"]
		if err == nil && ok && ds.Err == nil && len(ds.CredInfos) == 1 && ds.CredInfos[0].Iterations == 8192 {
			break
		}
		last = fmt.Sprintf("%v %+v", err, d)
		if time.Now().After(deadline) {
			t.Fatalf("alice's SCRAM credentials: %s", last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestOffsetsRecordsAndGroups produces with kafka-console-producer, reads
// offsets with kafka-get-offsets, deletes records with
// kafka-delete-records, consumes in a group with kafka-console-consumer,
// and describes, resets and deletes the group with kafka-consumer-groups;
// kafka-leader-election runs a preferred election.
func TestOffsetsRecordsAndGroups(t *testing.T) {
	c := cluster(t)
	bs := c.Bootstrap()
	tool(t, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bs, "--create", "--topic", "recs",
		"--replica-assignment", "1:2:3,2:3:1")
	r := kafkacluster.RunToolInput(t, "a\nb\nc\nd\n", "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", bs, "--topic", "recs",
		"--property", "parse.key=false", "--producer-property", "partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner")
	if r.ExitCode != 0 {
		t.Fatalf("console producer: %d %s", r.ExitCode, r.Stderr)
	}
	out := tool(t, "org.apache.kafka.tools.GetOffsetShell", "--bootstrap-server", bs, "--topic", "recs")
	wantLines(t, "get-offsets", out, `^recs:0:2$`, `^recs:1:2$`)

	offsets := t.TempDir() + "/delete.json"
	if err := os.WriteFile(offsets, []byte(`{"partitions":[{"topic":"recs","partition":0,"offset":1}],"version":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out = tool(t, "org.apache.kafka.tools.DeleteRecordsCommand", "--bootstrap-server", bs, "--offset-json-file", offsets)
	wantLines(t, "delete-records", out, `^partition: recs-0\s+low_watermark: 1$`)
	out = tool(t, "org.apache.kafka.tools.GetOffsetShell", "--bootstrap-server", bs, "--topic", "recs", "--time", "-2")
	wantLines(t, "earliest offsets", out, `^recs:0:1$`, `^recs:1:0$`)

	out = tool(t, "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", bs, "--topic", "recs", "--group", "g1",
		"--from-beginning", "--max-messages", "3", "--timeout-ms", "60000")
	if n := len(strings.Fields(out)); n != 3 {
		t.Errorf("the console consumer printed %d records, want 3:\n%s", n, out)
	}
	const groups = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
	out = tool(t, groups, "--bootstrap-server", bs, "--list")
	wantLines(t, "groups --list", out, `^g1$`)
	out = tool(t, groups, "--bootstrap-server", bs, "--describe", "--group", "g1")
	wantLines(t, "groups --describe", out,
		`^GROUP\s+TOPIC\s+PARTITION\s+CURRENT-OFFSET\s+LOG-END-OFFSET\s+LAG`,
		`^g1\s+recs\s+[01]\s+[12]\s+2\s+[01]\s+-`)
	out = tool(t, groups, "--bootstrap-server", bs, "--reset-offsets", "--group", "g1", "--topic", "recs", "--to-earliest", "--execute")
	wantLines(t, "reset --to-earliest", out, `^g1\s+recs\s+0\s+1$`, `^g1\s+recs\s+1\s+0$`)
	out = tool(t, groups, "--bootstrap-server", bs, "--reset-offsets", "--group", "g1", "--topic", "recs", "--to-datetime", "2100-01-01T00:00:00.000", "--execute")
	wantLines(t, "reset --to-datetime (after every record: the log end)", out, `^g1\s+recs\s+0\s+2$`, `^g1\s+recs\s+1\s+2$`)
	out = tool(t, groups, "--bootstrap-server", bs, "--reset-offsets", "--group", "g1", "--topic", "recs", "--to-datetime", "2000-01-01T00:00:00.000", "--execute")
	wantLines(t, "reset --to-datetime (before every record: the first)", out, `^g1\s+recs\s+0\s+1$`, `^g1\s+recs\s+1\s+0$`)
	out = tool(t, groups, "--bootstrap-server", bs, "--reset-offsets", "--group", "g1", "--topic", "recs", "--shift-by", "1", "--execute")
	wantLines(t, "reset --shift-by", out, `^g1\s+recs\s+0\s+2$`, `^g1\s+recs\s+1\s+1$`)
	out = tool(t, groups, "--bootstrap-server", bs, "--delete-offsets", "--group", "g1", "--topic", "recs:1")
	wantLines(t, "delete-offsets", out, `^recs\s+1\s+Successful`)
	out = tool(t, groups, "--bootstrap-server", bs, "--delete", "--group", "g1")
	wantLines(t, "groups --delete", out, `Deletion of requested consumer groups \('g1'\) was successful\.`)

	out = tool(t, "org.apache.kafka.tools.LeaderElectionCommand", "--bootstrap-server", bs, "--election-type", "preferred", "--topic", "recs", "--partition", "0")
	wantLines(t, "leader-election", out, `Valid replica already elected for partitions recs-0|Successfully completed leader election \(PREFERRED\) for partitions recs-0`)
}

// TestACLs runs kafka-acls: add a prefixed ACL, list it, remove it.
func TestACLs(t *testing.T) {
	c := cluster(t)
	bs := c.Bootstrap()
	const cmd = "org.apache.kafka.tools.AclCommand"
	out := tool(t, cmd, "--bootstrap-server", bs, "--add", "--allow-principal", "User:bob", "--operation", "Read",
		"--topic", "pre-", "--resource-pattern-type", "prefixed")
	wantLines(t, "acls --add", out, "^Adding ACLs for resource `ResourcePattern\\(resourceType=TOPIC, name=pre-, patternType=PREFIXED\\)`")
	out = tool(t, cmd, "--bootstrap-server", bs, "--list", "--topic", "pre-", "--resource-pattern-type", "prefixed")
	wantLines(t, "acls --list", out, `^\s+\(principal=User:bob, host=\*, operation=READ, permissionType=ALLOW\)$`)
	tool(t, cmd, "--bootstrap-server", bs, "--remove", "--force", "--allow-principal", "User:bob", "--operation", "Read",
		"--topic", "pre-", "--resource-pattern-type", "prefixed")
	out = tool(t, cmd, "--bootstrap-server", bs, "--list")
	if strings.Contains(out, "User:bob") {
		t.Errorf("bob's ACL listed after its removal:\n%s", out)
	}
}

// TestTransactions runs kafka-transactions on an open transaction of a
// franz-go producer: list, describe and describe-producers show it,
// find-hanging does not count it as hanging (it is younger than the
// transaction timeout), and abort (at the start offset describe-producers
// gives) ends it, so that the last stable offset reaches the log end.
func TestTransactions(t *testing.T) {
	c := cluster(t)
	bs := c.Bootstrap()
	tool(t, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bs, "--create", "--topic", "tx", "--replica-assignment", "1:2:3")
	cl := c.Client(t, kgo.TransactionalID("tools-tx"), kgo.DefaultProduceTopic("tx"), kgo.TransactionTimeout(time.Minute))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(t.Context(), &kgo.Record{Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	const cmd = "org.apache.kafka.tools.TransactionsCommand"
	out := tool(t, cmd, "--bootstrap-server", bs, "list")
	wantLines(t, "transactions list", out, `^tools-tx\s+[123]\s+[0-9]+\s+Ongoing`)
	out = tool(t, cmd, "--bootstrap-server", bs, "describe", "--transactional-id", "tools-tx")
	wantLines(t, "transactions describe", out, `Ongoing`, `tx-0`)
	out = tool(t, cmd, "--bootstrap-server", bs, "describe-producers", "--topic", "tx", "--partition", "0")
	wantLines(t, "describe-producers", out, `^ProducerId\s+ProducerEpoch\s+LatestCoordinatorEpoch\s+LastSequence\s+LastTimestamp\s+CurrentTransactionStartOffset`,
		`^[0-9]+\s+[0-9]+\s+-?[0-9]+\s+0\s+[0-9]+\s+0\s*$`)
	out = tool(t, cmd, "--bootstrap-server", bs, "find-hanging", "--broker-id", "1")
	wantLines(t, "find-hanging", out, `^Topic\s+Partition\s+ProducerId\s+ProducerEpoch\s+CoordinatorEpoch\s+StartOffset`)
	if strings.Contains(out, "tx\t") || strings.Contains(out, "tx ") {
		t.Errorf("find-hanging counts a young open transaction as hanging:\n%s", out)
	}
	tool(t, cmd, "--bootstrap-server", bs, "abort", "--topic", "tx", "--partition", "0", "--start-offset", "0")
	waitFor(t, "the last stable offset at the log end", func() bool {
		lso, err := c.Admin(t).ListCommittedOffsets(t.Context(), "tx")
		if err != nil {
			return false
		}
		o, _ := lso.Lookup("tx", 0)
		return o.Err == nil && o.Offset == 2 // the record and the ABORT marker
	})
}

// waitFor polls cond until it holds or 30 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReassignPartitions runs kafka-reassign-partitions: --generate a plan
// for moving a topic to brokers 2 and 3, --execute it with a --throttle,
// and --verify until it is complete (which also removes the throttle).
func TestReassignPartitions(t *testing.T) {
	c := cluster(t)
	bs := c.Bootstrap()
	tool(t, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bs, "--create", "--topic", "mv", "--replica-assignment", "1:2,1:2")
	dir := t.TempDir()
	topics := dir + "/topics.json"
	if err := os.WriteFile(topics, []byte(`{"topics":[{"topic":"mv"}],"version":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	const cmd = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
	out := tool(t, cmd, "--bootstrap-server", bs, "--generate", "--topics-to-move-json-file", topics, "--broker-list", "2,3")
	wantLines(t, "--generate", out, `^Current partition replica assignment$`, `^Proposed partition reassignment configuration$`)
	plan := dir + "/plan.json"
	// The proposal is the last line; a plan of our own keeps the test
	// independent of the tool's random placement.
	if err := os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[2,3],"log_dirs":["any","any"]},{"topic":"mv","partition":1,"replicas":[3,2],"log_dirs":["any","any"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out = tool(t, cmd, "--bootstrap-server", bs, "--execute", "--reassignment-json-file", plan, "--throttle", "10000000")
	wantLines(t, "--execute", out, `^Successfully started partition reassignments for mv-0,mv-1$`, `Warning: You must run --verify periodically`)
	var verify string
	waitFor(t, "the reassignment complete", func() bool {
		verify = tool(t, cmd, "--bootstrap-server", bs, "--verify", "--reassignment-json-file", plan)
		return strings.Contains(verify, "Reassignment of partition mv-0 is completed.") && strings.Contains(verify, "Reassignment of partition mv-1 is completed.")
	})
	wantLines(t, "--verify", verify, `^Clearing broker-level throttles on brokers 1,2,3$`, `^Clearing topic-level throttles on topic mv$`)
	out = tool(t, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", bs, "--describe", "--topic", "mv")
	wantLines(t, "describe after the move", out, `Partition: 0\s+Leader: [23]\s+Replicas: 2,3\s`, `Partition: 1\s+Leader: [23]\s+Replicas: 3,2\s`)
}
