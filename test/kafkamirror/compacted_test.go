package kafkamirror_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// logRecord is a record of a log at its offset.
type logRecord struct {
	key, value []byte
	headers    []record.RecordHeader
	tombstone  bool
}

// logRecords decodes a log's data records by offset (control batches
// left out), and counts the batches whose base timestamp is a delete
// horizon (written by a cleaner that kept tombstones).
func logRecords(t testing.TB, data []byte) (map[int64]logRecord, int) {
	t.Helper()
	out, horizons := map[int64]logRecord{}, 0
	for _, b := range batches(t, data) {
		if b.HasDeleteHorizon() {
			horizons++
		}
		if b.isControl() {
			continue
		}
		recs, err := record.Records(b.raw, 64<<20)
		if err != nil {
			t.Fatalf("records of the batch at %d: %v", b.BaseOffset, err)
		}
		for _, r := range recs {
			out[b.BaseOffset+int64(r.OffsetDelta)] = logRecord{key: r.Key, value: r.Value, headers: r.Headers, tombstone: r.Value == nil}
		}
	}
	return out, horizons
}

// latestByKey is what a consumer of the whole log keeps: each key's last
// record, at its offset, keys whose last record is a tombstone left out.
func latestByKey(recs map[int64]logRecord) map[string]string {
	offsets := make([]int64, 0, len(recs))
	for o := range recs {
		offsets = append(offsets, o)
	}
	slices.Sort(offsets)
	out := map[string]string{}
	for _, o := range offsets {
		r := recs[o]
		if r.tombstone {
			delete(out, string(r.key))
			continue
		}
		out[string(r.key)] = fmt.Sprintf("%d:%s", o, r.value)
	}
	return out
}

// testCompacted (issue 13 item 1): a compacted topic with tombstones,
// written while Kafka's cleaner compacts it. The mirror starts on a log
// the cleaner already compacted (gaps between and inside batches, batches
// whose base timestamp became a delete horizon because they keep
// tombstones), and copies the rest while the cleaner keeps cleaning
// behind it. Afterwards the destination holds the source's record at every
// offset both hold, and every key's latest value (or its deletion) at the
// same offset: what a consumer of either cluster reads is the same.
// Byte identity of whole logs cannot hold here: the source cleans what
// the mirror copied before (and kmirror's cleaner, with the synced
// configs, cleans its copy on its own schedule).
func testCompacted(t *testing.T, s *source) {
	const topic = "compacted"
	s.createTopic(t, topic, 1, map[string]string{
		"cleanup.policy":            "compact",
		"segment.ms":                "100", // segments roll on the first append after 100 ms: the cleaner has closed segments to clean
		"min.cleanable.dirty.ratio": "0.01",
		"min.compaction.lag.ms":     "0",
	})
	cl := s.client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	written := 0
	write := func(rounds int) {
		for range rounds {
			var rs []*kgo.Record
			for range 20 {
				r := &kgo.Record{Key: fmt.Appendf(nil, "key-%02d", written%30), Value: fmt.Appendf(nil, "value-%d", written)}
				if written%10 == 9 {
					r.Value = nil // a tombstone
				}
				rs = append(rs, r)
				written++
			}
			if err := cl.ProduceSync(ctxFor(t), rs...).FirstErr(); err != nil {
				t.Fatalf("produce to %s: %v", topic, err)
			}
		}
	}
	sourceLog := func() (map[int64]logRecord, int, int64) {
		start, data, err := rawLog(s.kc.ClientOpts(), topic, 0)
		if err != nil {
			t.Fatalf("source log: %v", err)
		}
		recs, horizons := logRecords(t, data)
		return recs, horizons, start
	}

	// Phase one: the cleaner compacts before the mirror starts. Writing
	// goes on (a segment rolls only on an append) until it has.
	poll(t, "Kafka's cleaner to compact "+topic, func() (bool, string) {
		write(10)
		recs, horizons, _ := sourceLog()
		return len(recs) < written/2 && horizons > 0, fmt.Sprintf("%d records of %d written, %d batches with a delete horizon", len(recs), written, horizons)
	})
	d := startDest(t, 1, nil)
	d.mirror(t, s, "kafka", nil, topic)
	d.waitStates(t, "kafka", mirroradmin.StateMirroring, 1, topic)

	// Phase two: the mirror copies while the cleaner cleans.
	before := written
	began := time.Now()
	for written < before+1500 {
		write(5)
	}
	t.Logf("wrote %d records in %v", written-before, time.Since(began))
	poll(t, "Kafka's cleaner to compact what was written while mirroring", func() (bool, string) {
		write(2)
		recs, _, _ := sourceLog()
		n := 0
		for o := range recs {
			if o >= int64(before) {
				n++
			}
		}
		return n < (written-before)/2, fmt.Sprintf("%d of the %d records written while mirroring left", n, written-before)
	})

	// The destination caught up: its log end is the source's.
	var srcEnd int64
	poll(t, "kmirror at the source's log end", func() (bool, string) {
		ps, err := d.partitions(t, "kafka", topic)
		if err != nil || len(ps) != 1 {
			return false, fmt.Sprint(err)
		}
		ends, err := s.admin(t).ListEndOffsets(ctxFor(t), topic)
		if err != nil {
			return false, err.Error()
		}
		e, _ := ends.Lookup(topic, 0)
		srcEnd = e.Offset
		return ps[0].DestinationLogEndOffset == e.Offset, fmt.Sprintf("kmirror at %d, Kafka at %d (%v %s)", ps[0].DestinationLogEndOffset, e.Offset, ps[0].State, ps[0].LastError)
	})

	srcRecs, _, srcStart := sourceLog()
	dstStart, dstData, err := rawLog(d.seeds(), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	dstRecs, dstHorizons := logRecords(t, dstData)
	if dstStart != srcStart {
		t.Errorf("log start %d on kmirror, %d on Kafka", dstStart, srcStart)
	}
	if dstHorizons == 0 {
		t.Errorf("kmirror's log holds no batch with a delete horizon: the mirror did not copy cleaned batches")
	}
	common := 0
	for o, sr := range srcRecs {
		dr, ok := dstRecs[o]
		if !ok {
			continue
		}
		common++
		if !bytes.Equal(sr.key, dr.key) || !bytes.Equal(sr.value, dr.value) || sr.tombstone != dr.tombstone || !slices.EqualFunc(sr.headers, dr.headers, func(a, b record.RecordHeader) bool {
			return a.Key == b.Key && bytes.Equal(a.Value, b.Value)
		}) {
			t.Errorf("offset %d: kmirror holds %q=%q, Kafka %q=%q", o, dr.key, dr.value, sr.key, sr.value)
		}
	}
	srcLatest, dstLatest := latestByKey(srcRecs), latestByKey(dstRecs)
	if fmt.Sprint(srcLatest) != fmt.Sprint(dstLatest) {
		t.Errorf("latest values by key differ:\nKafka:   %v\nkmirror: %v", srcLatest, dstLatest)
	}
	t.Logf("log end %d: %d records on Kafka, %d on kmirror, %d at the same offsets; %d live keys", srcEnd, len(srcRecs), len(dstRecs), common, len(srcLatest))
	sameTopicConfigs(t, s, d, topic)
}
