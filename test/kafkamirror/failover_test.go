package kafkamirror_test

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/testcluster/kafkacluster"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// startPerf starts a ProducerPerformance in the background: idempotent,
// acks=all, 100 records of 200 bytes per second until stopped.
func startPerf(t testing.TB, bootstrap, config, topic string) *kafkacluster.Tool {
	t.Helper()
	args := perfArgs(bootstrap, config, topic, 1_000_000, "lz4", perfIdempotent, "")
	for i, a := range args {
		if a == "--throughput" {
			args[i+1] = "100"
		}
	}
	return kafkacluster.StartTool(t, "org.apache.kafka.tools.ProducerPerformance", args...)
}

// endOffsets returns a topic's end offsets (high watermarks, or last
// stable offsets with committed) by partition, failing the test on an
// error.
func endOffsets(t testing.TB, opts []kgo.Opt, topic string, committed bool) map[int32]int64 {
	t.Helper()
	out, err := tryEndOffsets(t, opts, topic, committed)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryEndOffsets is endOffsets for polls: right after an election Kafka
// answers OFFSET_NOT_AVAILABLE for a moment.
func tryEndOffsets(t testing.TB, opts []kgo.Opt, topic string, committed bool) (map[int32]int64, error) {
	t.Helper()
	adm := kadmFor(t, opts)
	list := adm.ListEndOffsets
	if committed {
		list = adm.ListCommittedOffsets
	}
	os, err := list(ctxFor(t), topic)
	if err != nil {
		return nil, fmt.Errorf("offsets of %s: %w", topic, err)
	}
	out := map[int32]int64{}
	for _, ps := range os {
		for p, o := range ps {
			if o.Err != nil {
				return nil, fmt.Errorf("offset of %s-%d: %w", topic, p, o.Err)
			}
			out[p] = o.Offset
		}
	}
	return out, nil
}

// testFailover (issue 13 item 5): a Java producer (ProducerPerformance,
// idempotent) writes to Kafka and a franz-go transaction is open on every
// partition when the topic is failed over on kmirror. Each partition's log
// then is the source's batches up to the open transaction's first offset
// — no half transaction, nothing of the open one — and then exactly one
// MIRROR_PID_RESET barrier (control type 7); read_committed sees all of
// it. A Java consumer group (ConsoleConsumer) whose offsets the sync
// copied continues on kmirror exactly there, skipping and repeating
// nothing; a Java idempotent producer then writes to kmirror with a
// producer id none of Kafka's producers had, from sequence 0, in a leader
// epoch above every one of the source's.
func testFailover(t *testing.T, s *source) {
	const topic = "live"
	s.createTopic(t, topic, 3, nil)
	d := startDest(t, 1, nil)
	d.mirror(t, s, "kafka", nil, topic)
	d.waitStates(t, "kafka", mirroradmin.StateMirroring, 3, topic)

	config := s.producerConfig(t)
	perf := startPerf(t, s.kc.Bootstrap(), config, topic)
	poll(t, "the Java producer writing to every partition", func() (bool, string) {
		ends, err := tryEndOffsets(t, s.kc.ClientOpts(), topic, false)
		if err != nil {
			return false, err.Error()
		}
		for p := range int32(3) {
			if ends[p] < 50 {
				return false, fmt.Sprint(ends)
			}
		}
		return true, ""
	})
	consoleConsume(t, s.kc.Bootstrap(), s.kc.ClientProperties(), topic, "java-app", 100)
	synced := groupOffsets(t, s.admin(t), "java-app", topic)

	// A transaction opens on every partition and stays open.
	txn := s.client(t, kgo.TransactionalID("open-txn"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	first := map[int32]int64{}
	for p := range int32(3) {
		r := &kgo.Record{Partition: p, Value: []byte("open-txn")}
		if err := txn.ProduceSync(ctxFor(t), r).FirstErr(); err != nil {
			t.Fatalf("produce in the open transaction: %v", err)
		}
		first[p] = r.Offset
	}
	t.Cleanup(func() { _ = txn.EndTransaction(ctxFor(t), kgo.TryAbort) })
	poll(t, "kmirror past the open transaction's first records and the group synced", func() (bool, string) {
		ps, err := d.partitions(t, "kafka", topic)
		if err != nil || len(ps) != 3 {
			return false, fmt.Sprint(err)
		}
		for _, p := range ps {
			if p.DestinationLogEndOffset <= first[p.Partition] {
				return false, fmt.Sprintf("partition %d at %d, open transaction at %d", p.Partition, p.DestinationLogEndOffset, first[p.Partition])
			}
		}
		got := groupOffsets(t, d.admin(t), "java-app", topic)
		return maps.Equal(got, synced), fmt.Sprintf("group on kmirror %v, on Kafka %v", got, synced)
	})

	// Fail over while the Java producer writes and the transaction is open.
	res, err := d.adm.Failover(ctxFor(t), "kafka", topic)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("fail over: %v", err)
	}
	d.waitStates(t, "kafka", mirroradmin.StateStopped, 3, topic)

	sourceProducers := map[int64]bool{}
	cut := map[int32]int64{}
	for p := range int32(3) {
		_, src, err := rawLog(s.kc.ClientOpts(), topic, p)
		if err != nil {
			t.Fatal(err)
		}
		_, dst, err := rawLog(d.seeds(), topic, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range batches(t, src) {
			sourceProducers[b.ProducerID] = true
		}
		db := batches(t, dst)
		if len(db) == 0 {
			t.Fatalf("%s-%d is empty on kmirror", topic, p)
		}
		last := db[len(db)-1]
		n := 0
		for _, b := range db {
			if b.isControl() && b.control == record.ControlMirrorPIDReset {
				n++
			}
		}
		if n != 1 || last.control != record.ControlMirrorPIDReset {
			t.Fatalf("%s-%d: %d barriers, the last batch at %d has control type %d", topic, p, n, last.BaseOffset, last.control)
		}
		if last.BaseOffset != first[p] {
			t.Errorf("%s-%d: the barrier is at %d, the open transaction began at %d", topic, p, last.BaseOffset, first[p])
		}
		cut[p] = last.BaseOffset
		// Up to the barrier, the source's bytes.
		var prefix []byte
		for _, b := range batches(t, src) {
			if b.BaseOffset < last.BaseOffset {
				prefix = append(prefix, b.raw...)
			}
		}
		if before := dst[:len(dst)-len(last.raw)]; !bytes.Equal(before, prefix) {
			t.Errorf("%s-%d: kmirror's %d bytes before the barrier are not the source's %d bytes before %d", topic, p, len(before), len(prefix), last.BaseOffset)
		}
		if open := openTransactions(t, db); len(open) > 0 {
			t.Errorf("%s-%d: transactions of producers %v are open in kmirror's log", topic, p, open)
		}
	}
	if hw, lso := endOffsets(t, d.seeds(), topic, false), endOffsets(t, d.seeds(), topic, true); !maps.Equal(hw, lso) {
		t.Errorf("after the failover the last stable offsets %v are not the log ends %v", lso, hw)
	}

	// The Java consumer group continues on kmirror at the synced offsets.
	// (A partition the group committed nothing for starts from the
	// beginning: --from-beginning.)
	want := 0
	start := map[int32]int64{}
	for p := range int32(3) {
		if o, ok := synced[p]; ok {
			start[p], _ = strconv.ParseInt(strings.Split(o, "/")[0], 10, 64)
		}
		want += int(cut[p] - start[p])
	}
	got := consoleConsume(t, d.c.Bootstrap(), "", topic, "java-app", want)
	next := maps.Clone(start)
	for _, r := range got {
		if r.offset != next[r.partition] {
			t.Fatalf("ConsoleConsumer on kmirror read %s-%d at %d, want %d (synced %v)", topic, r.partition, r.offset, next[r.partition], synced)
		}
		if r.value == "open-txn" {
			t.Fatalf("ConsoleConsumer read the open transaction's record at %s-%d %d", topic, r.partition, r.offset)
		}
		next[r.partition]++
	}
	for p := range int32(3) {
		if next[p] != cut[p] {
			t.Errorf("ConsoleConsumer on kmirror stopped %s-%d at %d, its end is %d", topic, p, next[p], cut[p])
		}
	}

	// A Java idempotent producer writes to kmirror.
	stopped := perf.Stop()
	t.Logf("the Java producer on Kafka: %s", lastLine(stopped.Stdout))
	runPerf(t, perfArgs(d.c.Bootstrap(), "", topic, 600, "zstd", perfIdempotent, ""), 600)
	wrote := 0
	for p := range int32(3) {
		_, dst, err := rawLog(d.seeds(), topic, p)
		if err != nil {
			t.Fatal(err)
		}
		db := batches(t, dst)
		var barrierEpoch, sourceEpoch int32 = -1, -1
		seq := map[int64]int32{}
		for _, b := range db {
			switch {
			case b.BaseOffset < cut[p]:
				sourceEpoch = max(sourceEpoch, b.PartitionLeaderEpoch)
			case b.BaseOffset == cut[p]:
				barrierEpoch = b.PartitionLeaderEpoch
			default:
				wrote++
				if sourceProducers[b.ProducerID] {
					t.Errorf("%s-%d: kmirror's producer id %d at %d is one of Kafka's", topic, p, b.ProducerID, b.BaseOffset)
				}
				if want, ok := seq[b.ProducerID]; !ok && b.BaseSequence != 0 || ok && b.BaseSequence != want {
					t.Errorf("%s-%d: producer %d's batch at %d has sequence %d", topic, p, b.ProducerID, b.BaseOffset, b.BaseSequence)
				}
				seq[b.ProducerID] = b.BaseSequence + b.NumRecords
				if b.PartitionLeaderEpoch <= sourceEpoch || b.PartitionLeaderEpoch < barrierEpoch {
					t.Errorf("%s-%d: batch at %d in leader epoch %d, the source's reached %d and the barrier is in %d", topic, p, b.BaseOffset, b.PartitionLeaderEpoch, sourceEpoch, barrierEpoch)
				}
			}
		}
	}
	if wrote == 0 {
		t.Errorf("the Java producer wrote nothing to %s after the barriers", topic)
	}
}

// openTransactions returns the producers whose transaction is open at the
// end of a log: a transactional batch not followed by its marker.
func openTransactions(t testing.TB, bs []batch) []int64 {
	open := map[int64]bool{}
	for _, b := range bs {
		switch {
		case b.isControl() && b.control == record.ControlMirrorPIDReset:
			clear(open)
		case b.isControl():
			delete(open, b.ProducerID)
		case b.isTransactional():
			open[b.ProducerID] = true
		}
	}
	return slices.Sorted(maps.Keys(open))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
