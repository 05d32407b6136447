package record

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// castagnoli is the CRC-32C table; hash/crc32 uses the CPU's CRC instructions
// for it where available, which matters on the produce and recovery paths.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ComputeCRC returns the CRC-32C of batch from the attributes field to the
// end of the slice, the value the header's CRC field must hold. Pass exactly
// one batch. A slice too short to reach the attributes field yields the CRC of
// no bytes.
func ComputeCRC(batch []byte) uint32 {
	if len(batch) <= AttributesPos {
		return 0
	}
	return crc32.Checksum(batch[AttributesPos:], castagnoli)
}

// ValidateCRC checks that batch is exactly one well-formed batch header plus
// its declared number of bytes, with a known codec, non-negative record count
// and last offset delta, and a matching CRC. It does not decompress or look at
// records; it is the check to run on every batch that is stored or appended
// unchanged. Failures wrap ErrCorrupt.
func ValidateCRC(batch []byte) error {
	h, err := parseExact(batch)
	if err != nil {
		return err
	}
	if got := ComputeCRC(batch); got != h.CRC {
		return fmt.Errorf("batch at offset %d: crc %#08x, header says %#08x: %w", h.BaseOffset, got, h.CRC, ErrCorrupt)
	}
	return nil
}

// parseExact parses the header of a slice that must hold exactly one batch and
// applies the structural checks every reader needs before trusting the header.
func parseExact(batch []byte) (Header, error) {
	h, err := ParseHeader(batch)
	if err != nil {
		if len(batch) < HeaderSize {
			// A lone batch that is short is malformed, whatever the reason.
			return h, fmt.Errorf("batch of %d bytes is shorter than a header: %w", len(batch), ErrCorrupt)
		}
		return h, err
	}
	if h.Size() != len(batch) {
		return h, fmt.Errorf("batch at offset %d: length field says %d bytes, have %d: %w", h.BaseOffset, h.Size(), len(batch), ErrCorrupt)
	}
	if !h.Codec().valid() {
		return h, fmt.Errorf("batch at offset %d: unknown compression codec %d: %w", h.BaseOffset, int8(h.Codec()), ErrCorrupt)
	}
	if h.NumRecords < 0 {
		return h, fmt.Errorf("batch at offset %d: negative record count %d: %w", h.BaseOffset, h.NumRecords, ErrCorrupt)
	}
	if h.LastOffsetDelta < 0 {
		return h, fmt.Errorf("batch at offset %d: negative last offset delta %d: %w", h.BaseOffset, h.LastOffsetDelta, ErrCorrupt)
	}
	return h, nil
}

// putCRC stores the CRC of batch into its header.
func putCRC(batch []byte) {
	binary.BigEndian.PutUint32(batch[CRCPos:], ComputeCRC(batch))
}
