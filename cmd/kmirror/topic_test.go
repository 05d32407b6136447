package main

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTopicCreateListDescribeDelete(t *testing.T) {
	bs := startNode(t)

	r := mustRun(t, "", "topic", "create", "orders", "--partitions", "3", "--replication-factor", "1",
		"--config", "retention.ms=60000", "--bootstrap-server", bs)
	rows := tableRows(r.stdout)
	if len(rows) != 2 || !slices.Equal(rows[0], []string{"TOPIC", "ID", "PARTITIONS", "REPLICATION-FACTOR", "STATUS"}) {
		t.Fatalf("create output:\n%s", r.stdout)
	}
	if got := rows[1]; got[0] != "orders" || got[2] != "3" || got[3] != "1" || got[4] != "created" || len(got[1]) != 22 {
		t.Fatalf("create row = %v, want orders, an id, 3 partitions, RF 1, created", got)
	}
	orderID := rows[1][1]

	created := decodeJSON[topicSummary](t, mustRun(t, "", "topic", "create", "events", "--partitions", "2",
		"-o", "json", "--bootstrap-server", bs).stdout)
	if created.Name != "events" || created.Partitions != 2 || created.ReplicationFactor != 1 || created.Status != "created" {
		t.Fatalf("create -o json = %+v", created)
	}

	// list: sorted, with ids that match what create reported.
	rows = tableRows(mustRun(t, "", "topic", "list", "--bootstrap-server", bs).stdout)
	if len(rows) != 3 || rows[1][0] != "events" || rows[2][0] != "orders" || rows[2][1] != orderID || rows[2][2] != "3" {
		t.Fatalf("list rows = %v", rows)
	}
	listed := decodeJSON[[]topicSummary](t, mustRun(t, "", "topic", "list", "-o", "json", "--bootstrap-server", bs).stdout)
	if len(listed) != 2 || listed[0].Name != "events" || listed[1].ID != orderID {
		t.Fatalf("list -o json = %+v", listed)
	}

	// describe: partitions with leader/epoch/replicas/ISR and only the
	// config set on the topic.
	descs := decodeJSON[[]topicDescription](t, mustRun(t, "", "topic", "describe", "orders",
		"-o", "json", "--bootstrap-server", bs).stdout)
	if len(descs) != 1 {
		t.Fatalf("describe returned %d topics", len(descs))
	}
	d := descs[0]
	if d.Name != "orders" || d.ID != orderID || len(d.Partitions) != 3 || d.ReplicationFactor != 1 {
		t.Fatalf("describe = %+v", d)
	}
	for i, p := range d.Partitions {
		if p.Partition != int32(i) || p.Leader < 0 || len(p.Replicas) != 1 || len(p.ISR) != 1 || p.Replicas[0] != p.Leader {
			t.Fatalf("partition %d = %+v", i, p)
		}
	}
	if len(d.Configs) != 1 || d.Configs[0].Name != "retention.ms" || d.Configs[0].Value == nil ||
		*d.Configs[0].Value != "60000" || d.Configs[0].Source != "DYNAMIC_TOPIC_CONFIG" {
		t.Fatalf("describe configs = %+v, want only retention.ms=60000 set on the topic", d.Configs)
	}
	table := mustRun(t, "", "topic", "describe", "orders", "--bootstrap-server", bs).stdout
	for _, want := range []string{"retention.ms", "60000", "DYNAMIC_TOPIC_CONFIG", "PARTITION", "LEADER", "EPOCH", "ISR"} {
		if !strings.Contains(table, want) {
			t.Fatalf("describe table lacks %q:\n%s", want, table)
		}
	}
	parts := 0
	for _, row := range tableRows(table) {
		if len(row) >= 6 && row[0] == "orders" && row[1] != orderID {
			parts++
		}
	}
	if parts != 3 {
		t.Fatalf("describe table shows %d partition rows, want 3:\n%s", parts, table)
	}

	// delete: gone from list, and deleting it again is an error.
	rows = tableRows(mustRun(t, "", "topic", "delete", "orders", "--bootstrap-server", bs).stdout)
	if len(rows) != 2 || !slices.Equal(rows[1], []string{"orders", "deleted"}) {
		t.Fatalf("delete rows = %v", rows)
	}
	// As in Kafka, a deletion reaches the brokers' metadata shortly after
	// the controller answers: poll for it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		listed = decodeJSON[[]topicSummary](t, mustRun(t, "", "topic", "list", "-o", "json", "--bootstrap-server", bs).stdout)
		if len(listed) == 1 && listed[0].Name == "events" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after delete, list = %+v", listed)
		}
	}
	f := mustFail(t, "", "topic", "delete", "orders", "--bootstrap-server", bs)
	if !strings.Contains(f.err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") || !strings.Contains(f.err.Error(), "orders") {
		t.Fatalf("second delete error = %v", f.err)
	}
	r = mustRun(t, "", "topic", "delete", "orders", "--if-exists", "--bootstrap-server", bs)
	if !strings.Contains(r.stdout, "absent") {
		t.Fatalf("delete --if-exists output:\n%s", r.stdout)
	}
}

func TestTopicCreateExisting(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "t", "--partitions", "4", "--bootstrap-server", bs)

	f := mustFail(t, "", "topic", "create", "t", "--partitions", "4", "--bootstrap-server", bs)
	if !strings.Contains(f.err.Error(), "TOPIC_ALREADY_EXISTS") {
		t.Fatalf("error = %v, want TOPIC_ALREADY_EXISTS", f.err)
	}
	got := decodeJSON[topicSummary](t, mustRun(t, "", "topic", "create", "t", "--if-not-exists",
		"-o", "json", "--bootstrap-server", bs).stdout)
	if got.Status != "exists" || got.Partitions != 4 {
		t.Fatalf("create --if-not-exists = %+v, want status exists with the real 4 partitions", got)
	}
}

func TestTopicCreateBrokerDefaults(t *testing.T) {
	bs := startNode(t)
	got := decodeJSON[topicSummary](t, mustRun(t, "", "topic", "create", "d", "-o", "json", "--bootstrap-server", bs).stdout)
	if got.Partitions < 1 || got.ReplicationFactor < 1 {
		t.Fatalf("create with broker defaults = %+v", got)
	}
}

func TestTopicCreateRejectsBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--partitions", "0"}, "invalid --partitions 0"},
		{[]string{"--replication-factor", "-3"}, "invalid --replication-factor -3"},
		{[]string{"--config", "novalue"}, `invalid --config "novalue"`},
		{[]string{"--config", "a=1", "--config", "a=2"}, `key "a" given twice`},
	} {
		args := append([]string{"topic", "create", "x", "--bootstrap-server", "127.0.0.1:1"}, tc.args...)
		f := mustFail(t, "", args...)
		if !strings.Contains(f.err.Error(), tc.want) {
			t.Errorf("%v: error = %v, want %q", tc.args, f.err, tc.want)
		}
	}
	if f := mustFail(t, "", "topic", "create", "--bootstrap-server", "127.0.0.1:1"); !strings.Contains(f.err.Error(), "arg") {
		t.Errorf("create without a name: %v", f.err)
	}
}

func TestTopicDescribeUnknownFailsButPrintsKnown(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "known", "--partitions", "1", "--bootstrap-server", bs)
	r := mustFail(t, "", "topic", "describe", "known", "missing", "-o", "json", "--bootstrap-server", bs)
	if !strings.Contains(r.err.Error(), "missing") || !strings.Contains(r.err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("error = %v", r.err)
	}
	descs := decodeJSON[[]topicDescription](t, r.stdout)
	if len(descs) != 1 || descs[0].Name != "known" {
		t.Fatalf("describe printed %+v, want the known topic", descs)
	}
}

func TestTopicAlterConfig(t *testing.T) {
	bs := startNode(t)
	mustRun(t, "", "topic", "create", "c", "--partitions", "1", "--config", "retention.ms=1000",
		"--config", "cleanup.policy=compact", "--bootstrap-server", bs)

	r := mustRun(t, "", "topic", "alter-config", "c", "--set", "retention.ms=2000", "--set", "segment.ms=3000",
		"--delete", "cleanup.policy", "--bootstrap-server", bs)
	rows := tableRows(r.stdout)
	want := [][]string{
		{"TOPIC", "CONFIG", "OPERATION", "VALUE"},
		{"c", "retention.ms", "set", "2000"},
		{"c", "segment.ms", "set", "3000"},
		{"c", "cleanup.policy", "delete"},
	}
	if !slices.EqualFunc(rows, want, slices.Equal) {
		t.Fatalf("alter-config rows = %v, want %v", rows, want)
	}

	// Incremental: configs not named (none here) stay; named ones change.
	descs := decodeJSON[[]topicDescription](t, mustRun(t, "", "topic", "describe", "c", "-o", "json", "--bootstrap-server", bs).stdout)
	got := map[string]string{}
	for _, c := range descs[0].Configs {
		got[c.Name] = *c.Value
	}
	if len(got) != 2 || got["retention.ms"] != "2000" || got["segment.ms"] != "3000" {
		t.Fatalf("configs after alter = %v, want retention.ms=2000 segment.ms=3000 and no cleanup.policy", got)
	}

	if f := mustFail(t, "", "topic", "alter-config", "c", "--bootstrap-server", bs); !strings.Contains(f.err.Error(), "nothing to alter") {
		t.Fatalf("alter without ops: %v", f.err)
	}
	if f := mustFail(t, "", "topic", "alter-config", "c", "--set", "a=1", "--delete", "a", "--bootstrap-server", bs); !strings.Contains(f.err.Error(), "both set and deleted") {
		t.Fatalf("set and delete of one key: %v", f.err)
	}
	f := mustFail(t, "", "topic", "alter-config", "nope", "--set", "retention.ms=1", "--bootstrap-server", bs)
	if !strings.Contains(f.err.Error(), "nope") || !strings.Contains(f.err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("alter of a missing topic: %v", f.err)
	}
}

func TestTopicUnreachableClusterFails(t *testing.T) {
	// A port that is bound but never answers: the command must give up by
	// --timeout and say where it tried.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	start := time.Now()
	r := runCLIContext(t, context.Background(), strings.NewReader(""), "topic", "list",
		"--bootstrap-server", ln.Addr().String(), "--timeout", "500ms")
	if r.err == nil {
		t.Fatal("list against a silent port succeeded")
	}
	if !strings.Contains(r.err.Error(), ln.Addr().String()) {
		t.Fatalf("error does not name the address: %v", r.err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("took %s despite --timeout 500ms", d)
	}
}

// TestCLIAgainstKfake runs the client commands against franz-go's kfake, a
// Kafka implementation nobody here wrote, so that the CLI stays a generic
// Kafka tool and does not lean on kmirror quirks.
func TestCLIAgainstKfake(t *testing.T) {
	bs := startCluster(t)
	mustRun(t, "", "topic", "create", "k", "--partitions", "2", "--config", "retention.ms=5000", "--bootstrap-server", bs)
	descs := decodeJSON[[]topicDescription](t, mustRun(t, "", "topic", "describe", "k", "-o", "json", "--bootstrap-server", bs).stdout)
	if len(descs) != 1 || len(descs[0].Partitions) != 2 || len(descs[0].Configs) != 1 || *descs[0].Configs[0].Value != "5000" {
		t.Fatalf("describe = %+v", descs)
	}
	mustRun(t, "x:1\ny:2\n", "produce", "k", "--key-separator", ":", "--compression", "zstd", "--bootstrap-server", bs)
	r := mustRun(t, "", "consume", "k", "--from-beginning", "--max-messages", "2", "--print-key", "--bootstrap-server", bs)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	slices.Sort(lines)
	if !slices.Equal(lines, []string{"x\t1", "y\t2"}) {
		t.Fatalf("consume printed %q", r.stdout)
	}
	mustRun(t, "", "topic", "delete", "k", "--bootstrap-server", bs)
}

func TestTopicIDIsKafkasForm(t *testing.T) {
	var id [16]byte
	for i := range id {
		id[i] = byte(0xf0 + i)
	}
	// URL-safe alphabet ("-", "_"), no padding: what Kafka's Uuid.toString prints.
	if got, want := topicID(id), "8PHy8_T19vf4-fr7_P3-_w"; got != want {
		t.Fatalf("topicID = %q, want %q", got, want)
	}
}
