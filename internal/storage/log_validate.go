package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/record"
)

// inBatch is one validated batch of an append.
type inBatch struct {
	data       []byte
	h          record.Header
	ctl        record.ControlType // -1 for data batches
	coordEpoch int32

	fixMaxTs bool  // the header's max timestamp must become maxTs
	maxTs    int64 // the largest record timestamp
}

// validateLeaderInput is Kafka's LogValidator for a leader append, made
// before offsets are assigned and without the log's lock: framing, CRC,
// size, the rules for the origin, every record (count, offset deltas 0..n-1,
// keys on compacted topics, timestamps within the configured bounds), and
// recompression when compression.type asks for a codec the batch does not
// have. rebuilt reports whether any batch was replaced (so the input is no
// longer one contiguous buffer).
//
// The CRCs of a large append are checked by the returned check while it is
// written (nothing is published before it passes), unless the leader must
// rewrite CRC-covered bytes first (LogAppendTime stamping, recompression).
// With overlap, when the batches are uncompressed data batches, the record
// walks are left to that check too, so only the headers are checked here;
// a batch whose header holds the wrong max timestamp, which the leader must
// correct (a CRC-covered rewrite), then fails the check with
// errRedoSerially, and the caller appends again without overlap. The walk
// of compressed batches (their decompression) stays here, out of the log's
// lock, so that producers to one partition decompress in parallel.
func validateLeaderInput(tp TopicPartition, batches []byte, cfg LogConfig, origin AppendOrigin, nowMs int64, maxDecompressed int, overlap bool) (out []inBatch, rebuilt bool, check *crcCheck, err error) {
	target, keep, err := cfg.targetCodec()
	if err != nil {
		return nil, false, nil, err
	}
	var framed [][]byte
	rest := batches
	for len(rest) > 0 {
		b, r, err := record.NextBatch(rest)
		if err != nil {
			if errors.Is(err, record.ErrIncomplete) {
				return nil, false, nil, fmt.Errorf("append to %s: input ends in a partial batch: %w", tp, kerr.CorruptMessage)
			}
			return nil, false, nil, fmt.Errorf("append to %s: %w", tp, err)
		}
		framed = append(framed, b)
		rest = r
	}
	deferCRC := len(batches) >= overlapCRCBytes && cfg.MessageTimestampType == record.CreateTime && keep
	deferWalks := overlap && deferCRC && plainData(framed)
	if deferCRC && !deferWalks {
		// Checked alongside the record walks below and the write.
		check = startCRCCheck(framed)
	}
	fail := func(err error) ([]inBatch, bool, *crcCheck, error) {
		// A corrupt batch is reported as such, whatever else is wrong.
		cerr := check.wait()
		if deferWalks {
			cerr = checkCRCs(framed)
		}
		if cerr != nil {
			err = cerr
		}
		return nil, false, nil, fmt.Errorf("append to %s: %w", tp, err)
	}
	var walks []func() error
	for _, b := range framed {
		ib, rb, walk, err := validateLeaderBatch(b, cfg, origin, nowMs, maxDecompressed, target, keep, deferCRC, deferWalks)
		if err != nil {
			return fail(err)
		}
		if ib.fixMaxTs {
			// Rewriting the header changes CRC-covered bytes: the check
			// must be over first.
			if err := check.wait(); err != nil {
				return fail(err)
			}
			binary.BigEndian.PutUint64(ib.data[record.MaxTimestampPos:], uint64(ib.maxTs))
			binary.BigEndian.PutUint32(ib.data[record.CRCPos:], record.ComputeCRC(ib.data))
			ib.h.MaxTimestamp = ib.maxTs
		}
		rebuilt = rebuilt || rb
		out = append(out, ib)
		walks = append(walks, walk)
	}
	if len(out) == 0 {
		return nil, false, nil, fmt.Errorf("append to %s: no record batch: %w", tp, kerr.InvalidRecord)
	}
	if deferWalks {
		check = startBatchCheck(framed, walks)
	}
	return out, rebuilt, check, nil
}

// plainData reports whether every batch is an uncompressed data batch: the
// batches whose record walk a leader defers to its check (see
// validateLeaderInput).
func plainData(framed [][]byte) bool {
	for _, b := range framed {
		h, err := record.ParseHeader(b)
		if err != nil || h.IsControl() || h.Codec() != record.CodecNone {
			return false
		}
	}
	return true
}

// validateLeaderBatch validates one framed batch of a leader append. With
// deferCRC the CRC is left to the caller's check (the record walk tolerates
// any bytes, and a CRC failure is reported before anything else). With
// deferWalk only the header is checked here, and walk (nil otherwise) is
// the rest of the validation, for the check that runs while the batch is
// written: it runs after the batch's CRC passed and fails with
// errRedoSerially if the header's max timestamp must be corrected.
func validateLeaderBatch(b []byte, cfg LogConfig, origin AppendOrigin, nowMs int64, maxDecompressed int, target record.Codec, keep, deferCRC, deferWalk bool) (ib inBatch, rebuilt bool, walk func() error, err error) {
	if !deferCRC {
		if err := record.ValidateCRC(b); err != nil {
			return inBatch{}, false, nil, err
		}
	}
	h, err := record.ParseHeader(b)
	if err == nil {
		err = checkFraming(h)
	}
	if err != nil {
		return inBatch{}, false, nil, err
	}
	if len(b) > int(cfg.MaxMessageBytes) {
		return inBatch{}, false, nil, fmt.Errorf("batch of %d bytes exceeds max.message.bytes %d: %w", len(b), cfg.MaxMessageBytes, kerr.MessageTooLarge)
	}
	if err := checkLeaderBatchHeader(h, origin); err != nil {
		return inBatch{}, false, nil, err
	}
	ib = inBatch{data: b, h: h, ctl: -1, coordEpoch: -1}
	v := &recordValidator{cfg: cfg, nowMs: nowMs, h: h}
	if deferWalk {
		// Only the records section is read: the appender stamps the base
		// offset and leader epoch of the header meanwhile.
		payload := b[record.HeaderSize:]
		walk = func() error {
			if err := v.scan(payload, maxDecompressed); err != nil {
				return err
			}
			if v.maxTsWrong() {
				return errRedoSerially
			}
			return nil
		}
		return ib, false, walk, nil
	}
	recompress := !keep && !h.IsControl() && h.Codec() != target
	if recompress {
		// The records are rebuilt: decode them whole and keep them.
		err = record.ForEachRecord(b, maxDecompressed, v.keep)
		if err == nil {
			err = v.checkCount()
		}
	} else {
		err = v.scan(b[record.HeaderSize:], maxDecompressed)
	}
	if err != nil {
		return inBatch{}, false, nil, err
	}
	if recompress {
		nb, err := recompressBatch(h, v.recs, target)
		if err != nil {
			return inBatch{}, false, nil, fmt.Errorf("recompress: %w", err)
		}
		if len(nb) > int(cfg.MaxMessageBytes) {
			return inBatch{}, false, nil, fmt.Errorf("recompressed batch of %d bytes exceeds max.message.bytes %d: %w", len(nb), cfg.MaxMessageBytes, kerr.MessageTooLarge)
		}
		b, rebuilt = nb, true
		h, _ = record.ParseHeader(b)
		ib.data, ib.h = b, h
	}
	if !rebuilt && v.maxTsWrong() {
		// Kafka stores the true largest record timestamp in the header; the
		// caller rewrites it.
		ib.fixMaxTs, ib.maxTs = true, v.maxTs
	}
	if h.IsControl() {
		ctl, err := record.ControlTypeOf(b)
		if err != nil {
			return inBatch{}, false, nil, err
		}
		ib.ctl = ctl
		if ctl == record.ControlAbort || ctl == record.ControlCommit {
			m, err := record.ParseEndTxnMarker(b)
			if err != nil {
				return inBatch{}, false, nil, err
			}
			ib.coordEpoch = m.CoordinatorEpoch
		}
	}
	return ib, rebuilt, nil, nil
}

// checkLeaderBatchHeader applies Kafka's per-batch rules of a leader append.
func checkLeaderBatchHeader(h record.Header, origin AppendOrigin) error {
	if h.NumRecords <= 0 {
		return fmt.Errorf("batch has %d records: %w", h.NumRecords, kerr.InvalidRecord)
	}
	if int64(h.LastOffsetDelta)+1 != int64(h.NumRecords) {
		return fmt.Errorf("batch offset range of %d does not match its %d records: %w", int64(h.LastOffsetDelta)+1, h.NumRecords, kerr.InvalidRecord)
	}
	if h.IsTransactional() && !h.HasProducerID() {
		return fmt.Errorf("transactional batch without a producer id: %w", kerr.InvalidRecord)
	}
	if origin == OriginClient {
		if h.IsControl() {
			return fmt.Errorf("clients may not write control batches: %w", kerr.InvalidRecord)
		}
		if h.HasProducerID() && h.BaseSequence < 0 {
			return fmt.Errorf("invalid sequence %d for producer %d: %w", h.BaseSequence, h.ProducerID, kerr.InvalidRecord)
		}
	}
	return nil
}

// recordValidator checks each record of a leader batch.
type recordValidator struct {
	cfg   LogConfig
	nowMs int64
	h     record.Header

	n     int
	maxTs int64
	recs  []record.Record // kept by keep, for recompression
}

// scan checks every record of a batch's records section (payload: the
// batch after its header, which was parsed and checked into v.h) and their
// count.
func (v *recordValidator) scan(payload []byte, maxDecompressed int) error {
	if err := record.ScanPayload(v.h, payload, maxDecompressed, v.check); err != nil {
		return err
	}
	return v.checkCount()
}

// checkCount fails if the walk found another number of records than the
// header claims.
func (v *recordValidator) checkCount() error {
	if v.n != int(v.h.NumRecords) {
		return fmt.Errorf("batch claims %d records, has %d: %w", v.h.NumRecords, v.n, kerr.InvalidRecord)
	}
	return nil
}

// maxTsWrong reports, after a walk, whether the header's max timestamp is
// not the records' largest one, which Kafka corrects for CreateTime topics.
func (v *recordValidator) maxTsWrong() bool {
	return v.cfg.MessageTimestampType == record.CreateTime && v.h.TimestampType() == record.CreateTime && v.n > 0 && v.h.MaxTimestamp != v.maxTs
}

// keep checks r and keeps it.
func (v *recordValidator) keep(r record.Record) error {
	if err := v.check(record.RecordMeta{TimestampDelta: r.TimestampDelta, OffsetDelta: r.OffsetDelta, NullKey: r.Key == nil}); err != nil {
		return err
	}
	v.recs = append(v.recs, r)
	return nil
}

func (v *recordValidator) check(r record.RecordMeta) error {
	if r.OffsetDelta != int32(v.n) {
		return fmt.Errorf("record %d has offset delta %d: %w", v.n, r.OffsetDelta, kerr.InvalidRecord)
	}
	if v.cfg.CleanupPolicy.Compact && r.NullKey && !v.h.IsControl() {
		return fmt.Errorf("compacted topic cannot accept a record without a key: %w", kerr.InvalidRecord)
	}
	ts := v.h.BaseTimestamp + r.TimestampDelta
	if v.n == 0 || ts > v.maxTs {
		v.maxTs = ts
	}
	if v.cfg.MessageTimestampType == record.CreateTime && ts != -1 {
		if !timestampInRange(ts, v.nowMs, v.cfg.MessageTimestampBeforeMaxMs, v.cfg.MessageTimestampAfterMaxMs) {
			return fmt.Errorf("timestamp %d of record %d is out of range [now-%d, now+%d] (now %d): %w",
				ts, v.n, v.cfg.MessageTimestampBeforeMaxMs, v.cfg.MessageTimestampAfterMaxMs, v.nowMs, kerr.InvalidTimestamp)
		}
	} else if v.h.TimestampType() == record.LogAppendTime {
		return fmt.Errorf("producers may not set the LogAppendTime timestamp type: %w", kerr.InvalidTimestamp)
	}
	v.n++
	return nil
}

// timestampInRange is Kafka's check: now-before <= ts <= now+after, computed
// without overflow for the "unlimited" Long.MaxValue bounds.
func timestampInRange(ts, now, before, after int64) bool {
	if ts < now {
		return uint64(now)-uint64(ts) <= uint64(before) || before == math.MaxInt64
	}
	return uint64(ts)-uint64(now) <= uint64(after) || after == math.MaxInt64
}

// recompressBatch re-encodes a batch's records with another codec, keeping
// everything else of its header.
func recompressBatch(h record.Header, recs []record.Record, codec record.Codec) ([]byte, error) {
	b, err := record.Build(record.BatchSpec{
		BaseOffset:           h.BaseOffset,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		BaseSequence:         h.BaseSequence,
		Transactional:        h.IsTransactional(),
		Control:              h.IsControl(),
		Codec:                codec,
		TimestampType:        h.TimestampType(),
		BaseTimestamp:        h.BaseTimestamp,
	}, recs)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// validateFollowerInput splits and checks batches for a follower or mirror
// append: framing and CRC of every batch (no decompression), offsets
// increasing from batch to batch. A trailing partial batch is dropped.
func validateFollowerInput(tp TopicPartition, batches []byte) ([]inBatch, int, *crcCheck, error) {
	var out []inBatch
	var framed [][]byte
	rest := batches
	total := 0
	for len(rest) > 0 {
		b, r, err := record.NextBatch(rest)
		if err != nil {
			if errors.Is(err, record.ErrIncomplete) {
				break
			}
			return nil, 0, nil, fmt.Errorf("append to %s: %w", tp, err)
		}
		framed = append(framed, b)
		total += len(b)
		rest = r
	}
	// A large append's CRCs are checked while it is written (crcCheck);
	// the header and control record parsing below tolerate any bytes.
	var crc *crcCheck
	if total >= overlapCRCBytes {
		crc = startCRCCheck(framed)
	}
	fail := func(err error) ([]inBatch, int, *crcCheck, error) {
		if cerr := crc.wait(); cerr != nil {
			err = cerr
		}
		return nil, 0, nil, fmt.Errorf("append to %s: %w", tp, err)
	}
	for _, b := range framed {
		if crc == nil {
			if err := record.ValidateCRC(b); err != nil {
				return fail(err)
			}
		}
		h, err := record.ParseHeader(b)
		if err == nil {
			err = checkFraming(h)
		}
		if err != nil {
			return fail(err)
		}
		if h.BaseOffset < 0 || h.BaseOffset > math.MaxInt64-int64(h.LastOffsetDelta)-1 {
			return fail(fmt.Errorf("batch base offset %d is invalid: %w", h.BaseOffset, kerr.CorruptMessage))
		}
		if n := len(out); n > 0 && h.BaseOffset <= out[n-1].h.LastOffset() {
			return fail(fmt.Errorf("batch at offset %d does not follow the batch ending at %d: %w",
				h.BaseOffset, out[n-1].h.LastOffset(), kerr.CorruptMessage))
		}
		ib := inBatch{data: b, h: h, ctl: -1, coordEpoch: -1}
		if h.IsControl() && h.NumRecords > 0 {
			ctl, err := record.ControlTypeOf(b)
			if err != nil {
				return fail(err)
			}
			ib.ctl = ctl
			if ctl == record.ControlAbort || ctl == record.ControlCommit {
				m, err := record.ParseEndTxnMarker(b)
				if err != nil {
					return fail(err)
				}
				ib.coordEpoch = m.CoordinatorEpoch
			}
		}
		out = append(out, ib)
	}
	return out, total, crc, nil
}
