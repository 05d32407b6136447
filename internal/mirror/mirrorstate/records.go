package mirrorstate

import (
	"errors"
	"fmt"

	"github.com/kmirror/kmirror/internal/wire"
)

// Topic is the name of the internal topic holding the records.
const Topic = "__mirror_state"

// RecordType is the int16 that starts every key and says what the record is.
type RecordType int16

// The record types. The numbering is part of the on-disk format.
const (
	// TypePartitionState is a MirrorPartitionState record.
	TypePartitionState RecordType = 0
	// TypeLastMirroredEpoch is a LastMirroredEpochs record.
	TypeLastMirroredEpoch RecordType = 1
)

// String names the record type as dump-log prints it.
func (t RecordType) String() string {
	switch t {
	case TypePartitionState:
		return "MirrorPartitionState"
	case TypeLastMirroredEpoch:
		return "LastMirroredEpochs"
	}
	return fmt.Sprintf("RecordType(%d)", int16(t))
}

// valueVersion is the only value version written so far.
const valueVersion int16 = 0

// ErrMalformed is wrapped by every decode error.
var ErrMalformed = errors.New("malformed __mirror_state record")

// PartitionKey identifies one mirrored partition of one mirror.
type PartitionKey struct {
	Mirror    string
	TopicID   [16]byte
	Partition int32
}

// PartitionValue is the persisted state of a mirrored partition.
type PartitionValue struct {
	// State is the mirror partition state.
	State wire.MirrorPartitionState
	// StateEpoch grows by one with every write of the partition's state;
	// the coordinator refuses a write that does not raise it.
	StateEpoch int32
	// LeaderEpoch is the destination partition's leader epoch of the
	// writer; the coordinator refuses writes from an older one.
	LeaderEpoch int32
	// SourceClusterID is the cluster whose data the partition's log holds
	// a consistent copy of: set when PREPARING completes (the log was
	// truncated for that source), empty before, and cleared when the
	// partition becomes writable (STOPPED) or starts over.
	SourceClusterID string
	// LastError is the reason of FAILED ("" otherwise).
	LastError string
	// UpdateMillis is when the state was written (Unix milliseconds).
	UpdateMillis int64
}

// LMEKey identifies a partition's Last Mirrored Epoch record. It carries no
// mirror name: the cluster asking ReadLastMirroredEpochs does not know the
// names of this cluster's mirrors.
type LMEKey struct {
	TopicID   [16]byte
	Partition int32
}

// LMEValue is the Last Mirrored Epoch of a partition that failed over.
type LMEValue struct {
	// Mirror is the mirror that stopped; deleting that mirror removes the
	// record.
	Mirror string
	// SourceClusterID is the source cluster of that mirror: only a
	// ReadLastMirroredEpochs from that cluster gets the epoch.
	SourceClusterID string
	// LastMirroredEpoch is the greatest source leader epoch in the log at
	// failover, after the truncation to the last stable offset.
	LastMirroredEpoch int32
	// EndOffset is where that epoch ends in this cluster's log (the log end
	// offset at failover, before the MIRROR_PID_RESET barrier).
	EndOffset int64
	// UpdateMillis is when the record was written (Unix milliseconds).
	UpdateMillis int64
}

// Key is a decoded key: Type says which of Partition and LME is set.
type Key struct {
	Type      RecordType
	Partition PartitionKey
	LME       LMEKey
}

// EncodePartitionKey returns the key bytes of a MirrorPartitionState record.
func EncodePartitionKey(k PartitionKey) []byte {
	b := make([]byte, 0, 2+1+len(k.Mirror)+16+4)
	b = wire.AppendInt16(b, int16(TypePartitionState))
	b = wire.AppendCompactString(b, k.Mirror)
	b = wire.AppendUUID(b, k.TopicID)
	return wire.AppendInt32(b, k.Partition)
}

// EncodeLMEKey returns the key bytes of a LastMirroredEpochs record.
func EncodeLMEKey(k LMEKey) []byte {
	b := make([]byte, 0, 2+16+4)
	b = wire.AppendInt16(b, int16(TypeLastMirroredEpoch))
	b = wire.AppendUUID(b, k.TopicID)
	return wire.AppendInt32(b, k.Partition)
}

// EncodePartitionValue returns the value bytes of a MirrorPartitionState
// record.
func EncodePartitionValue(v PartitionValue) []byte {
	b := make([]byte, 0, 32+len(v.SourceClusterID)+len(v.LastError))
	b = wire.AppendInt16(b, valueVersion)
	b = wire.AppendInt8(b, int8(v.State))
	b = wire.AppendInt32(b, v.StateEpoch)
	b = wire.AppendInt32(b, v.LeaderEpoch)
	b = wire.AppendCompactString(b, v.SourceClusterID)
	b = wire.AppendCompactString(b, v.LastError)
	b = wire.AppendInt64(b, v.UpdateMillis)
	return wire.AppendTags(b, nil)
}

// EncodeLMEValue returns the value bytes of a LastMirroredEpochs record.
func EncodeLMEValue(v LMEValue) []byte {
	b := make([]byte, 0, 32+len(v.Mirror)+len(v.SourceClusterID))
	b = wire.AppendInt16(b, valueVersion)
	b = wire.AppendCompactString(b, v.Mirror)
	b = wire.AppendCompactString(b, v.SourceClusterID)
	b = wire.AppendInt32(b, v.LastMirroredEpoch)
	b = wire.AppendInt64(b, v.EndOffset)
	b = wire.AppendInt64(b, v.UpdateMillis)
	return wire.AppendTags(b, nil)
}

// DecodeKey decodes a record key of either type.
func DecodeKey(b []byte) (Key, error) {
	r := wire.NewReader(b)
	k := Key{Type: RecordType(r.Int16())}
	switch k.Type {
	case TypePartitionState:
		k.Partition.Mirror = r.CompactString()
		k.Partition.TopicID = r.UUID()
		k.Partition.Partition = r.Int32()
	case TypeLastMirroredEpoch:
		k.LME.TopicID = r.UUID()
		k.LME.Partition = r.Int32()
	default:
		if r.Err() == nil {
			return Key{}, fmt.Errorf("%w: unknown record type %d", ErrMalformed, int16(k.Type))
		}
	}
	if err := r.Complete(); err != nil {
		return Key{}, fmt.Errorf("%w: key: %v", ErrMalformed, err)
	}
	return k, nil
}

// DecodePartitionValue decodes the value of a MirrorPartitionState record.
// Only version 0 exists; a value of another version (written by a newer
// kmirror) is refused rather than misread.
func DecodePartitionValue(b []byte) (PartitionValue, error) {
	r := wire.NewReader(b)
	if err := readVersion(r); err != nil {
		return PartitionValue{}, err
	}
	var v PartitionValue
	v.State = wire.MirrorPartitionState(r.Int8())
	v.StateEpoch = r.Int32()
	v.LeaderEpoch = r.Int32()
	v.SourceClusterID = r.CompactString()
	v.LastError = r.CompactString()
	v.UpdateMillis = r.Int64()
	r.Tags()
	if err := r.Complete(); err != nil {
		return PartitionValue{}, fmt.Errorf("%w: partition state value: %v", ErrMalformed, err)
	}
	if !v.State.Valid() {
		return PartitionValue{}, fmt.Errorf("%w: partition state value: unknown state %d", ErrMalformed, int8(v.State))
	}
	return v, nil
}

// DecodeLMEValue decodes the value of a LastMirroredEpochs record.
func DecodeLMEValue(b []byte) (LMEValue, error) {
	r := wire.NewReader(b)
	if err := readVersion(r); err != nil {
		return LMEValue{}, err
	}
	var v LMEValue
	v.Mirror = r.CompactString()
	v.SourceClusterID = r.CompactString()
	v.LastMirroredEpoch = r.Int32()
	v.EndOffset = r.Int64()
	v.UpdateMillis = r.Int64()
	r.Tags()
	if err := r.Complete(); err != nil {
		return LMEValue{}, fmt.Errorf("%w: last mirrored epoch value: %v", ErrMalformed, err)
	}
	return v, nil
}

// readVersion reads a value's version; only 0 exists, and a negative one is
// malformed.
func readVersion(r *wire.Reader) error {
	v := r.Int16()
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: value version: %v", ErrMalformed, err)
	}
	if v != valueVersion {
		return fmt.Errorf("%w: unsupported value version %d", ErrMalformed, v)
	}
	return nil
}
