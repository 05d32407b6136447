package storage

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kmirror/kmirror/internal/record"
)

// crcCheck verifies the CRCs of an append's batches on another goroutine
// while the appender writes them, and for a leader's append (see
// startBatchCheck) the rest of the batches' validation too. The written
// bytes stay unpublished (below no reader's end) until the check passes; if
// it fails, the segment is cut back and the append refused, so the log is
// unchanged. A crash before the check completes leaves bytes that recovery
// validates like any other: a bad CRC is cut, a good one is a batch the
// follower (or producer) sent intact.
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

// errRedoSerially fails a leader's batch check when a batch's header must be
// rewritten (its max timestamp corrected) before it is written: the append
// is refused and made again with the batches validated first.
var errRedoSerially = errors.New("batch header must be corrected before the write")

// startCRCCheck starts verifying every batch's CRC.
func startCRCCheck(batches [][]byte) *crcCheck { return startBatchCheck(batches, nil) }

// startBatchCheck starts verifying every batch's CRC and, if walks is not
// nil, running walks[i] once batch i's CRC passed (the batch is then in
// this goroutine's cache). A CRC failure of any batch is the result, even
// if an earlier walk failed: a corrupt batch is reported as such.
func startBatchCheck(batches [][]byte, walks []func() error) *crcCheck {
	c := &crcCheck{done: make(chan struct{})}
	go func() {
		defer close(c.done)
		var walkErr error
		for i, b := range batches {
			if err := checkCRC(b); err != nil {
				c.err = err
				return
			}
			if walks != nil && walkErr == nil {
				walkErr = walks[i]()
			}
		}
		c.err = walkErr
	}()
	return c
}

// checkCRC verifies a framed batch's CRC, reading only the CRC field and
// the bytes it covers: the appender may stamp the base offset and leader
// epoch meanwhile. (The header's structure is checked by the caller.)
func checkCRC(b []byte) error {
	if stored, computed := binary.BigEndian.Uint32(b[record.CRCPos:]), record.ComputeCRC(b); stored != computed {
		return fmt.Errorf("batch CRC %08x, computed %08x: %w", stored, computed, record.ErrCorrupt)
	}
	return nil
}

// checkCRCs verifies the CRC of every framed batch, in order.
func checkCRCs(batches [][]byte) error {
	for _, b := range batches {
		if err := checkCRC(b); err != nil {
			return err
		}
	}
	return nil
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
