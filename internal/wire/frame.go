package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// ErrFrameTooLarge is returned (wrapped, naming both sizes) when a frame's
// size prefix is negative or above the allowed maximum. Kafka closes the
// connection in that case; nothing is allocated for the claimed size.
var ErrFrameTooLarge = errors.New("frame too large")

// sizePrefixLen is the length of the int32 size that starts every frame.
const sizePrefixLen = 4

// ReadFrame reads one size-prefixed frame from r and returns its payload
// (without the size prefix). A size below zero or above maxSize is an error
// wrapping ErrFrameTooLarge, returned before anything is allocated. buf is
// reused when its capacity is large enough, so the returned slice aliases buf
// and is only valid until buf is reused: a caller that keeps a decoded
// request beyond that (kmsg byte fields such as Produce records alias the
// frame) must hand ReadFrame a fresh buffer.
//
// When buf is too small, a frame above 1 MiB takes a buffer of the shared
// pools (see RecycleFrame) if one is free. Otherwise memory is allocated at
// most 1 MiB at a time before the bytes arrive and then doubles with the
// bytes that actually arrive, so a peer that announces a large frame and
// sends little of it costs at most about twice what it sent (plus 1 MiB).
//
// A clean end of stream before the first byte of the size returns io.EOF; an
// end of stream inside the frame returns io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, maxSize int32, buf []byte) ([]byte, error) {
	var sz [sizePrefixLen]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 0 || n > maxSize {
		return nil, fmt.Errorf("%w: frame of %d bytes, maximum %d", ErrFrameTooLarge, n, maxSize)
	}
	buf, err := readPayload(r, int(n), buf)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read frame of %d bytes: %w", n, err)
	}
	return buf, nil
}

// BeginFrame appends a placeholder for a frame's size prefix. The frame's
// start is len(dst) before the call; FinishFrame fills the prefix in once the
// frame's length is known.
func BeginFrame(dst []byte) []byte { return append(dst, 0, 0, 0, 0) }

// FinishFrame writes the size prefix of the frame that begins at frame[0]
// (as reserved by BeginFrame): the bytes after the prefix plus trailing, the
// bytes the caller will send after frame without holding them in memory (the
// record bytes a Fetch response streams from segment files). It fails, leaving
// the prefix untouched, if frame is shorter than a prefix or the total does
// not fit an int32.
func FinishFrame(frame []byte, trailing int64) error {
	if len(frame) < sizePrefixLen {
		return fmt.Errorf("finish frame: %d bytes is shorter than the size prefix", len(frame))
	}
	total := int64(len(frame)-sizePrefixLen) + trailing
	if trailing < 0 || total > math.MaxInt32 {
		return fmt.Errorf("%w: response of %d bytes does not fit an int32 size", ErrFrameTooLarge, total)
	}
	binary.BigEndian.PutUint32(frame, uint32(total))
	return nil
}

// firstChunk is the most readPayload allocates for a frame before any of
// its payload has arrived.
const firstChunk = 1 << 20

// readPayload reads exactly n bytes into buf (reused if large enough), a
// pooled buffer, or a buffer that grows as the bytes arrive.
func readPayload(r io.Reader, n int, buf []byte) ([]byte, error) {
	if cap(buf) < n {
		if pb := takeFrameBuffer(n); pb != nil {
			buf = pb
		}
	}
	if cap(buf) >= n {
		buf = buf[:n]
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	// The final capacity is the pool's size class of n, so that the buffer
	// can serve later frames of similar size once recycled.
	final := pooledCapacity(n)
	buf = make([]byte, 0, min(final, firstChunk))
	for {
		end := min(n, cap(buf))
		got, err := io.ReadFull(r, buf[len(buf):end])
		buf = buf[:len(buf)+got]
		if err != nil {
			return nil, err
		}
		if len(buf) == n {
			return buf, nil
		}
		nb := make([]byte, len(buf), min(2*cap(buf), final))
		copy(nb, buf)
		buf = nb
	}
}
