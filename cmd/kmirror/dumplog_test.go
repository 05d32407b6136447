package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
	"github.com/kmirror/kmirror/internal/record"
	"github.com/kmirror/kmirror/internal/storage"
	"github.com/kmirror/kmirror/internal/wire"
)

func runDumpLog(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := &cobra.Command{Use: "kmirror", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newDumpLogCommand())
	var out bytes.Buffer
	root.SetArgs(append([]string{"dump-log"}, args...))
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	return out.String(), err
}

func buildBatch(t *testing.T, spec record.BatchSpec, recs ...record.Record) []byte {
	t.Helper()
	record.NumberRecords(recs)
	if spec.BaseTimestamp == 0 {
		spec.BaseTimestamp = 1_700_000_000_000
	}
	b, err := record.Build(spec, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// writeLog writes batches to a fresh log of tp under dir, closes it and
// returns the partition directory.
func writeLog(t *testing.T, dir string, tp storage.TopicPartition, batches ...[]byte) string {
	t.Helper()
	pdir := filepath.Join(dir, tp.String())
	cfg := storage.DefaultLogConfig()
	cfg.IndexIntervalBytes = 1 // an index entry per batch
	l, err := storage.Open(pdir, tp, cfg, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		origin := storage.OriginClient
		if h, _ := record.ParseHeader(b); h.IsControl() {
			origin = storage.OriginCoordinator
		}
		if _, err := l.AppendAsLeader(b, 3, origin); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return pdir
}

func TestDumpLogSegmentIndexesAndSnapshot(t *testing.T) {
	dir := t.TempDir()
	pdir := writeLog(t, dir, storage.TopicPartition{Topic: "orders", Partition: 0},
		buildBatch(t, record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			record.Record{Key: []byte("k0"), Value: []byte("hello")}, record.Record{Value: []byte("world")}),
		buildBatch(t, record.BatchSpec{ProducerID: 42, ProducerEpoch: 1, BaseSequence: 0, Codec: record.CodecLZ4},
			record.Record{Value: []byte("idem")}),
		buildBatch(t, record.BatchSpec{ProducerID: 7, ProducerEpoch: 0, BaseSequence: 0, Transactional: true},
			record.Record{Value: []byte("in-txn")}),
		record.BuildEndTxnMarker(7, 0, record.EndTxnMarker{Commit: true, CoordinatorEpoch: 5}, 1_700_000_000_001, 3),
		record.BuildMirrorPIDReset(1_700_000_000_002, 3, "src"),
	)
	seg := filepath.Join(pdir, "00000000000000000000.log")
	out, err := runDumpLog(t, "--print-data", seg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Dumping " + seg,
		"Log starting offset: 0",
		"baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 3 isTransactional: false isControl: false",
		"| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 5 sequence: -1 headerKeys: [] key: k0 payload: hello",
		"baseOffset: 2 lastOffset: 2 count: 1 baseSequence: 0 lastSequence: 0 producerId: 42 producerEpoch: 1",
		"compresscodec: lz4",
		"isTransactional: true isControl: false",
		"| offset: 4 CreateTime: 1700000000001 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 5",
		"| offset: 5 CreateTime: 1700000000002 keySize: 4 valueSize: 7 sequence: -1 headerKeys: [] mirrorPidReset: version: 1 sourceClusterId: src",
		"isvalid: true",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	if strings.Contains(out, "isvalid: false") {
		t.Errorf("a batch was reported invalid:\n%s", out)
	}

	// A corrupted byte makes its batch invalid; a torn tail is reported.
	data, _ := os.ReadFile(seg)
	data[len(data)-1] ^= 0xff
	data = append(data, 1, 2, 3)
	bad := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = runDumpLog(t, bad)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "isvalid: false") || !strings.Contains(out, "Found 3 invalid bytes at the end") {
		t.Errorf("corruption not reported:\n%s", out)
	}
	// A zero-filled tail (a crashed broker's zeros written ahead of its
	// appends) is no data, not corruption.
	data, _ = os.ReadFile(seg)
	zeroTail := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(zeroTail, append(data, make([]byte, 4096)...), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err = runDumpLog(t, zeroTail); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Found 4096 zero bytes at the end of the file") || strings.Contains(out, "invalid") {
		t.Errorf("zero tail not reported as such:\n%s", out)
	}

	idx, err := runDumpLog(t, filepath.Join(pdir, "00000000000000000000.index"), filepath.Join(pdir, "00000000000000000000.timeindex"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(idx, "offset: 2 position: ") || !strings.Contains(idx, "timestamp: 1700000000000 offset: ") {
		t.Errorf("index output:\n%s", idx)
	}
	snaps, _ := filepath.Glob(filepath.Join(pdir, "*.snapshot"))
	if len(snaps) == 0 {
		t.Fatal("the log wrote no producer snapshot")
	}
	snap, err := runDumpLog(t, snaps[len(snaps)-1])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(snap, "isvalid: true") {
		t.Errorf("snapshot output:\n%s", snap)
	}
	if _, err := runDumpLog(t, filepath.Join(pdir, "partition.metadata")); err == nil {
		t.Error("an unknown file kind was accepted")
	}
}

func TestDumpLogMirrorState(t *testing.T) {
	id := [16]byte{1, 2, 3}
	k := mirrorstate.EncodePartitionKey(mirrorstate.PartitionKey{Mirror: "west", TopicID: id, Partition: 4})
	v := mirrorstate.EncodePartitionValue(mirrorstate.PartitionValue{State: wire.MirrorStateMirroring, StateEpoch: 2, SourceClusterID: "src"})
	lk := mirrorstate.EncodeLMEKey(mirrorstate.LMEKey{TopicID: id, Partition: 4})
	lv := mirrorstate.EncodeLMEValue(mirrorstate.LMEValue{Mirror: "west", SourceClusterID: "src", LastMirroredEpoch: 6, EndOffset: 99})
	pdir := writeLog(t, t.TempDir(), storage.TopicPartition{Topic: mirrorstate.Topic, Partition: 0},
		buildBatch(t, record.BatchSpec{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1},
			record.Record{Key: k, Value: v}, record.Record{Key: lk, Value: lv}, record.Record{Key: k}))
	out, err := runDumpLog(t, "--print-data", filepath.Join(pdir, "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"key: MirrorPartitionState{mirror=west, topicId=",
		"payload: {state=MIRRORING, stateEpoch=2, leaderEpoch=0, sourceClusterId=\"src\"",
		"key: LastMirroredEpochs{topicId=",
		"payload: {mirror=west, sourceClusterId=\"src\", lastMirroredEpoch=6, endOffset=99",
		"payload: <DELETE>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
}

// TestDumpLogMirrorPIDReset: dump-log names the source cluster of a
// version 1 barrier, still reads the version 0 barriers of older logs, and
// reports a damaged value instead of guessing.
func TestDumpLogMirrorPIDReset(t *testing.T) {
	key := record.EncodeControlKey(record.ControlMirrorPIDReset)
	for _, c := range []struct {
		value []byte
		want  string
	}{
		{record.EncodeMirrorPIDReset(record.MirrorPIDReset{Version: 1, SourceClusterID: "MKtJYmk1Si63JHU6QdLfjg"}), "mirrorPidReset: version: 1 sourceClusterId: MKtJYmk1Si63JHU6QdLfjg"},
		{[]byte{0, 0}, "mirrorPidReset: version: 0"},
		{[]byte{0, 1, 0, 9, 'x'}, "mirrorPidReset: MIRROR_PID_RESET source cluster id of length 9 in 1 bytes: "},
	} {
		if got := controlText(record.Record{Key: key, Value: c.value}); !strings.HasPrefix(got, c.want) {
			t.Errorf("controlText(%x) = %q, want %q", c.value, got, c.want)
		}
	}
}
