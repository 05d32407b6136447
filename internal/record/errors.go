package record

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrIncomplete reports that a buffer ends inside a batch. It is not
// corruption: a fetch response, or a segment being written, may end in a
// partial batch, and the caller should stop reading there.
var ErrIncomplete = errors.New("record: incomplete record batch")

// ErrCorrupt is wrapped by every error describing malformed batch bytes: bad
// length, magic or CRC, records that do not match the header, undecodable or
// oversized compressed data. It unwraps to kerr.CorruptMessage, so
// errors.Is(err, kerr.CorruptMessage) holds and errors.As finds the *kerr.Error
// whose code the broker returns on the wire.
var ErrCorrupt error = &corruptError{}

// ErrStop may be returned by the callback of [ForEachRecord] to end the
// iteration early; ForEachRecord then returns nil.
var ErrStop = errors.New("record: stop iteration")

// corruptError is the type of ErrCorrupt; it exists only so that ErrCorrupt
// can carry its own message while unwrapping to the Kafka error code.
type corruptError struct{}

func (*corruptError) Error() string { return "record: corrupt record batch" }

func (*corruptError) Unwrap() error { return kerr.CorruptMessage }

// wrapCorrupt marks a decoder library's error as corruption. ErrCorrupt comes
// first so that errors.As finds the Kafka error code before anything else.
func wrapCorrupt(err error) error {
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}
