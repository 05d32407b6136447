package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorstate"
	"github.com/kmirror/kmirror/internal/record"
)

func init() {
	rootCmd.AddCommand(newDumpLogCommand())
}

// dumpLogFlags are the options of `kmirror dump-log`.
type dumpLogFlags struct {
	printData bool
	decoder   recordDecoder
	maxBytes  int
}

// recordDecoder says how the records of a segment are printed.
type recordDecoder int8

// Record decoders: keys and values as text or hex, or decoded as the
// records of an internal topic.
const (
	decodeNone recordDecoder = iota
	decodeOffsets
	decodeTxn
	decodeMirrorState
)

// decoderTopics are the internal topics whose partition directories
// select a decoder by themselves.
var decoderTopics = map[string]recordDecoder{
	"__consumer_offsets":  decodeOffsets,
	"__transaction_state": decodeTxn,
	mirrorstate.Topic:     decodeMirrorState,
}

// decoderFor returns the decoder of a segment at path: the one asked for,
// else its partition directory's.
func decoderFor(path string, asked recordDecoder) recordDecoder {
	if asked != decodeNone {
		return asked
	}
	dir := filepath.Base(filepath.Dir(path))
	if i := strings.LastIndexByte(dir, '-'); i > 0 {
		if d, ok := decoderTopics[dir[:i]]; ok {
			return d
		}
	}
	return decodeNone
}

// decoderFlag is a boolean flag that selects a record decoder and, as in
// Kafka's tool, implies --print-data.
type decoderFlag struct {
	f *dumpLogFlags
	d recordDecoder
}

func (v decoderFlag) String() string { return strconv.FormatBool(v.f != nil && v.f.decoder == v.d) }

func (v decoderFlag) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	if on {
		if v.f.decoder != decodeNone && v.f.decoder != v.d {
			return errors.New("only one record decoder can be chosen")
		}
		v.f.decoder, v.f.printData = v.d, true
	}
	return nil
}

func (v decoderFlag) Type() string { return "bool" }

// newDumpLogCommand builds `kmirror dump-log`, kmirror's
// kafka-dump-log.sh: it prints the batches of segment files (.log), the
// entries of offset (.index) and time (.timeindex) indexes, and producer
// snapshots (.snapshot), in Kafka's layout.
func newDumpLogCommand() *cobra.Command {
	f := &dumpLogFlags{}
	cmd := &cobra.Command{
		Use:   "dump-log FILE...",
		Short: "Print the contents of partition files (.log, .index, .timeindex, .snapshot) and of the metadata log",
		Long: `Print the contents of partition files like Kafka's kafka-dump-log.sh:

  .log        every record batch: offsets, leader epoch, producer id and
              epoch, sequences, transactional and control flags, CRC and
              whether it is valid; with --print-data every record, control
              records by name (COMMIT, ABORT, MIRROR_PID_RESET, ...)
  .index      offset index entries (offset, position)
  .timeindex  time index entries (timestamp, offset)
  .snapshot   producer state snapshot entries

The records of internal topics are decoded: those of __consumer_offsets
(offset commits and group metadata), __transaction_state (transaction
metadata) and __mirror_state partitions, by their directory's name, or of
any segment with --offsets-decoder, --transaction-log-decoder or
--mirror-state-decoder (each implies --print-data).

The metadata log is decoded too: give its raft.db, a snapshot's state.bin,
or its directory (__cluster_metadata-0, under metadata.log.dir or the first
log directory) for both. Every entry's metadata records print as JSON,
SCRAM secrets and password configs redacted. The raft.db of a running node
is read from a copy.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var errs []error
			for _, path := range args {
				if err := dumpFile(cmd.OutOrStdout(), path, *f); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", path, err))
				}
			}
			return errors.Join(errs...)
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&f.printData, "print-data", false, "print every record of every batch (also --deep-iteration)")
	fs.BoolVar(&f.printData, "deep-iteration", false, "same as --print-data")
	for _, d := range []struct {
		name, usage string
		d           recordDecoder
	}{
		{"offsets-decoder", "decode records as __consumer_offsets records (implies --print-data)", decodeOffsets},
		{"transaction-log-decoder", "decode records as __transaction_state records (implies --print-data)", decodeTxn},
		{"mirror-state-decoder", "decode records as __mirror_state records (implies --print-data)", decodeMirrorState},
	} {
		fs.Var(decoderFlag{f, d.d}, d.name, d.usage)
		fs.Lookup(d.name).NoOptDefVal = "true"
	}
	fs.IntVar(&f.maxBytes, "max-decompressed-bytes", record.DefaultMaxDecompressed, "largest decompressed batch to print the records of")
	return cmd
}

// dumpFile prints one file according to its suffix (or name, for the
// metadata log), or a metadata log directory.
func dumpFile(w io.Writer, path string, f dumpLogFlags) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	base := filepath.Base(path)
	switch {
	case st.IsDir():
		if !isMetadataDir(path) {
			return fmt.Errorf("a directory, and not the metadata log's (no %s or %s in it)", raftStoreFile, snapshotsDir)
		}
		return dumpMetadataDir(w, path)
	case base == raftStoreFile:
		fmt.Fprintf(w, "Dumping %s\n", path)
		return dumpRaftStore(w, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Dumping %s\n", path)
	switch {
	case base == snapshotDataFile:
		printSnapshotMeta(w, filepath.Join(filepath.Dir(path), snapshotMetaFile))
		dumpMetadataSnapshot(w, data)
		return nil
	case strings.HasSuffix(base, ".log"):
		f.decoder = decoderFor(path, f.decoder)
		return dumpSegment(w, data, baseOffsetOf(base), f)
	case strings.HasSuffix(base, ".timeindex"):
		return dumpTimeIndex(w, data, baseOffsetOf(base))
	case strings.HasSuffix(base, ".index"):
		return dumpOffsetIndex(w, data, baseOffsetOf(base))
	case strings.HasSuffix(base, ".snapshot"):
		return dumpSnapshot(w, data)
	}
	return fmt.Errorf("unknown file kind (want .log, .index, .timeindex, .snapshot, %s or %s)", raftStoreFile, snapshotDataFile)
}

// baseOffsetOf reads the base offset from a segment file's name, -1 if the
// name is not a 20-digit offset.
func baseOffsetOf(name string) int64 {
	stem, _, _ := strings.Cut(name, ".")
	off, err := strconv.ParseInt(stem, 10, 64)
	if err != nil {
		return -1
	}
	return off
}

// dumpSegment prints a segment's batches and, with printData, records.
func dumpSegment(w io.Writer, data []byte, base int64, f dumpLogFlags) error {
	if base >= 0 {
		fmt.Fprintf(w, "Log starting offset: %d\n", base)
	}
	pos := 0
	for pos < len(data) {
		batch, _, err := record.NextBatch(data[pos:])
		if err != nil {
			printTail(w, data, pos, err)
			return nil
		}
		h, err := record.ParseHeader(batch)
		if err != nil {
			printTail(w, data, pos, err)
			return nil
		}
		valid := record.ValidateCRC(batch) == nil
		lastSeq := int32(-1)
		if h.BaseSequence >= 0 {
			lastSeq = h.LastSequence()
		}
		horizon := "OptionalLong.empty"
		if h.HasDeleteHorizon() {
			horizon = "OptionalLong[" + strconv.FormatInt(h.BaseTimestamp, 10) + "]"
		}
		fmt.Fprintf(w, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d "+
			"partitionLeaderEpoch: %d isTransactional: %t isControl: %t deleteHorizonMs: %s position: %d %s: %d size: %d magic: %d "+
			"compresscodec: %s crc: %d isvalid: %t\n",
			h.BaseOffset, h.LastOffset(), h.NumRecords, h.BaseSequence, lastSeq, h.ProducerID, h.ProducerEpoch,
			h.PartitionLeaderEpoch, h.IsTransactional(), h.IsControl(), horizon, pos, timestampName(h), h.MaxTimestamp,
			len(batch), h.Magic, codecName(h.Codec()), h.CRC, valid)
		if f.printData {
			if err := dumpRecords(w, batch, h, f); err != nil {
				fmt.Fprintf(w, "| records unreadable: %v\n", err)
			}
		}
		pos += len(batch)
	}
	return nil
}

// printTail describes the bytes from pos on, where no batch starts: zeros
// (what a broker writes ahead of its appends, left by a crash, or pages a
// crash left unwritten) or invalid bytes.
func printTail(w io.Writer, data []byte, pos int, err error) {
	if bytes.Count(data[pos:], []byte{0}) == len(data)-pos {
		fmt.Fprintf(w, "Found %d zero bytes at the end of the file (position %d): no data\n", len(data)-pos, pos)
		return
	}
	fmt.Fprintf(w, "Found %d invalid bytes at the end of the file (position %d): %v\n", len(data)-pos, pos, err)
}

func timestampName(h record.Header) string {
	if h.TimestampType() == record.LogAppendTime {
		return "LogAppendTime"
	}
	return "CreateTime"
}

func codecName(c record.Codec) string {
	switch c {
	case record.CodecNone:
		return "none"
	case record.CodecGzip:
		return "gzip"
	case record.CodecSnappy:
		return "snappy"
	case record.CodecLZ4:
		return "lz4"
	case record.CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", c)
}

// dumpRecords prints a batch's records.
func dumpRecords(w io.Writer, batch []byte, h record.Header, f dumpLogFlags) error {
	return record.ForEachRecord(batch, f.maxBytes, func(r record.Record) error {
		seq := int32(-1)
		if h.BaseSequence >= 0 {
			seq = h.BaseSequence + r.OffsetDelta
		}
		var keys []string
		for _, hd := range r.Headers {
			keys = append(keys, hd.Key)
		}
		fmt.Fprintf(w, "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]",
			h.BaseOffset+int64(r.OffsetDelta), timestampName(h), h.BaseTimestamp+r.TimestampDelta,
			sizeOf(r.Key), sizeOf(r.Value), seq, strings.Join(keys, ","))
		switch {
		case h.IsControl():
			fmt.Fprintf(w, " %s", controlText(r))
		case f.decoder == decodeMirrorState:
			fmt.Fprintf(w, " %s", mirrorStateText(r))
		case f.decoder == decodeOffsets:
			fmt.Fprintf(w, " %s", offsetsText(r.Key, r.Value))
		case f.decoder == decodeTxn:
			fmt.Fprintf(w, " %s", txnText(r.Key, r.Value))
		default:
			if r.Key != nil {
				fmt.Fprintf(w, " key: %s", printable(r.Key))
			}
			if r.Value != nil {
				fmt.Fprintf(w, " payload: %s", printable(r.Value))
			}
		}
		fmt.Fprintln(w)
		return nil
	})
}

func sizeOf(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// controlText decodes a control record.
func controlText(r record.Record) string {
	ct, err := record.ParseControlKey(r.Key)
	if err != nil {
		return "controlRecord: " + err.Error()
	}
	switch ct {
	case record.ControlCommit, record.ControlAbort:
		if len(r.Value) >= 6 {
			return fmt.Sprintf("endTxnMarker: %s coordinatorEpoch: %d", ct, int32(binary.BigEndian.Uint32(r.Value[2:6])))
		}
		return fmt.Sprintf("endTxnMarker: %s (value of %d bytes)", ct, len(r.Value))
	case record.ControlMirrorPIDReset:
		v, err := record.ParseMirrorPIDResetValue(r.Value)
		if err != nil {
			return "mirrorPidReset: " + err.Error()
		}
		if v.Version == 0 {
			return "mirrorPidReset: version: 0"
		}
		return fmt.Sprintf("mirrorPidReset: version: %d sourceClusterId: %s", v.Version, printable([]byte(v.SourceClusterID)))
	}
	return "controlType: " + ct.String()
}

// mirrorStateText decodes a __mirror_state record.
func mirrorStateText(r record.Record) string {
	k, err := mirrorstate.DecodeKey(r.Key)
	if err != nil {
		return fmt.Sprintf("key: %s (%v)", printable(r.Key), err)
	}
	var out string
	switch k.Type {
	case mirrorstate.TypePartitionState:
		out = fmt.Sprintf("key: %s{mirror=%s, topicId=%s, partition=%d}", k.Type, k.Partition.Mirror, metadata.Uuid(k.Partition.TopicID), k.Partition.Partition)
	default:
		out = fmt.Sprintf("key: %s{topicId=%s, partition=%d}", k.Type, metadata.Uuid(k.LME.TopicID), k.LME.Partition)
	}
	if r.Value == nil {
		return out + " payload: <DELETE>"
	}
	switch k.Type {
	case mirrorstate.TypePartitionState:
		v, err := mirrorstate.DecodePartitionValue(r.Value)
		if err != nil {
			return out + " payload: " + err.Error()
		}
		return out + fmt.Sprintf(" payload: {state=%s, stateEpoch=%d, leaderEpoch=%d, sourceClusterId=%q, lastError=%q, updateMs=%d}",
			v.State, v.StateEpoch, v.LeaderEpoch, v.SourceClusterID, v.LastError, v.UpdateMillis)
	default:
		v, err := mirrorstate.DecodeLMEValue(r.Value)
		if err != nil {
			return out + " payload: " + err.Error()
		}
		return out + fmt.Sprintf(" payload: {mirror=%s, sourceClusterId=%q, lastMirroredEpoch=%d, endOffset=%d, updateMs=%d}",
			v.Mirror, v.SourceClusterID, v.LastMirroredEpoch, v.EndOffset, v.UpdateMillis)
	}
}

// printable shows bytes as text when they are valid UTF-8 without control
// characters, else as hex.
func printable(b []byte) string {
	if utf8.Valid(b) && !strings.ContainsFunc(string(b), func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return string(b)
	}
	return fmt.Sprintf("0x%x", b)
}

// dumpOffsetIndex prints an offset index: 8-byte entries of a relative
// offset and a file position. A preallocated index ends with zeroed
// entries, which are not printed.
func dumpOffsetIndex(w io.Writer, data []byte, base int64) error {
	base = max(base, 0)
	for i := 0; i+8 <= len(data); i += 8 {
		rel := int32(binary.BigEndian.Uint32(data[i:]))
		pos := int32(binary.BigEndian.Uint32(data[i+4:]))
		if i > 0 && rel == 0 && pos == 0 {
			break
		}
		fmt.Fprintf(w, "offset: %d position: %d\n", base+int64(rel), pos)
	}
	if len(data)%8 != 0 {
		fmt.Fprintf(w, "Found %d trailing bytes that are not an entry\n", len(data)%8)
	}
	return nil
}

// dumpTimeIndex prints a time index: 12-byte entries of a timestamp and a
// relative offset.
func dumpTimeIndex(w io.Writer, data []byte, base int64) error {
	base = max(base, 0)
	for i := 0; i+12 <= len(data); i += 12 {
		ts := int64(binary.BigEndian.Uint64(data[i:]))
		rel := int32(binary.BigEndian.Uint32(data[i+8:]))
		if i > 0 && ts == 0 && rel == 0 {
			break
		}
		fmt.Fprintf(w, "timestamp: %d offset: %d\n", ts, base+int64(rel))
	}
	if len(data)%12 != 0 {
		fmt.Fprintf(w, "Found %d trailing bytes that are not an entry\n", len(data)%12)
	}
	return nil
}

// dumpSnapshot prints a producer state snapshot (Kafka's version 1 format:
// version int16, crc uint32 over the rest, count int32, then 46-byte
// entries).
func dumpSnapshot(w io.Writer, data []byte) error {
	const header, entry = 10, 46
	if len(data) < header {
		return fmt.Errorf("%d bytes is shorter than a snapshot header", len(data))
	}
	version := int16(binary.BigEndian.Uint16(data))
	crc := binary.BigEndian.Uint32(data[2:])
	valid := crc == crc32.Checksum(data[6:], crc32.MakeTable(crc32.Castagnoli))
	count := int32(binary.BigEndian.Uint32(data[6:]))
	fmt.Fprintf(w, "version: %d crc: %d isvalid: %t count: %d\n", version, crc, valid, count)
	body := data[header:]
	for i := 0; i+entry <= len(body); i += entry {
		p := body[i:]
		fmt.Fprintf(w, "producerId: %d producerEpoch: %d coordinatorEpoch: %d currentTxnFirstOffset: %d lastTimestamp: %d "+
			"firstSequence: %d lastSequence: %d lastOffset: %d offsetDelta: %d\n",
			int64(binary.BigEndian.Uint64(p)), int16(binary.BigEndian.Uint16(p[8:])), int32(binary.BigEndian.Uint32(p[34:])),
			int64(binary.BigEndian.Uint64(p[38:])), int64(binary.BigEndian.Uint64(p[26:])),
			int32(binary.BigEndian.Uint32(p[10:]))-int32(binary.BigEndian.Uint32(p[22:])), int32(binary.BigEndian.Uint32(p[10:])),
			int64(binary.BigEndian.Uint64(p[14:])), int32(binary.BigEndian.Uint32(p[22:])))
	}
	if len(body)%entry != 0 || int64(count) != int64(len(body)/entry) {
		fmt.Fprintf(w, "Found %d bytes of entries for a count of %d\n", len(body), count)
	}
	return nil
}
