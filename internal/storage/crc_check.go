package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/kmirror/kmirror/internal/record"
)

// crcCheck verifies the CRCs of an append's batches on another goroutine
// while the appender writes them. The written bytes stay unpublished (below
// no reader's end) until the check passes; if it fails, the segment is cut
// back and the append refused, so the log is unchanged. A crash before the
// check completes leaves bytes that recovery validates like any other: a bad
// CRC is cut, a good one is a batch the follower (or producer) sent intact.
//
// Only bytes the CRC does not cover (base offset, partition leader epoch)
// may be modified while the check runs, and the caller checks the header's
// structure itself (checkFraming). wait must be called on every path
// before the batches' memory is given back to the caller.
type crcCheck struct {
	done chan struct{}
	err  error // set before done is closed
}

// overlapCRCBytes is the append size from which checking the CRC alongside
// the write pays for the goroutine: CRC-32C runs at several GB/s, about
// the speed of copying into the page cache.
const overlapCRCBytes = 128 << 10

// startCRCCheck starts verifying every batch.
func startCRCCheck(batches [][]byte) *crcCheck {
	c := &crcCheck{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for _, b := range batches {
			// Only the CRC field and the bytes it covers are read: the
			// appender may stamp the base offset and leader epoch meanwhile.
			// (The header's structure was checked by the caller.)
			if stored, computed := binary.BigEndian.Uint32(b[record.CRCPos:]), record.ComputeCRC(b); stored != computed {
				c.err = fmt.Errorf("batch CRC %08x, computed %08x: %w", stored, computed, record.ErrCorrupt)
				return
			}
		}
	}()
	return c
}

// wait returns the result of the check (nil c: nothing to check).
func (c *crcCheck) wait() error {
	if c == nil {
		return nil
	}
	<-c.done
	return c.err
}

// checkFraming makes ValidateCRC's structural checks of a framed batch's
// header, for batches whose CRC a crcCheck verifies.
func checkFraming(h record.Header) error {
	if h.Codec() < record.CodecNone || h.Codec() > record.CodecZstd {
		return fmt.Errorf("batch at offset %d: unknown compression codec %d: %w", h.BaseOffset, int8(h.Codec()), record.ErrCorrupt)
	}
	if h.NumRecords < 0 || h.LastOffsetDelta < 0 {
		return fmt.Errorf("batch at offset %d: negative record count or offset delta: %w", h.BaseOffset, record.ErrCorrupt)
	}
	return nil
}
