package kafkamirror_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kmirror/kmirror/internal/record"
)

// rawLog returns the batches of topic-partition from its log start to its
// high watermark as the partition's leader serves them to a consumer
// (Fetch v12, READ_UNCOMMITTED: control batches and aborted data
// included), and the log start. A mirrored batch keeps every byte, its
// offsets and leader epoch included, so equal bytes are equal logs. opts
// reach the cluster (seeds, TLS, SASL).
func rawLog(opts []kgo.Opt, topic string, partition int32) (int64, []byte, error) {
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(int16(kmsg.Fetch), 12) // v12 names topics
	cl, err := kgo.NewClient(append(opts, kgo.MaxVersions(versions))...)
	if err != nil {
		return 0, nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, nil, err
	}
	so, ok1 := starts.Lookup(topic, partition)
	eo, ok2 := ends.Lookup(topic, partition)
	if !ok1 || !ok2 || so.Err != nil || eo.Err != nil {
		return 0, nil, fmt.Errorf("offsets of %s-%d: %v %v", topic, partition, so.Err, eo.Err)
	}
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return 0, nil, err
	}
	p, ok := md.Topics[topic].Partitions[partition]
	if !ok || p.Leader < 0 {
		return 0, nil, fmt.Errorf("%s-%d has no leader", topic, partition)
	}
	var buf bytes.Buffer
	for off := so.Offset; off < eo.Offset; {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = 12, -1, 8<<20, 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = partition, off, 8<<20
		rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := cl.Broker(int(p.Leader)).Request(ctx, req)
		if err != nil {
			return 0, nil, err
		}
		fr := resp.(*kmsg.FetchResponse)
		if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			return 0, nil, fmt.Errorf("fetch of %s-%d: malformed answer", topic, partition)
		}
		fp := fr.Topics[0].Partitions[0]
		if fp.ErrorCode != 0 {
			return 0, nil, fmt.Errorf("fetch of %s-%d at %d: %w", topic, partition, off, kerr.ErrorForCode(fp.ErrorCode))
		}
		next := off
		for rest := fp.RecordBatches; len(rest) > 0; {
			b, r, err := record.NextBatch(rest)
			if err != nil {
				break // a partial batch at the end of the answer
			}
			h, _ := record.ParseHeader(b)
			if h.LastOffset() >= off && h.BaseOffset < eo.Offset {
				buf.Write(b)
				next = h.NextOffset()
			}
			rest = r
		}
		if next == off {
			return 0, nil, fmt.Errorf("fetch of %s-%d at %d returned no batch below %d", topic, partition, off, eo.Offset)
		}
		off = next
	}
	return so.Offset, buf.Bytes(), nil
}

// batch is one batch of a log: its header, bytes and, for a control
// batch, its control type.
type batch struct {
	record.Header
	raw     []byte
	control record.ControlType // -1 when not a control batch
}

func (b batch) isControl() bool       { return b.Attributes&0x20 != 0 }
func (b batch) isTransactional() bool { return b.Attributes&0x10 != 0 }

// batches splits a log's bytes into batches.
func batches(t testing.TB, data []byte) []batch {
	t.Helper()
	var out []batch
	for rest := data; len(rest) > 0; {
		b, r, err := record.NextBatch(rest)
		if err != nil {
			t.Fatalf("split log: %v", err)
		}
		h, err := record.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		bt := batch{Header: h, raw: b, control: -1}
		if bt.isControl() {
			if bt.control, err = record.ControlTypeOf(b); err != nil {
				t.Fatalf("control batch at %d: %v", h.BaseOffset, err)
			}
		}
		out = append(out, bt)
		rest = r
	}
	return out
}

// waitSameLogs waits until every partition of topic holds the same bytes
// from the same log start on the source and the destination (the whole
// log up to each high watermark, not a prefix) and returns the logs.
func waitSameLogs(t testing.TB, s *source, d *dest, topic string, partitions int32) [][]byte {
	t.Helper()
	var logs [][]byte
	for p := range partitions {
		var last []byte
		poll(t, fmt.Sprintf("%s-%d identical on Kafka and kmirror", topic, p), func() (bool, string) {
			s0, sb, err := rawLog(s.kc.ClientOpts(), topic, p)
			if err != nil {
				return false, "source: " + err.Error()
			}
			d0, db, err := rawLog(d.seeds(), topic, p)
			if err != nil {
				return false, "destination: " + err.Error()
			}
			if s0 != d0 || !bytes.Equal(sb, db) {
				return false, fmt.Sprintf("log start %d vs %d, %d vs %d bytes, first difference at byte %d", s0, d0, len(sb), len(db), firstDiff(sb, db))
			}
			last = sb
			return true, ""
		})
		logs = append(logs, last)
	}
	return logs
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// seeds returns the client options that reach the destination.
func (d *dest) seeds() []kgo.Opt { return []kgo.Opt{kgo.SeedBrokers(d.c.BootstrapAddrs()...)} }

// kadmFor returns an admin client on a new client with opts, closed when
// the test ends.
func kadmFor(t testing.TB, opts []kgo.Opt) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}
