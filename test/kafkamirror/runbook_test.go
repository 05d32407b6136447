package kafkamirror_test

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// The commands of docs/mirroring-guide.md's "Runbook: migrate from Apache
// Kafka", with placeholders for what differs between the document and the
// test: runbookDocValues renders the document's text, runbook.values the
// test's command lines.
const (
	rbCreateUser = "kafka-configs.sh --bootstrap-server {KAFKA1} --command-config {ADMIN} --alter --add-config 'SCRAM-SHA-512=[password={PASSWORD}]' --entity-type users --entity-name {USER}"
	rbTopicACLs  = "kafka-acls.sh --bootstrap-server {KAFKA1} --command-config {ADMIN} --add --allow-principal User:{USER} --operation Read --operation Describe --operation DescribeConfigs --topic '*'"
	rbGroupACLs  = "kafka-acls.sh --bootstrap-server {KAFKA1} --command-config {ADMIN} --add --allow-principal User:{USER} --operation Describe --group '*' --cluster"
	rbCreate     = "kmirror mirror create kafka --source-bootstrap {KAFKA} --source-config-file kafka-source.properties --bootstrap-server {KMIRROR}"
	rbAddTopics  = "kmirror mirror add-topics kafka orders payments --wait --timeout 5m --bootstrap-server {KMIRROR}"
	rbDescribe   = "kmirror mirror describe kafka --bootstrap-server {KMIRROR}"
	rbCatchUp    = "kmirror mirror wait kafka --max-lag 1000 --timeout 2h --bootstrap-server {KMIRROR}"
	rbGroup      = "kmirror group describe billing --bootstrap-server {KMIRROR}"
	rbExclude    = "kmirror mirror alter-config kafka --set groups.exclude=billing --bootstrap-server {KMIRROR}"
	rbDrained    = "kmirror mirror wait kafka --max-lag 0 --source-bootstrap {KAFKA1} --source-command-config kafka-source.properties --timeout 10m --bootstrap-server {KMIRROR}"
	rbFailover   = "kmirror mirror remove-topics kafka orders payments --wait --timeout 5m --bootstrap-server {KMIRROR}"
	rbDelete     = "kmirror mirror delete kafka --bootstrap-server {KMIRROR}"
)

// rbProperties are the lines of kafka-source.properties.
var rbProperties = []string{
	"security.protocol=SASL_SSL",
	"sasl.mechanism=SCRAM-SHA-512",
	`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="{USER}" password="{PASSWORD}";`,
	"ssl.truststore.type=PEM",
	"ssl.truststore.location={CA}",
}

var runbookDocValues = map[string]string{
	"{KAFKA}": "kafka-1:9093,kafka-2:9093,kafka-3:9093", "{KAFKA1}": "kafka-1:9093", "{KMIRROR}": "kmirror-1:9092",
	"{ADMIN}": "admin.properties", "{USER}": "kmirror", "{PASSWORD}": "mirror-secret", "{CA}": "/etc/kmirror/kafka-ca.pem",
}

func render(template string, values map[string]string) string {
	for k, v := range values {
		template = strings.ReplaceAll(template, k, v)
	}
	return template
}

// runbookSection returns the runbook's lines from the guide, trimmed.
func runbookSection(t testing.TB) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "mirroring-guide.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n## Runbook: migrate from Apache Kafka\n")
	if !ok {
		t.Fatal(`docs/mirroring-guide.md has no "Runbook: migrate from Apache Kafka"`)
	}
	rest, _, _ = strings.Cut(rest, "\n## ")
	var lines []string
	for l := range strings.SplitSeq(rest, "\n") {
		lines = append(lines, strings.TrimSpace(l))
	}
	return lines
}

// shellWords splits a command line into words: spaces separate, single
// quotes keep what they enclose (the runbook's quoting needs no more).
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
			}
			inWord = false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// runbook runs the runbook's command lines in a directory that holds
// kafka-source.properties.
type runbook struct {
	t      *testing.T
	s      *source
	bin    string
	dir    string
	values map[string]string
}

// run runs a command line of the runbook and returns its output; a command
// that exits non-zero fails the test.
func (r *runbook) run(template string) string {
	r.t.Helper()
	words := shellWords(render(template, r.values))
	switch words[0] {
	case "kmirror":
		cmd := exec.Command(r.bin, words[1:]...)
		cmd.Dir = r.dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			r.t.Fatalf("%s: %v\n%s", strings.Join(words, " "), err, out)
		}
		return string(out)
	case "kafka-acls.sh":
		return r.s.tool(r.t, "org.apache.kafka.tools.AclCommand", words[1:]...).Stdout
	case "kafka-configs.sh":
		return r.s.tool(r.t, "org.apache.kafka.tools.ConfigCommand", words[1:]...).Stdout
	}
	r.t.Fatalf("no way to run %q", words[0])
	return ""
}

// testRunbook (issue 13 item 7) follows docs/mirroring-guide.md's
// "Runbook: migrate from Apache Kafka" with the kmirror binary and Kafka's
// tools, and first checks that the guide shows exactly these commands. A
// Java producer writes to Kafka until the producers move, a Java consumer
// group moves first and continues on kmirror where it stopped on Kafka
// (and stays there, excluded from the sync, after a restart), then the
// producers move and the group reads their records after the mirrored
// ones: no record lost, none read twice.
func testRunbook(t *testing.T, s *source) {
	section := runbookSection(t)
	for _, tmpl := range append([]string{rbCreateUser, rbTopicACLs, rbGroupACLs, rbCreate, rbAddTopics, rbDescribe, rbCatchUp,
		rbGroup, rbExclude, rbDrained, rbFailover, rbDelete}, rbProperties...) {
		want := render(tmpl, runbookDocValues)
		found := false
		for _, l := range section {
			found = found || l == want
		}
		if !found {
			t.Errorf("the runbook does not show %q", want)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	d := startDest(t, 1, nil)
	r := &runbook{t: t, s: s, bin: testcluster.BuildBinary(t), dir: t.TempDir(), values: map[string]string{
		"{KAFKA}": s.kc.Bootstrap(), "{KAFKA1}": s.kc.Addr(1), "{KMIRROR}": d.c.Bootstrap(),
		"{ADMIN}": s.kc.ClientProperties(), "{USER}": "migrator", "{PASSWORD}": "migrator-secret-41d3", "{CA}": s.kc.CAFile(),
	}}
	var props []string
	for _, l := range rbProperties {
		props = append(props, render(l, r.values))
	}
	if err := os.WriteFile(filepath.Join(r.dir, "kafka-source.properties"), []byte(strings.Join(props, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// The workload on Kafka: a Java producer on orders, records in
	// payments, a consumer group on orders.
	s.createTopic(t, "orders", 3, nil)
	s.createTopic(t, "payments", 2, nil)
	perf := startPerf(t, s.kc.Bootstrap(), s.producerConfig(t), "orders")
	pay := s.client(t, manualProducer()...)
	for p := range int32(2) {
		produceBatches(t, pay, "payments", p, 3)
	}
	poll(t, "the Java producer writing", func() (bool, string) {
		ends, err := tryEndOffsets(t, s.kc.ClientOpts(), "orders", false)
		return err == nil && ends[0]+ends[1]+ends[2] > 150, fmt.Sprint(ends, err)
	})
	consoleConsume(t, s.kc.Bootstrap(), s.kc.ClientProperties(), "orders", "billing", 100)

	// 1. The mirror's login and rights on Kafka.
	r.run(rbCreateUser)
	r.run(rbTopicACLs)
	r.run(rbGroupACLs)
	poll(t, "the new SCRAM user accepted by Kafka", func() (bool, string) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.kc.Addr(1)), kgo.DialTLSConfig(s.kc.TLSConfig()),
			kgo.SASL(scram.Auth{User: r.values["{USER}"], Pass: r.values["{PASSWORD}"]}.AsSha512Mechanism()))
		if err != nil {
			return false, err.Error()
		}
		defer cl.Close()
		err = cl.Ping(ctxFor(t))
		return err == nil, fmt.Sprint(err)
	})
	// 2.-4. Create, add, watch.
	r.run(rbCreate)
	r.run(rbAddTopics)
	if out := r.run(rbDescribe); strings.Count(out, "MIRRORING") < 5 {
		t.Errorf("describe shows fewer than 5 partitions MIRRORING:\n%s", out)
	}
	r.run(rbCatchUp)

	// 5. The consumers: stopped on Kafka (ConsoleConsumer committed as it
	// exited), their offsets copied, the group out of the sync, started
	// on kmirror.
	onKafka := groupOffsets(t, s.admin(t), "billing", "orders")
	dadm := d.admin(t)
	poll(t, "billing's offsets copied", func() (bool, string) {
		got := groupOffsets(t, dadm, "billing", "orders")
		return maps.Equal(got, onKafka), fmt.Sprintf("kmirror %v, Kafka %v", got, onKafka)
	})
	if out := r.run(rbGroup); !strings.Contains(out, "orders") {
		t.Errorf("group describe shows no offsets of orders:\n%s", out)
	}
	r.run(rbExclude)
	next := map[int32]int64{}
	for p, o := range onKafka {
		next[p], _ = strconv.ParseInt(strings.Split(o, "/")[0], 10, 64)
	}
	barrier := map[int32]int64{} // consumers skip the failover's barrier
	consumeOn := func(n int) {
		for _, c := range consoleConsume(t, d.c.Bootstrap(), "", "orders", "billing", n) {
			if b, ok := barrier[c.partition]; ok && next[c.partition] == b {
				next[c.partition]++
			}
			if c.offset != next[c.partition] {
				t.Fatalf("billing read orders-%d at %d on kmirror, want %d", c.partition, c.offset, next[c.partition])
			}
			next[c.partition]++
		}
	}
	consumeOn(60)
	onKmirror := groupOffsets(t, dadm, "billing", "orders")
	d.waitSyncRounds(t, "kafka", "group-offsets")
	if got := groupOffsets(t, dadm, "billing", "orders"); !maps.Equal(got, onKmirror) {
		t.Errorf("the sync moved billing's offsets on kmirror from %v to %v (Kafka's %v)", onKmirror, got, onKafka)
	}

	// 6. The producers: stopped on Kafka, kmirror drained, fail over,
	// started on kmirror.
	res := perf.Stop()
	t.Logf("the Java producer on Kafka: %s", lastLine(res.Stdout))
	r.run(rbDrained)
	waitSameLogs(t, s, d, "orders", 3)
	waitSameLogs(t, s, d, "payments", 2)
	r.run(rbFailover)
	d.waitStates(t, "kafka", mirroradmin.StateStopped, 3, "orders")
	runPerf(t, perfArgs(d.c.Bootstrap(), "", "orders", 300, "snappy", perfIdempotent, ""), 300)
	ends := endOffsets(t, d.seeds(), "orders", false)
	remaining := 0
	for p := range int32(3) {
		_, data, err := rawLog(d.seeds(), "orders", p)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range batches(t, data) {
			if b.control == record.ControlMirrorPIDReset {
				barrier[p] = b.BaseOffset
			}
		}
		remaining += int(ends[p]-next[p]) - 1
	}
	consumeOn(remaining)
	for p := range int32(3) {
		if next[p] == barrier[p] { // nothing written after it
			next[p]++
		}
		if next[p] != ends[p] {
			t.Errorf("billing stopped orders-%d at %d, its end is %d", p, next[p], ends[p])
		}
	}

	// 7. Finish.
	if out := r.run(rbDescribe); strings.Count(out, "STOPPED") < 5 {
		t.Errorf("describe shows fewer than 5 partitions STOPPED:\n%s", out)
	}
	r.run(rbDelete)
	if ms, err := d.adm.ListMirrors(ctxFor(t)); err != nil || len(ms) != 0 {
		t.Errorf("mirrors after delete: %v %v", ms, err)
	}
}
