package record

import "fmt"

// ValidateRecords makes every check of ValidateCRC, then decompresses the
// batch (output limited to maxDecompressed bytes, a guard against
// decompression bombs; <= 0 selects DefaultMaxDecompressed) and walks every
// record: each must be well formed with a length matching its fields, there
// must be exactly NumRecords of them with no bytes after the last, and offset
// deltas must fit the header.
//
// With strictOffsets (producer input, which Kafka requires to be numbered
// from zero) the batch must hold at least one record, offset deltas must be
// exactly 0..n-1 and LastOffsetDelta must be n-1. Without it (batches that
// were already in some log: replicated, mirrored or compacted ones) deltas
// must be strictly increasing, non-negative and the last one at most
// LastOffsetDelta, which admits the gaps and empty batches compaction leaves.
//
// Failures wrap ErrCorrupt.
func ValidateRecords(batch []byte, strictOffsets bool, maxDecompressed int) error {
	if err := ValidateCRC(batch); err != nil {
		return err
	}
	h, _ := ParseHeader(batch) // cannot fail after ValidateCRC
	if strictOffsets {
		if h.NumRecords == 0 {
			return fmt.Errorf("batch at offset %d has no records: %w", h.BaseOffset, ErrCorrupt)
		}
		if h.LastOffsetDelta != h.NumRecords-1 {
			return fmt.Errorf("batch at offset %d: last offset delta %d with %d records: %w", h.BaseOffset, h.LastOffsetDelta, h.NumRecords, ErrCorrupt)
		}
	} else if int64(h.NumRecords) > int64(h.LastOffsetDelta)+1 {
		return fmt.Errorf("batch at offset %d: %d records cannot fit offset deltas 0..%d: %w", h.BaseOffset, h.NumRecords, h.LastOffsetDelta, ErrCorrupt)
	}

	scratch := getScratch()
	defer putScratch(scratch)
	data, err := recordsData(h, batch, *scratch, maxDecompressed)
	if err != nil {
		return err
	}
	if h.Codec() != CodecNone {
		keepScratch(scratch, batch, data)
	}
	prev := int32(-1)
	it := recordIter{h: h, data: data}
	var rec Record
	for i := 0; ; i++ {
		ok, err := it.next(&rec)
		if !ok {
			return err
		}
		d := rec.OffsetDelta
		switch {
		case strictOffsets && d != int32(i):
			return fmt.Errorf("batch at offset %d, record %d: offset delta %d, want %d: %w", h.BaseOffset, i, d, i, ErrCorrupt)
		case d <= prev:
			return fmt.Errorf("batch at offset %d, record %d: offset delta %d does not follow %d: %w", h.BaseOffset, i, d, prev, ErrCorrupt)
		case d > h.LastOffsetDelta:
			return fmt.Errorf("batch at offset %d, record %d: offset delta %d beyond last offset delta %d: %w", h.BaseOffset, i, d, h.LastOffsetDelta, ErrCorrupt)
		}
		prev = d
	}
}
