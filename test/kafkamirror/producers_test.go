package kafkamirror_test

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/testcluster/kafkacluster"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// codecs are the compression codecs of Kafka's producer.
var codecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// perfMode is how a ProducerPerformance run writes.
type perfMode string

const (
	perfPlain         perfMode = "plain"         // enable.idempotence=false: producer id -1
	perfIdempotent    perfMode = "idempotent"    // producer ids and sequences
	perfTransactional perfMode = "transactional" // a transaction every 100 ms, committed
)

// perfArgs are the arguments of a ProducerPerformance run (Kafka's
// kafka-producer-perf-test) of n records of 200 bytes, as fast as it can,
// acks=all, to topic on bootstrap; config is a --command-config file
// (security settings), empty for none. (--command-property is 4.x's name
// of the deprecated --producer-props.)
func perfArgs(bootstrap, config, topic string, n int, codec string, mode perfMode, txnID string) []string {
	args := []string{"--bootstrap-server", bootstrap, "--topic", topic, "--num-records", strconv.Itoa(n), "--record-size", "200", "--throughput", "-1"}
	if config != "" {
		args = append(args, "--command-config", config)
	}
	args = append(args, "--command-property", "compression.type="+codec, "acks=all", "linger.ms=5")
	switch mode {
	case perfPlain:
		args = append(args, "enable.idempotence=false")
	case perfIdempotent:
		args = append(args, "enable.idempotence=true")
	case perfTransactional:
		args = append(args, "--transactional-id", txnID, "--transaction-duration-ms", "100")
	}
	return args
}

// runPerf runs ProducerPerformance and checks that it sent every record;
// it may run on a goroutine of its own (it fails the test with Errorf).
func runPerf(t testing.TB, args []string, n int) bool {
	t.Helper()
	res := kafkacluster.RunTool(t, "org.apache.kafka.tools.ProducerPerformance", args...)
	if want := fmt.Sprintf("%d records sent", n); res.ExitCode != 0 || !strings.Contains(res.Stdout, want) {
		t.Errorf("ProducerPerformance %v exited %d without printing %q:\n%s\n%s", args, res.ExitCode, want, res.Stdout, res.Stderr)
		return false
	}
	return true
}

// testProducers (issue 13 items 1 and 2): topics written by Kafka's Java
// producer with every codec, plain, idempotent and transactional, and by
// franz-go transactions of which some abort, are mirrored while they are
// written. Every partition's batches on kmirror are Kafka's bytes at the
// same offsets; the topic ids, partition counts and topic configs are the
// source's; Kafka's DumpLogSegments prints the same batches for kmirror's
// segment files as for Kafka's, and kmirror dump-log reads Kafka's.
func testProducers(t *testing.T, s *source) {
	const perfRecords = 2000
	topicConfigs := map[string]string{"retention.ms": "604800001", "max.message.bytes": "2000000"}
	var topics []string
	for _, c := range codecs {
		topic := "perf-" + c
		s.createTopic(t, topic, 2, topicConfigs)
		topics = append(topics, topic)
	}
	s.createTopic(t, "go-txn", 3, nil)
	topics = append(topics, "go-txn")

	d := startDest(t, 1, nil)
	d.mirror(t, s, "kafka", nil, topics...)
	for _, topic := range topics {
		n := 2
		if topic == "go-txn" {
			n = 3
		}
		d.waitStates(t, "kafka", mirroradmin.StateMirroring, n, topic)
	}

	// The producers write while the mirror copies. One JVM per codec at a
	// time, the three modes one after the other on each topic, so that
	// every topic holds plain, idempotent and transactional batches.
	config := s.producerConfig(t)
	var wg sync.WaitGroup
	for _, c := range codecs {
		wg.Go(func() {
			for _, mode := range []perfMode{perfPlain, perfIdempotent, perfTransactional} {
				if !runPerf(t, perfArgs(s.kc.Bootstrap(), config, "perf-"+c, perfRecords, c, mode, "perf-"+c+"-txn"), perfRecords) {
					return
				}
			}
		})
	}
	wg.Go(func() { goTransactions(t, s, "go-txn", 12) })
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	srcLogs := map[string][][]byte{}
	for _, topic := range topics {
		n := int32(2)
		if topic == "go-txn" {
			n = 3
		}
		srcLogs[topic] = waitSameLogs(t, s, d, topic, n)
	}

	// What the logs hold is what the test meant to write: each codec's
	// batches, plain (no producer id), idempotent and transactional
	// batches and commit markers; committed and aborted Go transactions.
	for _, c := range codecs {
		codec, err := record.ParseCodec(c)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, l := range srcLogs["perf-"+c] {
			for _, b := range batches(t, l) {
				switch {
				case b.isControl():
					kinds[fmt.Sprintf("control %d", b.control)]++
				case b.Codec() != codec:
					t.Errorf("perf-%s holds a batch compressed with %v at %d", c, b.Codec(), b.BaseOffset)
				case b.isTransactional():
					kinds["transactional"]++
				case b.ProducerID >= 0:
					kinds["idempotent"]++
				default:
					kinds["plain"]++
				}
			}
		}
		for _, k := range []string{"plain", "idempotent", "transactional", "control 1"} {
			if kinds[k] == 0 {
				t.Errorf("perf-%s holds no %s batch: %v", c, k, kinds)
			}
		}
		t.Logf("perf-%s: %v", c, kinds)
	}
	markers := map[record.ControlType]int{}
	for _, l := range srcLogs["go-txn"] {
		for _, b := range batches(t, l) {
			if b.isControl() {
				markers[b.control]++
			}
		}
	}
	if markers[0] == 0 || markers[1] == 0 {
		t.Errorf("go-txn holds %d abort and %d commit markers, want both", markers[0], markers[1])
	}

	sameTopicMetadata(t, s, d, topics...)
	sameTopicConfigs(t, s, d, topics...)
	compareDumps(t, s, d, topics)
	dumpPreallocated(t, s)
}

// goTransactions writes n franz-go transactions of 30 records over the
// topic's partitions; every third is aborted.
func goTransactions(t testing.TB, s *source, topic string, n int) {
	cl := s.client(t, kgo.TransactionalID("go-txn-producer"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx := ctxFor(t)
	for i := range n {
		if err := cl.BeginTransaction(); err != nil {
			t.Errorf("begin transaction %d: %v", i, err)
			return
		}
		for j := range 30 {
			cl.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", j), Value: fmt.Appendf(nil, "txn-%d-%d", i, j)}, nil)
		}
		commit := kgo.TryCommit
		if i%3 == 2 {
			commit = kgo.TryAbort
		}
		if err := cl.Flush(ctx); err != nil {
			t.Errorf("flush transaction %d: %v", i, err)
			return
		}
		if err := cl.EndTransaction(ctx, commit); err != nil {
			t.Errorf("end transaction %d: %v", i, err)
			return
		}
	}
}

// sameTopicMetadata checks that each topic has the source's topic id and
// partition count on the destination.
func sameTopicMetadata(t testing.TB, s *source, d *dest, topics ...string) {
	t.Helper()
	sm, err := s.admin(t).Metadata(ctxFor(t), topics...)
	if err != nil {
		t.Fatal(err)
	}
	dm, err := d.admin(t).Metadata(ctxFor(t), topics...)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range topics {
		st, dt := sm.Topics[topic], dm.Topics[topic]
		if st.Err != nil || dt.Err != nil {
			t.Errorf("%s: source %v, destination %v", topic, st.Err, dt.Err)
			continue
		}
		if st.ID != dt.ID {
			t.Errorf("%s: topic id %v on the source, %v on kmirror", topic, st.ID, dt.ID)
		}
		if len(st.Partitions) != len(dt.Partitions) {
			t.Errorf("%s: %d partitions on the source, %d on kmirror", topic, len(st.Partitions), len(dt.Partitions))
		}
	}
}

// neverSynced are the topic configs the config sync leaves alone
// (docs/mirroring.md, Sync).
var neverSynced = []string{"mirror.name", "min.insync.replicas", "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}

// topicConfigs returns the configs set on topic (not defaults).
func topicConfigs(t testing.TB, adm *kadm.Client, topic string) map[string]string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxFor(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("configs of %s: %v %v", topic, err, rc.Err)
	}
	out := map[string]string{}
	for _, c := range rc.Configs {
		if c.Source == 1 && !slices.Contains(neverSynced, c.Key) { // DYNAMIC_TOPIC_CONFIG
			out[c.Key] = c.MaybeValue()
		}
	}
	return out
}

// sameTopicConfigs waits until each topic's configs set on the destination
// are those set on the source.
func sameTopicConfigs(t testing.TB, s *source, d *dest, topics ...string) {
	t.Helper()
	sadm, dadm := s.admin(t), d.admin(t)
	for _, topic := range topics {
		want := topicConfigs(t, sadm, topic)
		poll(t, topic+"'s configs synced", func() (bool, string) {
			got := topicConfigs(t, dadm, topic)
			return maps.Equal(got, want), fmt.Sprintf("kmirror %v, Kafka %v", got, want)
		})
	}
}
