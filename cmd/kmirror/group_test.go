package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// runGroupCLI runs `kmirror group ...` in-process with fresh flag state.
func runGroupCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	root := &cobra.Command{Use: "kmirror", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newGroupCommand())
	var out, errOut bytes.Buffer
	root.SetArgs(append([]string{"group"}, args...))
	root.SetOut(&out)
	root.SetErr(&errOut)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return cliResult{stdout: out.String(), stderr: errOut.String(), err: err}
}

func mustGroup(t *testing.T, args ...string) cliResult {
	t.Helper()
	r := runGroupCLI(t, args...)
	if r.err != nil {
		t.Fatalf("kmirror group %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.err, r.stdout, r.stderr)
	}
	return r
}

func failGroup(t *testing.T, args ...string) cliResult {
	t.Helper()
	r := runGroupCLI(t, args...)
	if r.err == nil {
		t.Fatalf("kmirror group %s succeeded, want an error\nstdout:\n%s", strings.Join(args, " "), r.stdout)
	}
	return r
}

// groupFixture is a kmirror node with topic "orders" (3 partitions, 20 records
// each), an idle group "idle" with committed offsets and no members, and an
// active group "active" whose consumer read everything and stays a member.
type groupFixture struct {
	bs       string
	adm      *kadm.Client
	consumer *kgo.Client // the member of "active"
	before   time.Time   // before any record was produced
}

func newGroupFixture(t *testing.T) groupFixture {
	t.Helper()
	// No initial rebalance delay: the fixture's consumer joins alone.
	bs := startNode(t, testcluster.Config("group.initial.rebalance.delay.ms", "0"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bs, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Hour)
	var recs []*kgo.Record
	for p := int32(0); p < 3; p++ {
		for i := 0; i < 20; i++ {
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: p, Value: []byte(strconv.Itoa(i)), Timestamp: before.Add(time.Duration(i) * time.Minute)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	idle := kadm.Offsets{}
	idle.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 5, LeaderEpoch: -1})
	idle.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 20, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "idle", idle); err != nil {
		t.Fatal(err)
	}

	consumer, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bs, ",")...), kgo.ConsumerGroup("active"),
		kgo.ConsumeTopics("orders"), kgo.ClientID("active-consumer"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(consumer.Close)
	got := 0
	for got < 60 {
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fs := consumer.PollFetches(fctx)
		cancel()
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		got += fs.NumRecords()
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	return groupFixture{bs: bs, adm: adm, consumer: consumer, before: before}
}

func (f groupFixture) committed(t *testing.T, group string) map[int32]int64 {
	t.Helper()
	resps, err := f.adm.FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	resps.Each(func(o kadm.OffsetResponse) {
		if o.Topic == "orders" && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out
}

func TestGroupListAndDescribe(t *testing.T) {
	f := newGroupFixture(t)

	rows := tableRows(mustGroup(t, "list", "--bootstrap-server", f.bs).stdout)
	if len(rows) != 3 || rows[0][0] != "GROUP" || rows[1][0] != "active" || rows[1][1] != "Stable" || rows[2][0] != "idle" || rows[2][1] != "Empty" {
		t.Fatalf("list:\n%v", rows)
	}
	listed := decodeJSON[[]groupSummary](t, mustGroup(t, "list", "--state", "Empty", "-o", "json", "--bootstrap-server", f.bs).stdout)
	if len(listed) != 1 || listed[0].Group != "idle" || listed[0].State != "Empty" {
		t.Fatalf("list --state Empty: %+v", listed)
	}

	descs := decodeJSON[[]groupDescription](t, mustGroup(t, "describe", "active", "idle", "-o", "json", "--bootstrap-server", f.bs).stdout)
	if len(descs) != 2 {
		t.Fatalf("describe returned %d groups", len(descs))
	}
	active, idle := descs[0], descs[1]
	if active.State != "Stable" || active.ProtocolType != "consumer" || len(active.Members) != 1 || active.TotalLag != 0 {
		t.Fatalf("active: %+v", active)
	}
	m := active.Members[0]
	if m.ClientID != "active-consumer" || len(m.Assignment) != 1 || m.Assignment[0].Topic != "orders" || len(m.Assignment[0].Partitions) != 3 {
		t.Fatalf("active member: %+v", m)
	}
	if len(active.Offsets) != 3 {
		t.Fatalf("active offsets: %+v", active.Offsets)
	}
	for _, o := range active.Offsets {
		if o.Committed == nil || *o.Committed != 20 || o.LogEnd == nil || *o.LogEnd != 20 || o.Lag == nil || *o.Lag != 0 || o.MemberID != m.MemberID {
			t.Fatalf("active offset %+v", o)
		}
	}
	if idle.State != "Empty" || len(idle.Members) != 0 || idle.TotalLag != 15 {
		t.Fatalf("idle: %+v", idle)
	}
	lags := map[int32]int64{}
	for _, o := range idle.Offsets {
		if o.Lag != nil {
			lags[o.Partition] = *o.Lag
		}
	}
	if lags[0] != 15 || lags[1] != 0 {
		t.Fatalf("idle lags %v (offsets %+v)", lags, idle.Offsets)
	}

	table := mustGroup(t, "describe", "idle", "--bootstrap-server", f.bs).stdout
	for _, want := range []string{"CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "TOTAL-LAG", "Empty"} {
		if !strings.Contains(table, want) {
			t.Fatalf("describe table lacks %q:\n%s", want, table)
		}
	}
	var p0 []string
	for _, row := range tableRows(table) {
		if len(row) == 9 && row[0] == "idle" && row[1] == "orders" && row[2] == "0" {
			p0 = row
		}
	}
	if p0 == nil || p0[3] != "5" || p0[4] != "20" || p0[5] != "15" || p0[6] != "-" {
		t.Fatalf("describe row of partition 0: %v\n%s", p0, table)
	}
	all := decodeJSON[[]groupDescription](t, mustGroup(t, "describe", "--all-groups", "-o", "json", "--bootstrap-server", f.bs).stdout)
	if len(all) != 2 {
		t.Fatalf("describe --all-groups: %d groups", len(all))
	}
	failGroup(t, "describe", "--bootstrap-server", f.bs)
}

func TestGroupResetOffsets(t *testing.T) {
	f := newGroupFixture(t)
	reset := func(args ...string) []resetRow {
		t.Helper()
		return decodeJSON[[]resetRow](t, mustGroup(t, append([]string{"reset-offsets", "idle", "-o", "json", "--bootstrap-server", f.bs}, args...)...).stdout)
	}
	news := func(rows []resetRow) map[int32]int64 {
		out := map[int32]int64{}
		for _, r := range rows {
			out[r.Partition] = r.New
		}
		return out
	}

	// Dry run by default: printed, not committed.
	rows := reset("--topic", "orders", "--to-earliest")
	if got := news(rows); len(got) != 3 || got[0] != 0 || got[1] != 0 || got[2] != 0 {
		t.Fatalf("to-earliest: %+v", rows)
	}
	if rows[0].Previous == nil || *rows[0].Previous != 5 || rows[2].Previous != nil {
		t.Fatalf("previous offsets: %+v", rows)
	}
	if c := f.committed(t, "idle"); c[0] != 5 || c[1] != 20 {
		t.Fatalf("dry run changed offsets: %v", c)
	}
	r := mustGroup(t, "reset-offsets", "idle", "--topic", "orders", "--to-earliest", "--bootstrap-server", f.bs)
	if !strings.Contains(r.stderr, "dry run") || !strings.Contains(r.stdout, "NEW-OFFSET") {
		t.Fatalf("dry run output:\n%s\n%s", r.stdout, r.stderr)
	}

	reset("--topic", "orders", "--to-earliest", "--execute")
	if c := f.committed(t, "idle"); c[0] != 0 || c[1] != 0 || c[2] != 0 {
		t.Fatalf("after to-earliest: %v", c)
	}
	reset("--topic", "orders:1,2", "--shift-by", "3", "--execute")
	if c := f.committed(t, "idle"); c[0] != 0 || c[1] != 3 || c[2] != 3 {
		t.Fatalf("after shift-by: %v", c)
	}
	reset("--all-topics", "--to-offset", "100", "--execute") // clamped to the log end
	if c := f.committed(t, "idle"); c[0] != 20 || c[1] != 20 || c[2] != 20 {
		t.Fatalf("after to-offset: %v", c)
	}
	reset("--topic", "orders:0", "--shift-by", "-25", "--execute") // clamped to the log start
	if c := f.committed(t, "idle"); c[0] != 0 {
		t.Fatalf("after negative shift: %v", c)
	}
	// Records i of each partition are stamped before+i minutes.
	at := f.before.Add(7*time.Minute + time.Second).Format("2006-01-02T15:04:05.000Z07:00")
	if got := news(reset("--topic", "orders", "--to-datetime", at)); got[0] != 8 || got[2] != 8 {
		t.Fatalf("to-datetime %s: %v", at, got)
	}
	if got := news(reset("--topic", "orders", "--to-latest")); got[1] != 20 {
		t.Fatalf("to-latest: %v", got)
	}

	// An active group cannot be reset.
	r = failGroup(t, "reset-offsets", "active", "--topic", "orders", "--to-earliest", "--execute", "--bootstrap-server", f.bs)
	if !strings.Contains(r.err.Error(), "inactive") {
		t.Fatalf("reset of an active group: %v", r.err)
	}
	for _, bad := range [][]string{
		{"--topic", "orders"},
		{"--topic", "orders", "--to-earliest", "--to-latest"},
		{"--to-earliest"},
		{"--topic", "orders", "--all-topics", "--to-earliest"},
		{"--topic", "orders:x", "--to-earliest"},
		{"--topic", "orders", "--to-datetime", "yesterday"},
		{"--topic", "orders", "--to-earliest", "--execute", "--dry-run"},
	} {
		failGroup(t, append([]string{"reset-offsets", "idle", "--bootstrap-server", f.bs}, bad...)...)
	}
}

func TestGroupDelete(t *testing.T) {
	f := newGroupFixture(t)
	r := failGroup(t, "delete", "active", "--bootstrap-server", f.bs)
	if !strings.Contains(r.err.Error(), "NON_EMPTY_GROUP") {
		t.Fatalf("delete of an active group: %v", r.err)
	}
	f.consumer.Close() // leaves the group
	deadline := time.Now().Add(30 * time.Second)
	for {
		listed := decodeJSON[[]groupSummary](t, mustGroup(t, "list", "--state", "Empty", "-o", "json", "--bootstrap-server", f.bs).stdout)
		if len(listed) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("active group never became Empty: %+v", listed)
		}
		time.Sleep(10 * time.Millisecond)
	}
	rows := tableRows(mustGroup(t, "delete", "active", "--bootstrap-server", f.bs).stdout)
	if len(rows) != 2 || rows[1][0] != "active" || rows[1][1] != "deleted" {
		t.Fatalf("delete: %v", rows)
	}
	if c := f.committed(t, "active"); len(c) != 0 {
		t.Fatalf("offsets after delete: %v", c)
	}
	r = failGroup(t, "delete", "active", "--bootstrap-server", f.bs)
	if !strings.Contains(r.err.Error(), "GROUP_ID_NOT_FOUND") {
		t.Fatalf("delete of a missing group: %v", r.err)
	}
}
