package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/kmirror/kmirror/internal/record"
)

// batchFilter decides, batch by batch, what the cleaned log keeps of the
// segments it rewrites (Kafka's Cleaner.cleanInto with MemoryRecords.filterTo).
//
// Per record of a data batch: a record at or above mapEnd (not covered by
// this pass's offset map) is kept; a record without a key is dropped (a
// compacted topic cannot hold one); otherwise it is kept iff its offset is
// at least the map's offset for its key (a key missing from the map has -1)
// and it has a value, or it is a tombstone whose batch has no delete horizon
// yet or one still in the future.
//
// Per batch:
//   - kept whole, byte for byte, when every record is kept and no delete
//     horizon must be set;
//   - rebuilt when records were dropped or a horizon is set: same base
//     offset, last offset delta, partition leader epoch, producer id, epoch
//     and base sequence, attributes and codec (records recompressed), so
//     offsets and producer sequences survive; records keep their offsets and
//     absolute timestamps;
//   - given a delete horizon (attribute bit 6, base timestamp = now +
//     delete.retention.ms) the first time it is kept holding a tombstone, or
//     when it is a transaction marker whose transaction has no batch left;
//     a later pass after the horizon drops the tombstones, and the marker;
//   - kept as an empty batch (header only) when all its records go but it
//     is the last batch of an active producer (its sequence and epoch are
//     what producer state needs after compaction), the last batch before
//     the first uncleanable offset (roundEnd), or the last batch of the
//     segment group being rewritten when nothing else of its segment is
//     kept (see groupEnd);
//   - dropped otherwise when no record is kept.
//
// Control batches keep all their records unless they are transaction
// markers discarded past their horizon. MIRROR_PID_RESET (and any control
// type other than COMMIT/ABORT) is always kept unchanged: it is a barrier for
// producer state — replaying the log, a replica forgets every producer at
// that offset — so removing it would let producers written before a mirror's
// failover reappear in the producer state of a replica that rebuilds it.
type batchFilter struct {
	m      *offsetMap
	mapEnd int64
	// roundEnd is the first uncleanable offset: the batch ending there is
	// kept (possibly empty), as Kafka (4.x) keeps the last batch of a
	// cleaning round.
	roundEnd int64
	// groupEnd is the offset after the last batch of the segment group being
	// rewritten, which is in the group's last non-empty segment. While that
	// segment is read (inLastSegment) and none of its batches was kept yet
	// (keptInLast), the batch ending at groupEnd is kept, possibly empty. So
	// the cleaned segment always ends inside the group's last segment: the
	// recovery of an interrupted swap deletes the old segments that start
	// below the end of the new one, and a cleaned segment ending earlier
	// would leave that old segment behind, giving a log that is neither the
	// old nor the new one.
	groupEnd                  int64
	inLastSegment, keptInLast bool
	nowMs                     int64
	deleteRetentionMs         int64
	producers                 map[int64]activeProducer
	txns                      *cleanerTxns
	maxDecompressed           int
	stats                     *cleanStats

	kept []record.Record // scratch
}

// activeProducer is what the cleaner needs of a producer entry to keep the
// producer's last batch (Kafka's LastRecord).
type activeProducer struct {
	lastDataOffset int64 // last offset of its last data batch; -1 if none
	epoch          int16
}

// keepsLastOf reports whether h is the batch the producer state of its
// producer rests on: the one holding its last data offset or, when it has
// none, its marker of the current epoch.
func (f *batchFilter) keepsLastOf(h record.Header) bool {
	if !h.HasProducerID() {
		return false
	}
	p, ok := f.producers[h.ProducerID]
	if !ok {
		return false
	}
	if p.lastDataOffset >= 0 {
		return h.LastOffset() == p.lastDataOffset
	}
	return h.IsControl() && h.ProducerEpoch == p.epoch
}

// filter appends to dst what the cleaned log keeps of batch (whose header is
// h and whose CRC the caller checked).
func (f *batchFilter) filter(dst []byte, h record.Header, batch []byte) ([]byte, error) {
	n := len(dst)
	dst, err := f.filterBatch(dst, h, batch)
	if f.inLastSegment && len(dst) > n {
		f.keptInLast = true
	}
	return dst, err
}

func (f *batchFilter) filterBatch(dst []byte, h record.Header, batch []byte) ([]byte, error) {
	f.stats.batchesRead++
	f.stats.bytesRead += int64(len(batch))
	f.stats.recordsRead += int64(h.NumRecords)
	var canDiscard, discardRecords bool
	if h.IsControl() {
		ctl, hasRecords := controlTypeForCleaner(h, batch)
		var err error
		if canDiscard, err = f.txns.onControl(h, ctl, hasRecords); err != nil {
			return dst, err
		}
		discardRecords = canDiscard && h.HasDeleteHorizon() && h.BaseTimestamp <= f.nowMs
	} else {
		canDiscard = f.txns.onData(h)
		discardRecords = canDiscard
	}
	next := h.NextOffset()
	retainEmpty := f.keepsLastOf(h) || next == f.roundEnd ||
		(f.inLastSegment && !f.keptInLast && next == f.groupEnd)
	if discardRecords && !retainEmpty {
		return dst, nil
	}

	f.kept = f.kept[:0]
	tombstones := false
	if !discardRecords && h.NumRecords > 0 {
		err := record.ForEachRecord(batch, f.maxDecompressed, func(r record.Record) error {
			if h.IsControl() || f.keepRecord(h, r) {
				f.kept = append(f.kept, r)
				tombstones = tombstones || r.Value == nil
			}
			return nil
		})
		if err != nil {
			return dst, fmt.Errorf("records of batch at offset %d: %w", h.BaseOffset, err)
		}
	}
	if len(f.kept) == 0 {
		if !retainEmpty {
			return dst, nil
		}
		f.stats.batchesKept++
		b := emptyBatch(h)
		f.stats.bytesKept += int64(len(b))
		return append(dst, b...), nil
	}
	f.stats.batchesKept++
	f.stats.recordsKept += int64(len(f.kept))
	needHorizon := (tombstones || (canDiscard && h.IsControl())) && !h.HasDeleteHorizon()
	if len(f.kept) == int(h.NumRecords) && !needHorizon {
		f.stats.bytesKept += int64(len(batch))
		return append(dst, batch...), nil
	}
	horizon, hasHorizon := h.BaseTimestamp, h.HasDeleteHorizon()
	if needHorizon {
		horizon, hasHorizon = f.nowMs+f.deleteRetentionMs, true
	}
	b, err := rebuildCleanedBatch(h, f.kept, horizon, hasHorizon)
	if err != nil {
		return dst, fmt.Errorf("rebuild batch at offset %d: %w", h.BaseOffset, err)
	}
	f.stats.bytesKept += int64(len(b))
	return append(dst, b...), nil
}

// keepRecord applies the per-record rule of a data batch (see batchFilter).
func (f *batchFilter) keepRecord(h record.Header, r record.Record) bool {
	off := h.BaseOffset + int64(r.OffsetDelta)
	if off >= f.mapEnd {
		return true
	}
	if r.Key == nil {
		f.stats.keylessDropped++
		return false
	}
	if off < f.m.get(r.Key) {
		return false
	}
	return r.Value != nil || !h.HasDeleteHorizon() || f.nowMs < h.BaseTimestamp
}

// controlTypeForCleaner returns a control batch's type; hasRecords is false
// for a batch a previous cleaning emptied. An undecodable control record
// yields controlUnknown, which the cleaner keeps (it never drops what it
// does not understand).
func controlTypeForCleaner(h record.Header, batch []byte) (ctl record.ControlType, hasRecords bool) {
	if h.NumRecords == 0 {
		return controlUnknown, false
	}
	ctl, err := record.ControlTypeOf(batch)
	if err != nil {
		return controlUnknown, true
	}
	return ctl, true
}

// attrDeleteHorizon is the batch attribute bit saying the base timestamp is
// the delete horizon set by the cleaner (docs/storage.md, "Segment files").
const attrDeleteHorizon = 0x40

// rebuildCleanedBatch encodes the kept records of the batch h into a new batch with
// h's identity (see batchFilter). The base timestamp becomes the horizon when
// hasHorizon, else the first kept record's timestamp (as Kafka's builder
// does); record timestamp deltas are rewritten so absolute timestamps do not
// change. recs is modified.
func rebuildCleanedBatch(h record.Header, recs []record.Record, horizon int64, hasHorizon bool) ([]byte, error) {
	base := horizon
	if !hasHorizon {
		base = h.BaseTimestamp + recs[0].TimestampDelta
	}
	for i := range recs {
		recs[i].TimestampDelta = h.BaseTimestamp + recs[i].TimestampDelta - base
	}
	b, err := record.Build(record.BatchSpec{
		BaseOffset:           h.BaseOffset,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		BaseSequence:         h.BaseSequence,
		Transactional:        h.IsTransactional(),
		Control:              h.IsControl(),
		Codec:                h.Codec(),
		TimestampType:        h.TimestampType(),
		BaseTimestamp:        base,
	}, recs)
	if err != nil {
		return nil, err
	}
	be := binary.BigEndian
	// The last offset delta stays that of the original batch, whose last
	// record may be gone: it carries the producer's last sequence.
	be.PutUint32(b[record.LastOffsetDeltaPos:], uint32(h.LastOffsetDelta))
	if h.TimestampType() == record.LogAppendTime {
		be.PutUint64(b[record.MaxTimestampPos:], uint64(h.MaxTimestamp))
	}
	if hasHorizon {
		be.PutUint16(b[record.AttributesPos:], be.Uint16(b[record.AttributesPos:])|attrDeleteHorizon)
	}
	be.PutUint32(b[record.CRCPos:], record.ComputeCRC(b))
	return b, nil
}

// emptyBatch returns the header-only batch the cleaner keeps of a batch
// whose records all went (Kafka's writeEmptyHeader): base offset, last
// offset delta, producer id, epoch, base sequence, partition leader epoch,
// max timestamp, timestamp type and the transactional and control flags of
// h; no codec, no delete horizon, base timestamp -1, no records.
func emptyBatch(h record.Header) []byte {
	// Attribute bits kept: timestamp type (3), transactional (4), control (5).
	const keptAttrs = 0x08 | 0x10 | 0x20
	b := make([]byte, record.HeaderSize)
	be := binary.BigEndian
	be.PutUint64(b[record.BaseOffsetPos:], uint64(h.BaseOffset))
	be.PutUint32(b[record.LengthPos:], record.HeaderSize-record.PartitionLeaderEpochPos)
	be.PutUint32(b[record.PartitionLeaderEpochPos:], uint32(h.PartitionLeaderEpoch))
	b[record.MagicPos] = record.MagicV2
	be.PutUint16(b[record.AttributesPos:], uint16(h.Attributes)&keptAttrs)
	be.PutUint32(b[record.LastOffsetDeltaPos:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[record.BaseTimestampPos:], ^uint64(0)) // -1
	be.PutUint64(b[record.MaxTimestampPos:], uint64(h.MaxTimestamp))
	be.PutUint64(b[record.ProducerIDPos:], uint64(h.ProducerID))
	be.PutUint16(b[record.ProducerEpochPos:], uint16(h.ProducerEpoch))
	be.PutUint32(b[record.BaseSequencePos:], uint32(h.BaseSequence))
	be.PutUint32(b[record.RecordsCountPos:], 0)
	be.PutUint32(b[record.CRCPos:], record.ComputeCRC(b))
	return b
}
