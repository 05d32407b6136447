package storage

import "errors"

// Errors of the storage package that have no Kafka error code of their own.
// Errors that do (corrupt input, out-of-range offsets, producer errors) wrap
// the kerr value instead, so that callers can map them to wire codes.
var (
	// ErrClosed is returned by operations on a Log that was closed or
	// deleted.
	ErrClosed = errors.New("storage: log is closed")
	// ErrUnexpectedAppendOffset is wrapped (together with
	// kerr.OffsetOutOfRange) by AppendAsFollower when a batch starts below the
	// log end offset: the follower's log diverged or the fetch raced a
	// truncation.
	ErrUnexpectedAppendOffset = errors.New("storage: batch starts below the log end offset")
	// ErrTruncatedDuringRead is returned by ReadResult.WriteTo or Bytes when
	// the segment was truncated after the read, so the promised bytes are no
	// longer there; the caller must drop the response (Kafka closes the
	// connection in this case).
	ErrTruncatedDuringRead = errors.New("storage: segment truncated during read")
	// ErrCorruptIndex is wrapped by errors about an index file whose size or
	// entries are impossible; the log rebuilds such an index from its segment.
	ErrCorruptIndex = errors.New("storage: corrupt index file")
	// ErrCorruptCheckpoint is wrapped by errors about a malformed checkpoint
	// or metadata file.
	ErrCorruptCheckpoint = errors.New("storage: corrupt checkpoint file")
)

// errRefused marks an append refused by a check that completed only after
// the bytes were written (see crcCheck): the log is unchanged and healthy.
var errRefused = errors.New("append refused")
