package record

import (
	"encoding/binary"
	"fmt"
	"math"
)

// HeaderSize is the size in bytes of a v2 batch header, from the base offset
// through the records count. The records (or their compressed stream) follow.
const HeaderSize = 61

// MagicV2 is the only message format version kmirror reads and writes.
const MagicV2 = 2

// Byte positions of the header fields. The CRC covers [AttributesPos, end), so
// the fields before CRCPos may be rewritten without recomputing it.
const (
	BaseOffsetPos           = 0
	LengthPos               = 8
	PartitionLeaderEpochPos = 12
	MagicPos                = 16
	CRCPos                  = 17
	AttributesPos           = 21
	LastOffsetDeltaPos      = 23
	BaseTimestampPos        = 27
	MaxTimestampPos         = 35
	ProducerIDPos           = 43
	ProducerEpochPos        = 51
	BaseSequencePos         = 53
	RecordsCountPos         = 57
)

// logOverhead is the number of bytes before and including the length field;
// the length field counts everything after it.
const logOverhead = LengthPos + 4

// minLength is the smallest legal value of the length field: a header with no
// records.
const minLength = HeaderSize - logOverhead

// Attribute bits of the batch header.
const (
	codecMask              = 0x07
	timestampTypeBit       = 0x08
	transactionalBit       = 0x10
	controlBit             = 0x20
	deleteHorizonBit       = 0x40
	noSequence       int32 = -1
	noProducerID     int64 = -1
	noProducerEpoch  int16 = -1
)

// TimestampType says what a batch's timestamps mean.
type TimestampType int8

const (
	// CreateTime timestamps were set by the producer.
	CreateTime TimestampType = 0
	// LogAppendTime timestamps were set by the broker on append; the batch's
	// MaxTimestamp is the append time and records' own timestamps are ignored.
	LogAppendTime TimestampType = 1
)

// String returns Kafka's name of the timestamp type.
func (t TimestampType) String() string {
	switch t {
	case CreateTime:
		return "CreateTime"
	case LogAppendTime:
		return "LogAppendTime"
	}
	return fmt.Sprintf("TimestampType(%d)", int8(t))
}

// Header is the decoded fixed-size header of a v2 record batch.
type Header struct {
	BaseOffset           int64
	Length               int32 // bytes after the length field; see Size
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64 // the delete horizon when HasDeleteHorizon
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// ParseHeader decodes the header at the start of b. It needs at least
// HeaderSize bytes (else an error wrapping ErrIncomplete) and rejects a magic
// other than 2 or a length too small to hold the header (ErrCorrupt). It does
// not check the CRC or that b holds the whole batch; see ValidateCRC.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("batch header needs %d bytes, have %d: %w", HeaderSize, len(b), ErrIncomplete)
	}
	h := Header{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[BaseOffsetPos:])),
		Length:               int32(binary.BigEndian.Uint32(b[LengthPos:])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[PartitionLeaderEpochPos:])),
		Magic:                int8(b[MagicPos]),
		CRC:                  binary.BigEndian.Uint32(b[CRCPos:]),
		Attributes:           int16(binary.BigEndian.Uint16(b[AttributesPos:])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[LastOffsetDeltaPos:])),
		BaseTimestamp:        int64(binary.BigEndian.Uint64(b[BaseTimestampPos:])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[MaxTimestampPos:])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[ProducerIDPos:])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[ProducerEpochPos:])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[BaseSequencePos:])),
		NumRecords:           int32(binary.BigEndian.Uint32(b[RecordsCountPos:])),
	}
	if h.Magic != MagicV2 {
		return h, fmt.Errorf("batch at offset %d has magic %d, want %d: %w", h.BaseOffset, h.Magic, MagicV2, ErrCorrupt)
	}
	if h.Length < minLength {
		return h, fmt.Errorf("batch at offset %d has length %d, below the minimum %d: %w", h.BaseOffset, h.Length, minLength, ErrCorrupt)
	}
	return h, nil
}

// Size is the total number of bytes of the batch, header included.
func (h Header) Size() int { return int(h.Length) + logOverhead }

// LastOffset is the offset of the batch's last record (or, for a batch
// emptied by compaction, the last offset it once held).
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset that follows the batch in its log.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Codec is the compression codec of the batch's records.
func (h Header) Codec() Codec { return Codec(h.Attributes & codecMask) }

// TimestampType says whether MaxTimestamp is a create time or a log append time.
func (h Header) TimestampType() TimestampType {
	if h.Attributes&timestampTypeBit != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// IsTransactional reports whether the batch belongs to a transaction (its
// records are invisible to READ_COMMITTED readers until the commit marker).
func (h Header) IsTransactional() bool { return h.Attributes&transactionalBit != 0 }

// IsControl reports whether the batch holds control records (transaction
// markers, MIRROR_PID_RESET, ...) rather than user data.
func (h Header) IsControl() bool { return h.Attributes&controlBit != 0 }

// HasDeleteHorizon reports whether compaction has set a delete horizon, which
// then replaces the base timestamp.
func (h Header) HasDeleteHorizon() bool { return h.Attributes&deleteHorizonBit != 0 }

// HasProducerID reports whether the batch was written by an idempotent or
// transactional producer.
func (h Header) HasProducerID() bool { return h.ProducerID >= 0 }

// LastSequence is the sequence number of the batch's last record, or -1 if
// the batch has no sequence. Sequences wrap from MaxInt32 to 0, as Kafka's do.
func (h Header) LastSequence() int32 {
	if h.BaseSequence == noSequence {
		return noSequence
	}
	return incrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// incrementSequence adds inc to seq, wrapping past MaxInt32 to 0 the way
// Kafka's producers and brokers do.
func incrementSequence(seq, inc int32) int32 {
	if seq > math.MaxInt32-inc {
		return inc - (math.MaxInt32 - seq) - 1
	}
	return seq + inc
}
