package record

import (
	"encoding/binary"
	"fmt"
	"math"
)

// BatchSpec describes a batch to build: everything in the header that does
// not follow from the records.
type BatchSpec struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	ProducerID           int64 // -1 for a non-idempotent producer
	ProducerEpoch        int16 // -1 for a non-idempotent producer
	BaseSequence         int32 // -1 for a non-idempotent producer
	Transactional        bool
	Control              bool
	Codec                Codec
	TimestampType        TimestampType
	BaseTimestamp        int64 // records' TimestampDelta are relative to this
}

// Build encodes records into one complete batch with its CRC. The header's
// LastOffsetDelta is the last record's OffsetDelta and MaxTimestamp is the
// greatest record timestamp (BaseTimestamp when there are no records), so
// records must carry the offset deltas they should have: strictly increasing
// from zero or more (use NumberRecords for 0..n-1).
func Build(spec BatchSpec, records []Record) ([]byte, error) {
	if !spec.Codec.valid() {
		return nil, fmt.Errorf("build batch: unknown codec %d", int8(spec.Codec))
	}
	if len(records) > math.MaxInt32 {
		return nil, fmt.Errorf("build batch: %d records do not fit a batch", len(records))
	}
	size := 0
	maxTS := spec.BaseTimestamp
	lastDelta := int32(0)
	for i := range records {
		r := &records[i]
		if (i == 0 && r.OffsetDelta < 0) || (i > 0 && r.OffsetDelta <= lastDelta) {
			return nil, fmt.Errorf("build batch: record %d has offset delta %d, must be non-negative and increasing", i, r.OffsetDelta)
		}
		if err := checkRecordSizes(r); err != nil {
			return nil, fmt.Errorf("build batch: record %d: %w", i, err)
		}
		lastDelta = r.OffsetDelta
		if ts := spec.BaseTimestamp + r.TimestampDelta; i == 0 || ts > maxTS {
			maxTS = ts
		}
		size += recordSize(r)
	}

	var b []byte
	if spec.Codec == CodecNone {
		b = make([]byte, HeaderSize, HeaderSize+size)
		for i := range records {
			b = appendRecord(b, &records[i])
		}
	} else {
		scratch := getScratch()
		raw := growTo((*scratch)[:0], size)
		for i := range records {
			raw = appendRecord(raw, &records[i])
		}
		var err error
		b, err = Compress(spec.Codec, make([]byte, HeaderSize, HeaderSize+size/2+64), raw)
		*scratch = raw
		putScratch(scratch)
		if err != nil {
			return nil, fmt.Errorf("build batch: %w", err)
		}
	}
	if len(b)-logOverhead > math.MaxInt32 {
		return nil, fmt.Errorf("build batch: %d bytes exceed the maximum batch size", len(b))
	}

	attrs := uint16(spec.Codec)
	if spec.TimestampType == LogAppendTime {
		attrs |= timestampTypeBit
	}
	if spec.Transactional {
		attrs |= transactionalBit
	}
	if spec.Control {
		attrs |= controlBit
	}
	be := binary.BigEndian
	be.PutUint64(b[BaseOffsetPos:], uint64(spec.BaseOffset))
	be.PutUint32(b[LengthPos:], uint32(len(b)-logOverhead))
	be.PutUint32(b[PartitionLeaderEpochPos:], uint32(spec.PartitionLeaderEpoch))
	b[MagicPos] = MagicV2
	be.PutUint16(b[AttributesPos:], attrs)
	be.PutUint32(b[LastOffsetDeltaPos:], uint32(lastDelta))
	be.PutUint64(b[BaseTimestampPos:], uint64(spec.BaseTimestamp))
	be.PutUint64(b[MaxTimestampPos:], uint64(maxTS))
	be.PutUint64(b[ProducerIDPos:], uint64(spec.ProducerID))
	be.PutUint16(b[ProducerEpochPos:], uint16(spec.ProducerEpoch))
	be.PutUint32(b[BaseSequencePos:], uint32(spec.BaseSequence))
	be.PutUint32(b[RecordsCountPos:], uint32(len(records)))
	putCRC(b)
	return b, nil
}

// checkRecordSizes rejects a record whose field lengths or total length an
// int32 varint cannot carry.
func checkRecordSizes(r *Record) error {
	if len(r.Key) > math.MaxInt32 || len(r.Value) > math.MaxInt32 || len(r.Headers) > math.MaxInt32 {
		return fmt.Errorf("key, value or header count too large")
	}
	for i := range r.Headers {
		if len(r.Headers[i].Key) > math.MaxInt32 || len(r.Headers[i].Value) > math.MaxInt32 {
			return fmt.Errorf("header %d too large", i)
		}
	}
	if recordBodySize(r) > math.MaxInt32 {
		return fmt.Errorf("record too large")
	}
	return nil
}

// NumberRecords sets each record's OffsetDelta to its index, the numbering a
// producer gives the records of a new batch.
func NumberRecords(recs []Record) {
	for i := range recs {
		recs[i].OffsetDelta = int32(i)
	}
}
