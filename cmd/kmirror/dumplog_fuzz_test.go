package main

import (
	"encoding/binary"
	"io"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/record"
)

// FuzzDumpLog feeds arbitrary file contents to every dump-log printer:
// files on disk are untrusted, and a damaged file must be reported, never
// crash the tool.
func FuzzDumpLog(f *testing.F) {
	f.Add(record.BuildMirrorPIDReset(1, 2, "src"))
	f.Add(record.BuildEndTxnMarker(7, 0, record.EndTxnMarker{Commit: true, CoordinatorEpoch: 3}, 1, 2))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 9})
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, decoder := range []recordDecoder{decodeNone, decodeOffsets, decodeTxn, decodeMirrorState} {
			fl := dumpLogFlags{printData: true, decoder: decoder, maxBytes: 1 << 20}
			if err := dumpSegment(io.Discard, b, 0, fl); err != nil {
				t.Fatalf("dumpSegment failed instead of reporting: %v", err)
			}
		}
		_ = dumpOffsetIndex(io.Discard, b, 0)
		_ = dumpTimeIndex(io.Discard, b, 0)
		_ = dumpSnapshot(io.Discard, b)
	})
}

// FuzzDumpLogDecoders feeds arbitrary record keys and values to the
// internal topic decoders, and arbitrary bytes to the metadata snapshot
// and raft entry printers: all of them read files, and damage must be
// printed, never crash the tool.
func FuzzDumpLogDecoders(f *testing.F) {
	ock := (&kmsg.OffsetCommitKey{Version: 1, Group: "g", Topic: "t", Partition: 3}).AppendTo(nil)
	ocv := (&kmsg.OffsetCommitValue{Version: 3, Offset: 9, LeaderEpoch: 1, CommitTimestamp: 5}).AppendTo(nil)
	gmk := (&kmsg.GroupMetadataKey{Version: 2, Group: "g"}).AppendTo(nil)
	sub := (&kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}).AppendTo(nil)
	gmv := (&kmsg.GroupMetadataValue{Version: 3, ProtocolType: "consumer", Generation: 1,
		Members: []kmsg.GroupMetadataValueMember{{MemberID: "m", Subscription: sub, Assignment: []byte{0, 0, 0, 0, 0, 1}}}}).AppendTo(nil)
	tk := (&kmsg.TxnMetadataKey{TransactionalID: "tx"}).AppendTo(nil)
	tv := (&kmsg.TxnMetadataValue{Version: 1, ProducerID: 4, State: 1, TimeoutMillis: 100,
		Topics: []kmsg.TxnMetadataValueTopic{{Topic: "t", Partitions: []int32{0}}}}).AppendTo(nil)
	batch := metadata.EncodeBatch(nil, []metadata.Record{&metadata.TopicRecord{Name: "t", ID: metadata.Uuid{1}}})
	snap := append([]byte("KMIRMETA\x00\x01"), make([]byte, 16)...)
	snap = binary.AppendUvarint(snap, uint64(len(batch)))
	snap = append(append(snap, batch...), 0, 0, 0, 0, 0, 0, 0, 0, 1)
	f.Add(ock, ocv)
	f.Add(gmk, gmv)
	f.Add(tk, tv)
	f.Add(snap, batch)
	f.Fuzz(func(t *testing.T, key, value []byte) {
		_ = offsetsText(key, value)
		_ = txnText(key, value)
		dumpMetadataSnapshot(io.Discard, key)
		for _, typ := range []raft.LogType{raft.LogCommand, raft.LogConfiguration} {
			printRaftEntry(io.Discard, &raft.Log{Index: 1, Term: 1, Type: typ, Data: value})
		}
	})
}
