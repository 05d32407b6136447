package record

import (
	"encoding/binary"
	"fmt"
)

// NextBatch splits the first batch off buf, returning it and the bytes after
// it. If buf is empty or ends inside a batch, it returns an error wrapping
// ErrIncomplete: a fetch response or a segment being appended to may end in a
// partial batch, and that is not corruption. A length field too small to hold
// a header, or a magic other than 2, returns an error wrapping ErrCorrupt; both
// are checked as soon as enough bytes are present, so corruption at the start
// of a large truncated batch is still reported as corruption.
//
// NextBatch checks only the framing; use ValidateCRC on the returned batch.
func NextBatch(buf []byte) (batch []byte, rest []byte, err error) {
	if len(buf) < logOverhead {
		return nil, buf, fmt.Errorf("%d bytes left, need %d for a batch length: %w", len(buf), logOverhead, ErrIncomplete)
	}
	length := int32(binary.BigEndian.Uint32(buf[LengthPos:]))
	if length < minLength {
		return nil, buf, fmt.Errorf("batch length %d below the minimum %d: %w", length, minLength, ErrCorrupt)
	}
	if len(buf) <= MagicPos {
		return nil, buf, fmt.Errorf("%d bytes left, need %d for the magic byte: %w", len(buf), MagicPos+1, ErrIncomplete)
	}
	if magic := int8(buf[MagicPos]); magic != MagicV2 {
		return nil, buf, fmt.Errorf("batch magic %d, want %d: %w", magic, MagicV2, ErrCorrupt)
	}
	size := int(length) + logOverhead
	if len(buf) < size {
		return nil, buf, fmt.Errorf("batch of %d bytes, %d present: %w", size, len(buf), ErrIncomplete)
	}
	return buf[:size:size], buf[size:], nil
}
