package javaclients

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestJavaClients runs the Java producer, consume-transform-produce loop,
// read_committed reader and Admin client of ClientsCheck against three
// kmirror nodes, kills the transformer's transaction coordinator with
// SIGKILL while all of them work, and restarts it. Then:
//   - a new consumer of the reader's group.instance.id takes over the
//     old one's member and assignment without a rebalance (Kafka's
//     static membership: same generation, new member id);
//   - every record the idempotent producer had acknowledged is in the
//     input exactly once, at the partition and offset acknowledged, and no
//     record is in it twice;
//   - the output holds every input record exactly once in committed
//     transactions (computed here from the markers), and the records of
//     aborted ones, which the reader skipped: it read every input record
//     exactly once;
//   - the Admin client's describeCluster, describeTopics, listOffsets and
//     describeConsumerGroups say what the cluster says, and
//     alterConsumerGroupOffsets sets an empty group's offsets and is
//     refused for the reader's live group.
func TestJavaClients(t *testing.T) {
	c := startCluster(t)
	const in, out, parts = "orders", "orders-copied", 3
	c.createTopic(in, parts)
	c.createTopic(out, parts)
	prog := startJava(t, "io.kmirror.test.ClientsCheck", c.bootstrap(), in, out)

	progress := func(what string, acked, txns, read int) {
		t.Helper()
		a0, tx0, r0 := prog.count("ACKED"), prog.count("COMMITTED_TXN"), prog.count("CONSUMED")
		prog.waitUntil(what, func() (bool, string) {
			a, tx, r := prog.count("ACKED")-a0, prog.count("COMMITTED_TXN")-tx0, prog.count("CONSUMED")-r0
			return a >= acked && tx >= txns && r >= read,
				fmt.Sprintf("%d acknowledged, %d transactions committed, %d read", a, tx, r)
		})
	}
	progress("the three clients at work", 1000, 5, 500)

	txnID := in + "-transformer"
	victim := c.node(c.waitCoordinator(txnID, 1, func(int32) bool { return true }))
	victim.kill()
	c.waitCoordinator(txnID, 1, func(id int32) bool { return id != victim.id })
	progress("the clients at work on two nodes", 1000, 5, 500)
	victim.start()
	c.waitFullISR(in, parts)
	c.waitFullISR(out, parts)
	progress("the clients at work after the restart", 1000, 5, 500)

	// The reader hands over to a new consumer of the same
	// group.instance.id, as a restarted static member does.
	prog.send("restart-reader")
	prog.waitUntil("the second consumer of the reader assigned", func() (bool, string) {
		return len(assignments(prog, 2)) > 0, "no ASSIGNED 2 line"
	})
	progress("the second consumer of the reader at work", 500, 2, 500)
	checkStaticRejoin(t, prog, out, parts)
	prog.send("stop-producer")
	prog.waitCount("PRODUCED", 1)

	inLog := c.readTxnLog(in, parts)
	inKeys := checkInput(t, prog, inLog)

	// The transformer copies the whole input: its group's offsets reach
	// the input's end, and no transaction stays open.
	adm := c.admin()
	ctx := context.Background()
	inEnds := inLog.ends
	prog.waitUntil("the transformer's offsets at the input's end", func() (bool, string) {
		offs, err := adm.FetchOffsets(ctx, txnID)
		if err != nil {
			return false, err.Error()
		}
		for p := range int32(parts) {
			if o, ok := offs.Lookup(in, p); !ok || o.Err != nil || o.At != inEnds[p] {
				return false, fmt.Sprintf("partition %d at %d (%v), end %d", p, o.At, o.Err, inEnds[p])
			}
		}
		return true, ""
	})
	outLog := c.readTxnLog(out, parts)
	if outLog.open != 0 {
		t.Fatalf("%d output records in open transactions after the transformer committed all its input", outLog.open)
	}
	prog.waitUntil("the reader at the output's end", func() (bool, string) {
		at := map[int32]int64{}
		for _, f := range prog.fields("POSITION") {
			at[int32(atoi(t, f[2]))] = atoi(t, f[3])
		}
		for p := range int32(parts) {
			if at[p] != outLog.ends[p] {
				return false, fmt.Sprintf("positions %v, ends %v", at, outLog.ends)
			}
		}
		return true, ""
	})
	checkOutput(t, prog, outLog, inKeys)

	prog.send("admin admin-set 7")
	prog.waitCount("ADMIN_DONE", 1)
	checkAdmin(t, c, prog, in, out, parts, outLog.ends)

	prog.send("stop")
	prog.waitCount("DONE", 1)
	prog.waitExit()
	t.Logf("%d records produced (%d acknowledged, %d failed), %d transactions committed, %d aborted on purpose, %d failed; %d aborted output records skipped",
		len(inKeys), prog.count("ACKED"), prog.count("FAILED"), prog.count("COMMITTED_TXN"),
		prog.count("ABORTED_TXN"), prog.count("TXN_ERROR"), outLog.aborted)
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

// checkInput checks the input topic against the producer's
// acknowledgements and returns its keys.
func checkInput(t *testing.T, prog *javaProc, log txnLog) map[string]bool {
	t.Helper()
	e := &reporter{t: t, what: "input"}
	defer e.done()
	type at struct {
		p   int32
		off int64
	}
	where := map[string]at{}
	for p, rs := range log.committed {
		for _, r := range rs {
			k := string(r.Key)
			if w, dup := where[k]; dup {
				e.errorf("%s at %d/%d and again at %d/%d", k, w.p, w.off, p, r.Offset)
			}
			where[k] = at{p, r.Offset}
		}
	}
	if log.aborted+log.open != 0 {
		e.errorf("%d aborted and %d open transactional records from a producer without transactions", log.aborted, log.open)
	}
	for _, f := range prog.fields("ACKED") {
		w, ok := where[f[1]]
		if !ok {
			e.errorf("acknowledged %s (partition %s offset %s) is not in the log", f[1], f[2], f[3])
			continue
		}
		if want := (at{int32(atoi(t, f[2])), atoi(t, f[3])}); w != want {
			e.errorf("%s at %d/%d, acknowledged at %d/%d", f[1], w.p, w.off, want.p, want.off)
		}
	}
	produced := atoi(t, prog.fields("PRODUCED")[0][1])
	acked, failed := prog.count("ACKED"), prog.count("FAILED")
	if int64(acked+failed) != produced {
		e.errorf("the producer sent %d records and heard of %d (%d acknowledged, %d failed)", produced, acked+failed, acked, failed)
	}
	if len(where) < acked || int64(len(where)) > produced {
		e.errorf("%d records, %d acknowledged of %d sent", len(where), acked, produced)
	}
	keys := map[string]bool{}
	for k := range where {
		keys[k] = true
	}
	return keys
}

// checkOutput checks the output's committed records and what the reader
// read against the input's keys.
func checkOutput(t *testing.T, prog *javaProc, log txnLog, inKeys map[string]bool) {
	t.Helper()
	e := &reporter{t: t, what: "output"}
	defer e.done()
	committed := map[string]string{} // key → "partition/offset"
	for p, rs := range log.committed {
		for _, r := range rs {
			k, at := string(r.Key), fmt.Sprintf("%d/%d", p, r.Offset)
			switch {
			case !inKeys[k]:
				e.errorf("committed %s at %s is not in the input", k, at)
			case committed[k] != "":
				e.errorf("%s committed at %s and again at %s", k, committed[k], at)
			case string(r.Value) != "tv"+k:
				e.errorf("%s at %s has value %q", k, at, r.Value)
			}
			committed[k] = at
		}
	}
	for k := range inKeys {
		if committed[k] == "" {
			e.errorf("input record %s was never committed", k)
		}
	}
	onPurpose := 0
	for _, f := range prog.fields("ABORTED_TXN") {
		onPurpose += int(atoi(t, f[1]))
	}
	if onPurpose == 0 || log.aborted < onPurpose {
		e.errorf("%d records of aborted transactions, the transformer aborted %d on purpose (flushed first)", log.aborted, onPurpose)
	}

	read := map[string]string{}
	for _, f := range prog.fields("CONSUMED") {
		k, at := f[1], f[2]+"/"+f[3]
		switch {
		case read[k] != "":
			e.errorf("the reader read %s at %s and again at %s", k, read[k], at)
		case committed[k] != at:
			e.errorf("the reader read %s at %s, committed at %q", k, at, committed[k])
		case f[4] != "tv"+k:
			e.errorf("the reader read %s at %s with value %q", k, at, f[4])
		}
		read[k] = at
	}
	if len(read) != len(committed) {
		e.errorf("the reader read %d distinct records, the output has %d committed", len(read), len(committed))
	}
}

// assignments returns the fields of the ASSIGNED lines of the reader's
// consumer n: consumer, partitions, generation, member id.
func assignments(prog *javaProc, n int) [][]string {
	var out [][]string
	for _, f := range prog.fields("ASSIGNED") {
		if f[1] == strconv.Itoa(n) {
			out = append(out, f[1:])
		}
	}
	return out
}

// checkStaticRejoin checks that the reader's second consumer rejoined the
// Stable group as Kafka has a known group.instance.id rejoin: under a new
// member id, with the first consumer's partitions, in the same generation
// (no rebalance: KIP-345, and KIP-814 for a leader).
func checkStaticRejoin(t *testing.T, prog *javaProc, out string, parts int32) {
	t.Helper()
	first, second := assignments(prog, 1), assignments(prog, 2)
	if len(first) == 0 || len(second) != 1 {
		t.Fatalf("the reader's consumers were assigned %q and %q", first, second)
	}
	before, after := first[len(first)-1], second[0]
	all := make([]string, 0, parts)
	for p := range parts {
		all = append(all, fmt.Sprintf("%s-%d", out, p))
	}
	if want := strings.Join(all, ","); before[1] != want || after[1] != want {
		t.Errorf("the reader's consumers were assigned %s and %s, want %s", before[1], after[1], want)
	}
	if before[2] != after[2] {
		t.Errorf("the static member's rejoin moved the group from generation %s to %s: a rebalance", before[2], after[2])
	}
	if before[3] == after[3] {
		t.Errorf("the static member rejoined under its old member id %s", after[3])
	}
}

// checkAdmin compares what the Admin client printed with what the
// cluster's nodes and a franz-go admin say.
func checkAdmin(t *testing.T, c *procCluster, prog *javaProc, in, out string, parts int32, outEnds map[int32]int64) {
	t.Helper()
	ctx := context.Background()
	v, why := c.agreed([]string{in, out}, func(a, b nodeView) bool {
		return a.controller == b.controller && slices.Equal(a.brokers, b.brokers)
	})
	if why != "" {
		t.Fatalf("metadata: %s", why)
	}
	wantCluster := fmt.Sprintf("CLUSTER %s %d %s", c.clusterID, v.controller, strings.Join(v.brokers, ","))
	if got := prog.fields("CLUSTER"); len(got) != 1 || strings.Join(got[0], " ") != wantCluster {
		t.Errorf("describeCluster: %v, want %q", got, wantCluster)
	}

	var wantTopics, gotTopics []string
	for _, topic := range []string{in, out} {
		wantTopics = append(wantTopics, fmt.Sprintf("TOPIC %s %s %d", topic, topicID(v.topicIDs[topic]), parts))
		for p := range parts {
			s := v.parts[topic][p]
			wantTopics = append(wantTopics, fmt.Sprintf("PARTITION %s %d %d %s %s", topic, p, s.Leader, joinIDs(s.Replicas), joinIDs(s.ISR)))
		}
	}
	for _, l := range prog.snapshot() {
		if strings.HasPrefix(l, "TOPIC ") || strings.HasPrefix(l, "PARTITION ") {
			gotTopics = append(gotTopics, l)
		}
	}
	if !slices.Equal(gotTopics, wantTopics) {
		t.Errorf("describeTopics:\n%s\nwant\n%s", strings.Join(gotTopics, "\n"), strings.Join(wantTopics, "\n"))
	}

	adm := c.admin()
	starts, err1 := adm.ListStartOffsets(ctx, in, out)
	ends, err2 := adm.ListEndOffsets(ctx, in, out)
	stable, err3 := adm.ListCommittedOffsets(ctx, in, out)
	if err := firstErr(err1, err2, err3, starts.Error(), ends.Error(), stable.Error()); err != nil {
		t.Fatalf("list offsets: %v", err)
	}
	var wantOffsets []string
	for _, topic := range []string{in, out} {
		for p := range parts {
			s, _ := starts.Lookup(topic, p)
			e, _ := ends.Lookup(topic, p)
			l, _ := stable.Lookup(topic, p)
			wantOffsets = append(wantOffsets, fmt.Sprintf("OFFSETS %s %d %d %d %d", topic, p, s.Offset, e.Offset, l.Offset))
			if topic == out && e.Offset != outEnds[p] {
				t.Errorf("%s-%d: end offset %d, %d when read", out, p, e.Offset, outEnds[p])
			}
		}
	}
	if got := lines(prog, "OFFSETS"); !slices.Equal(got, wantOffsets) {
		t.Errorf("listOffsets:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantOffsets, "\n"))
	}

	reader := out + "-reader"
	allOut := make([]string, 0, parts)
	for p := range parts {
		allOut = append(allOut, fmt.Sprintf("%s-%d", out, p))
	}
	wantGroup := []string{"GROUP " + reader + " Classic Stable cooperative-sticky", "MEMBER reader-1 " + strings.Join(allOut, ",")}
	if got := append(lines(prog, "GROUP"), lines(prog, "MEMBER")...); !slices.Equal(got, wantGroup) {
		t.Errorf("describeConsumerGroups: %q, want %q", got, wantGroup)
	}

	// The reader commits its position: the output's ends. The admin's
	// offsets for the empty group are what it set, and what franz-go
	// fetches.
	wantOffs := map[string]int64{}
	for p := range parts {
		wantOffs[fmt.Sprintf("%s %s %d", reader, out, p)] = outEnds[p]
		wantOffs[fmt.Sprintf("admin-set %s %d", in, p)] = 7 + int64(p)
	}
	gotOffs := map[string]int64{}
	for _, f := range prog.fields("GROUP_OFFSET") {
		gotOffs[strings.Join(f[1:4], " ")] = atoi(t, f[4])
	}
	if !maps.Equal(gotOffs, wantOffs) {
		t.Errorf("listConsumerGroupOffsets: %v, want %v", gotOffs, wantOffs)
	}
	fetched, err := adm.FetchOffsets(ctx, "admin-set")
	if err != nil {
		t.Fatalf("fetch offsets of admin-set: %v", err)
	}
	n := 0
	fetched.Each(func(o kadm.OffsetResponse) {
		n++
		if want := 7 + int64(o.Partition); o.Topic != in || o.At != want || o.Err != nil || o.Metadata != "set by admin" {
			t.Errorf("admin-set: %s-%d at %d %q (%v), want %s at %d", o.Topic, o.Partition, o.At, o.Metadata, o.Err, in, want)
		}
	})
	if n != int(parts) {
		t.Errorf("admin-set: %d offsets, want %d", n, parts)
	}
	if got := lines(prog, "ALTER_ACTIVE"); !slices.Equal(got, []string{"ALTER_ACTIVE UnknownMemberIdException"}) {
		t.Errorf("alterConsumerGroupOffsets of the live group: %q, want UnknownMemberIdException (Kafka: a non-empty classic group takes offsets only from its members)", got)
	}
}

// lines returns the lines whose first word is word.
func lines(prog *javaProc, word string) []string {
	var out []string
	for _, f := range prog.fields(word) {
		out = append(out, strings.Join(f, " "))
	}
	return out
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// topicID formats an id as Kafka's Uuid.toString does: URL-safe base64
// without padding.
func topicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// reporter reports the first errors of a check and how many it left out,
// so that a broken guarantee does not print a line per record.
type reporter struct {
	t    *testing.T
	what string
	n    int
}

const maxErrors = 20

func (r *reporter) errorf(format string, args ...any) {
	r.t.Helper()
	r.n++
	if r.n <= maxErrors {
		r.t.Errorf(r.what+": "+format, args...)
	}
}

// done reports how many errors were left out.
func (r *reporter) done() {
	r.t.Helper()
	if r.n > maxErrors {
		r.t.Errorf("%s: %d more errors left out", r.what, r.n-maxErrors)
	}
}
