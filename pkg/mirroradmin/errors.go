package mirroradmin

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a refusal from the cluster: the Kafka error and the broker's
// message saying which check failed and why.
type Error struct {
	// Err is the Kafka error (e.g. kerr.InvalidRequest); errors.Is and
	// errors.As see it through Unwrap.
	Err *kerr.Error
	// Message is the broker's explanation; empty when it sent none.
	Message string
}

// Error returns the message, prefixed with the Kafka error's name.
func (e *Error) Error() string {
	if e.Message == "" {
		return e.Err.Error()
	}
	return e.Err.Message + ": " + e.Message
}

// Unwrap returns the Kafka error.
func (e *Error) Unwrap() error { return e.Err }

// errorFor returns the error of a response's code and message, nil for 0.
func errorFor(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	ke, ok := kerr.ErrorForCode(code).(*kerr.Error)
	if !ok {
		ke = kerr.UnknownServerError
	}
	e := &Error{Err: ke}
	if msg != nil {
		e.Message = *msg
	}
	return e
}
