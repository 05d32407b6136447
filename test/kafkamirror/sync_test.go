package kafkamirror_test

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster/kafkacluster"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// consumed is a record a ConsoleConsumer printed.
type consumed struct {
	partition int32
	offset    int64
	value     string
}

var consoleLine = regexp.MustCompile(`^Partition:(\d+)\s+Offset:(\d+)\s+(.*)$`)

// consoleConsume runs Kafka's ConsoleConsumer (kafka-console-consumer) in
// group on topic until it printed max records, from the beginning when
// the group has no offsets; config is a --command-config file ("" for
// none). The consumer commits its position when it closes.
func consoleConsume(t testing.TB, bootstrap, config, topic, group string, max int) []consumed {
	t.Helper()
	args := []string{"--bootstrap-server", bootstrap, "--topic", topic, "--group", group, "--from-beginning",
		"--max-messages", strconv.Itoa(max), "--timeout-ms", "60000",
		"--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true"}
	if config != "" {
		args = append(args, "--command-config", config)
	}
	res := kafkacluster.RunTool(t, "org.apache.kafka.tools.consumer.ConsoleConsumer", args...)
	if res.ExitCode != 0 {
		t.Fatalf("ConsoleConsumer exited %d\nstdout:\n%s\nstderr:\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	var out []consumed
	for line := range strings.SplitSeq(strings.TrimSpace(res.Stdout), "\n") {
		m := consoleLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("ConsoleConsumer printed %q", line)
		}
		p, _ := strconv.Atoi(m[1])
		o, _ := strconv.ParseInt(m[2], 10, 64)
		out = append(out, consumed{int32(p), o, m[3]})
	}
	if len(out) != max {
		t.Fatalf("ConsoleConsumer printed %d records, want %d\n%s", len(out), max, res.Stderr)
	}
	return out
}

// groupOffsets returns a group's committed offsets of topic by partition
// ("offset/epoch").
func groupOffsets(t testing.TB, adm *kadm.Client, group, topic string) map[int32]string {
	t.Helper()
	os, err := adm.FetchOffsets(ctxFor(t), group)
	if err != nil {
		return nil
	}
	out := map[int32]string{}
	os.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil && o.At >= 0 {
			out[o.Partition] = fmt.Sprintf("%d/%d", o.At, o.LeaderEpoch)
		}
	})
	return out
}

// aclLines lists a cluster's ACLs as "principal operation permission
// type:pattern:name" (DescribeAcls with ANY filters).
func aclLines(t testing.TB, cl *kgo.Client) []string {
	t.Helper()
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctxFor(t), cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("describe ACLs: %v", err)
	}
	var out []string
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			out = append(out, fmt.Sprintf("%s %s %s %s:%s:%s", a.Principal, a.Operation, a.PermissionType, r.ResourceType, r.ResourcePatternType, r.ResourceName))
		}
	}
	slices.Sort(out)
	return out
}

// testSync (issue 13 item 4): the mirror reaches the source over SASL_SSL
// with SCRAM-SHA-512, verifying its certificate against the generated CA.
// A group's offsets committed by Kafka's ConsoleConsumer are synced with
// their leader epochs; a group with a live member on kmirror keeps its own
// offsets until the member leaves (docs/mirroring.md, Sync); ACLs created
// with kafka-acls on the source's StandardAuthorizer — literal and
// prefixed topic ACLs and group ACLs in scope, a topic that is not
// mirrored out of scope — are synced, and one removed there is removed
// here.
func testSync(t *testing.T, s *source) {
	const topic = "sync-orders"
	s.createTopic(t, topic, 3, nil)
	produce := s.client(t, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	var rs []*kgo.Record
	for i := range 300 {
		rs = append(rs, &kgo.Record{Value: fmt.Appendf(nil, "order-%d", i)})
	}
	if err := produce.ProduceSync(ctxFor(t), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	d := startDest(t, 1, nil)
	d.mirror(t, s, "kafka", nil, topic)
	d.waitStates(t, "kafka", mirroradmin.StateMirroring, 3, topic)
	m, err := d.describe(t, "kafka")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range m.Configs {
		if c.Name == "sasl.jaas.config" && (!c.Sensitive || c.Value != nil) {
			t.Errorf("describe returns sasl.jaas.config: %+v", c)
		}
		if c.Name == "security.protocol" && (c.Value == nil || *c.Value != "SASL_SSL") {
			t.Errorf("security.protocol: %+v", c)
		}
	}
	waitSameLogs(t, s, d, topic, 3)
	sadm, dadm, dcl := s.admin(t), d.admin(t), d.client(t)
	config := s.kc.ClientProperties()

	// A live member here holds "active" while the source's group moves.
	member := d.client(t, kgo.ConsumerGroup("active"), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	polled := pollRecords(t, member, 10)
	if err := member.CommitRecords(ctxFor(t), polled...); err != nil {
		t.Fatalf("commit on kmirror: %v", err)
	}
	mine := groupOffsets(t, dadm, "active", topic)
	if len(mine) == 0 {
		t.Fatal("no offsets committed on kmirror")
	}

	// ConsoleConsumer commits on the source.
	consoleConsume(t, s.kc.Bootstrap(), config, topic, "java-group", 120)
	consoleConsume(t, s.kc.Bootstrap(), config, topic, "active", 200)
	want := groupOffsets(t, sadm, "java-group", topic)
	if len(want) == 0 {
		t.Fatal("ConsoleConsumer committed nothing on the source")
	}
	poll(t, "java-group's offsets synced", func() (bool, string) {
		got := groupOffsets(t, dadm, "java-group", topic)
		return maps.Equal(got, want), fmt.Sprintf("kmirror %v, Kafka %v", got, want)
	})
	d.waitSyncRounds(t, "kafka", "group-offsets")
	if got := groupOffsets(t, dadm, "active", topic); !maps.Equal(got, mine) {
		t.Errorf("the sync overwrote the offsets of a group with a member on kmirror: %v, committed %v", got, mine)
	}
	member.Close() // leaves the group: the sync takes it over
	wantActive := groupOffsets(t, sadm, "active", topic)
	// (A partition Kafka has no offset of keeps kmirror's: the sync sets
	// offsets, it deletes none.)
	poll(t, "active's offsets synced once its member left", func() (bool, string) {
		got := groupOffsets(t, dadm, "active", topic)
		for p, o := range wantActive {
			if got[p] != o {
				return false, fmt.Sprintf("kmirror %v, Kafka %v", got, wantActive)
			}
		}
		return true, ""
	})

	// ACLs.
	s.tool(t, "org.apache.kafka.tools.AclCommand", s.adminArgs("--add", "--allow-principal", "User:app",
		"--operation", "Read", "--topic", topic, "--topic", "not-mirrored", "--group", "java-group")...)
	s.tool(t, "org.apache.kafka.tools.AclCommand", s.adminArgs("--add", "--allow-principal", "User:app",
		"--operation", "Write", "--topic", "sync-ord", "--resource-pattern-type", "prefixed")...)
	synced := []string{
		"User:app READ ALLOW GROUP:LITERAL:java-group",
		"User:app READ ALLOW TOPIC:LITERAL:sync-orders",
		"User:app WRITE ALLOW TOPIC:PREFIXED:sync-ord",
	}
	poll(t, "the ACLs synced", func() (bool, string) {
		got := aclLines(t, dcl)
		m, _ := d.describe(t, "kafka")
		return slices.Equal(got, synced), fmt.Sprintf("kmirror %v (sync %+v)", got, syncOf(m, "acls"))
	})
	s.tool(t, "org.apache.kafka.tools.AclCommand", s.adminArgs("--remove", "--force", "--allow-principal", "User:app",
		"--operation", "Read", "--topic", topic)...)
	poll(t, "the removed ACL removed", func() (bool, string) {
		got := aclLines(t, dcl)
		return slices.Equal(got, []string{synced[0], synced[2]}), fmt.Sprintf("kmirror %v", got)
	})
}

// pollRecords polls a consumer until it returned n records.
func pollRecords(t testing.TB, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	ctx := ctxFor(t)
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollRecords(ctx, n-len(out))
		if err := ctx.Err(); err != nil {
			t.Fatalf("polled %d of %d records: %v", len(out), n, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s-%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}
