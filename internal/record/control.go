package record

import (
	"encoding/binary"
	"fmt"
)

// ControlType is the type of a control record, stored in its key.
type ControlType int16

// Control record types. ControlMirrorPIDReset is kmirror's addition (from the
// cluster mirroring proposal): appended when a mirrored partition fails over,
// it clears all producer state so that the destination's own producers start
// afresh.
const (
	ControlAbort          ControlType = 0
	ControlCommit         ControlType = 1
	ControlLeaderChange   ControlType = 2
	ControlSnapshotHeader ControlType = 3
	ControlSnapshotFooter ControlType = 4
	ControlKRaftVersion   ControlType = 5
	ControlKRaftVoters    ControlType = 6
	ControlMirrorPIDReset ControlType = 7
)

var controlTypeNames = [...]string{
	"ABORT", "COMMIT", "LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER",
	"KRAFT_VERSION", "KRAFT_VOTERS", "MIRROR_PID_RESET",
}

// String returns the Kafka-style name of the type, or UNKNOWN(n).
func (t ControlType) String() string {
	if t >= 0 && int(t) < len(controlTypeNames) {
		return controlTypeNames[t]
	}
	return fmt.Sprintf("UNKNOWN(%d)", int16(t))
}

// controlKeySize is the size of a control record key: version int16 and type
// int16. Later key versions may append fields, which readers skip.
const controlKeySize = 4

// endTxnMarkerValueSize is the size of an end-transaction marker value:
// version int16 and coordinator epoch int32.
const endTxnMarkerValueSize = 6

// EncodeControlKey returns the key of a control record of type t (key
// version 0).
func EncodeControlKey(t ControlType) []byte {
	k := make([]byte, controlKeySize)
	binary.BigEndian.PutUint16(k[2:], uint16(t))
	return k
}

// ParseControlKey returns the type in a control record key. Like Kafka, it
// accepts key versions above 0 (whose extra bytes it ignores) and returns
// types it does not know as they are, for the caller to ignore or reject; a
// key shorter than 4 bytes or with a negative version is corrupt.
func ParseControlKey(key []byte) (ControlType, error) {
	if len(key) < controlKeySize {
		return 0, fmt.Errorf("control record key of %d bytes, need %d: %w", len(key), controlKeySize, ErrCorrupt)
	}
	if v := int16(binary.BigEndian.Uint16(key)); v < 0 {
		return 0, fmt.Errorf("control record key version %d: %w", v, ErrCorrupt)
	}
	return ControlType(binary.BigEndian.Uint16(key[2:])), nil
}

// ControlTypeOf returns the type of the first record of a control batch. It
// does not check the CRC. A batch that is not a control batch, or has no
// records, is an error.
func ControlTypeOf(batch []byte) (ControlType, error) {
	rec, err := firstControlRecord(batch)
	if err != nil {
		return 0, err
	}
	t, err := ParseControlKey(rec.Key)
	if err != nil {
		return 0, fmt.Errorf("batch at offset %d: %w", baseOffsetOf(batch), err)
	}
	return t, nil
}

// firstControlRecord returns the first record of batch, which must be a
// control batch with at least one record.
func firstControlRecord(batch []byte) (Record, error) {
	h, err := parseExact(batch)
	if err != nil {
		return Record{}, err
	}
	if !h.IsControl() {
		return Record{}, fmt.Errorf("batch at offset %d is not a control batch", h.BaseOffset)
	}
	if h.NumRecords == 0 {
		return Record{}, fmt.Errorf("control batch at offset %d has no records: %w", h.BaseOffset, ErrCorrupt)
	}
	data, err := recordsData(h, batch, nil, DefaultMaxDecompressed)
	if err != nil {
		return Record{}, err
	}
	var rec Record
	if _, err := decodeRecord(data, &rec); err != nil {
		return Record{}, fmt.Errorf("batch at offset %d, record 0: %w", h.BaseOffset, err)
	}
	return rec, nil
}

func baseOffsetOf(batch []byte) int64 {
	if len(batch) < LengthPos {
		return -1
	}
	return int64(binary.BigEndian.Uint64(batch))
}

// EndTxnMarker is the content of a transaction's COMMIT or ABORT marker.
type EndTxnMarker struct {
	Commit           bool  // false: abort
	CoordinatorEpoch int32 // epoch of the transaction coordinator that wrote it, for fencing
}

// BuildEndTxnMarker returns a batch holding one COMMIT or ABORT control
// record for the producer, as a transaction coordinator's WriteTxnMarkers
// request makes a partition leader append: control and transactional set,
// base sequence -1, base offset 0 (the log assigns it), timestamp as given.
func BuildEndTxnMarker(producerID int64, producerEpoch int16, m EndTxnMarker, timestamp int64, leaderEpoch int32) []byte {
	t := ControlAbort
	if m.Commit {
		t = ControlCommit
	}
	value := make([]byte, endTxnMarkerValueSize)
	binary.BigEndian.PutUint32(value[2:], uint32(m.CoordinatorEpoch))
	return buildControl(BatchSpec{
		PartitionLeaderEpoch: leaderEpoch,
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
		BaseSequence:         noSequence,
		Transactional:        true,
		Control:              true,
		BaseTimestamp:        timestamp,
	}, t, value)
}

// ParseEndTxnMarker decodes the COMMIT or ABORT marker in a control batch.
// Like Kafka it accepts value versions above 0, ignoring extra bytes. It does
// not check the CRC.
func ParseEndTxnMarker(batch []byte) (EndTxnMarker, error) {
	rec, err := firstControlRecord(batch)
	if err != nil {
		return EndTxnMarker{}, err
	}
	off := baseOffsetOf(batch)
	t, err := ParseControlKey(rec.Key)
	if err != nil {
		return EndTxnMarker{}, fmt.Errorf("batch at offset %d: %w", off, err)
	}
	if t != ControlCommit && t != ControlAbort {
		return EndTxnMarker{}, fmt.Errorf("batch at offset %d holds a %s control record, not a transaction marker", off, t)
	}
	v := rec.Value
	if len(v) < endTxnMarkerValueSize {
		return EndTxnMarker{}, fmt.Errorf("batch at offset %d: transaction marker value of %d bytes, need %d: %w", off, len(v), endTxnMarkerValueSize, ErrCorrupt)
	}
	if ver := int16(binary.BigEndian.Uint16(v)); ver < 0 {
		return EndTxnMarker{}, fmt.Errorf("batch at offset %d: transaction marker version %d: %w", off, ver, ErrCorrupt)
	}
	return EndTxnMarker{Commit: t == ControlCommit, CoordinatorEpoch: int32(binary.BigEndian.Uint32(v[2:]))}, nil
}

// MirrorPIDReset is the value of a MIRROR_PID_RESET control record: which
// source cluster's producers the barrier forgets. Version 0 (the first
// barriers) holds no id; version 1 adds SourceClusterID. Later versions may
// append fields, which readers skip.
//
// Version 1 layout: version int16, then the source cluster id as a Kafka
// (non-flexible) string: int16 length, then that many bytes.
type MirrorPIDReset struct {
	Version         int16
	SourceClusterID string // "" in version 0
}

// MirrorPIDResetVersion is the value version BuildMirrorPIDReset writes.
const MirrorPIDResetVersion int16 = 1

// maxClusterIDLen is the longest source cluster id a version 1 value holds
// (an int16 length); Kafka's cluster ids have 22 characters.
const maxClusterIDLen = 1<<15 - 1

// EncodeMirrorPIDReset returns a MIRROR_PID_RESET record value of
// v.Version (0, or 1 and above written as version 1's fields). A source
// cluster id longer than an int16 length allows is cut to that length: the
// id names the source for people and tools, and the barrier must be
// written whatever a source called itself.
func EncodeMirrorPIDReset(v MirrorPIDReset) []byte {
	out := binary.BigEndian.AppendUint16(nil, uint16(v.Version))
	if v.Version < 1 {
		return out
	}
	id := v.SourceClusterID
	if len(id) > maxClusterIDLen {
		id = id[:maxClusterIDLen]
	}
	out = binary.BigEndian.AppendUint16(out, uint16(len(id)))
	return append(out, id...)
}

// ParseMirrorPIDResetValue decodes a MIRROR_PID_RESET record value. Like
// Kafka's control record readers it accepts versions above the one it
// writes, ignoring bytes after the fields it knows; a value too short for
// its version's fields, a negative version or a negative string length is
// corrupt.
func ParseMirrorPIDResetValue(value []byte) (MirrorPIDReset, error) {
	if len(value) < 2 {
		return MirrorPIDReset{}, fmt.Errorf("MIRROR_PID_RESET value of %d bytes, need 2: %w", len(value), ErrCorrupt)
	}
	v := MirrorPIDReset{Version: int16(binary.BigEndian.Uint16(value))}
	if v.Version < 0 {
		return MirrorPIDReset{}, fmt.Errorf("MIRROR_PID_RESET version %d: %w", v.Version, ErrCorrupt)
	}
	if v.Version == 0 {
		return v, nil
	}
	rest := value[2:]
	if len(rest) < 2 {
		return MirrorPIDReset{}, fmt.Errorf("MIRROR_PID_RESET version %d value of %d bytes, no source cluster id: %w", v.Version, len(value), ErrCorrupt)
	}
	n := int16(binary.BigEndian.Uint16(rest))
	if n < 0 || int(n) > len(rest)-2 {
		return MirrorPIDReset{}, fmt.Errorf("MIRROR_PID_RESET source cluster id of length %d in %d bytes: %w", n, len(rest)-2, ErrCorrupt)
	}
	v.SourceClusterID = string(rest[2 : 2+int(n)])
	return v, nil
}

// ParseMirrorPIDReset decodes the MIRROR_PID_RESET control record of a
// control batch. It does not check the CRC.
func ParseMirrorPIDReset(batch []byte) (MirrorPIDReset, error) {
	rec, err := firstControlRecord(batch)
	if err != nil {
		return MirrorPIDReset{}, err
	}
	off := baseOffsetOf(batch)
	t, err := ParseControlKey(rec.Key)
	if err != nil {
		return MirrorPIDReset{}, fmt.Errorf("batch at offset %d: %w", off, err)
	}
	if t != ControlMirrorPIDReset {
		return MirrorPIDReset{}, fmt.Errorf("batch at offset %d holds a %s control record, not MIRROR_PID_RESET", off, t)
	}
	v, err := ParseMirrorPIDResetValue(rec.Value)
	if err != nil {
		return MirrorPIDReset{}, fmt.Errorf("batch at offset %d: %w", off, err)
	}
	return v, nil
}

// BuildMirrorPIDReset returns a MIRROR_PID_RESET control batch: control set,
// not transactional, no producer (id, epoch and base sequence -1), one record
// whose value is version 1 naming the source cluster whose producers it
// forgets (see EncodeMirrorPIDReset). Appending it makes every replica drop
// all producer state at that offset; a mirrored partition appends one when
// it fails over.
func BuildMirrorPIDReset(timestamp int64, leaderEpoch int32, sourceClusterID string) []byte {
	return buildControl(BatchSpec{
		PartitionLeaderEpoch: leaderEpoch,
		ProducerID:           noProducerID,
		ProducerEpoch:        noProducerEpoch,
		BaseSequence:         noSequence,
		Control:              true,
		BaseTimestamp:        timestamp,
	}, ControlMirrorPIDReset, EncodeMirrorPIDReset(MirrorPIDReset{Version: MirrorPIDResetVersion, SourceClusterID: sourceClusterID}))
}

// buildControl builds an uncompressed batch of one control record.
func buildControl(spec BatchSpec, t ControlType, value []byte) []byte {
	b, err := Build(spec, []Record{{Key: EncodeControlKey(t), Value: value}})
	if err != nil {
		// Build fails only for an unknown codec or oversized fields, neither
		// possible here.
		panic("record: building a control batch: " + err.Error())
	}
	return b
}
