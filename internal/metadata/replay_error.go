package metadata

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ReplayError is returned by Delta.Replay for a record that is not a valid
// transition of the current state (an unknown topic id, a stale broker
// epoch, a partition state that breaks an invariant, ...). It unwraps to the
// Kafka error that best describes the problem, so callers can use errors.Is
// with kerr values.
type ReplayError struct {
	Type   RecordType
	Offset uint64
	Reason string
	Code   *kerr.Error
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("replay %s at offset %d: %s: %s", e.Type, e.Offset, e.Reason, e.Code.Message)
}

// Unwrap returns the Kafka error.
func (e *ReplayError) Unwrap() error { return e.Code }

func replayErr(r Record, offset uint64, code *kerr.Error, format string, args ...any) error {
	return &ReplayError{Type: r.Type(), Offset: offset, Reason: fmt.Sprintf(format, args...), Code: code}
}
