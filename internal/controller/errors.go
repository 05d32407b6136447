package controller

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/quorum"
	"github.com/kmirror/kmirror/internal/wire"
)

// apiError is a decision's failure: the Kafka error code to answer with and
// the message for the response's ErrorMessage field. It unwraps to the code
// so wire.ErrorCode and errors.Is work on it.
type apiError struct {
	code *kerr.Error
	msg  string
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.code }

// errf returns an apiError with a formatted message.
func errf(code *kerr.Error, format string, args ...any) error {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}

// errNotActive is what a controller that is not the active one answers.
var errNotActive = errf(kerr.NotController, "this node is not the active controller")

// proposeError turns a failed proposal into the error every otherwise
// successful item of the request is answered with. Losing leadership and
// closing are NOT_CONTROLLER so that the sender retries with the new active
// controller; an unknown outcome is REQUEST_TIMED_OUT, as Kafka answers a
// write whose commit it could not confirm; a record the replay rules refuse
// keeps its own code.
func proposeError(err error) error {
	switch {
	case errors.Is(err, kerr.NotController), errors.Is(err, quorum.ErrClosed):
		return &apiError{code: kerr.NotController, msg: err.Error()}
	case errors.Is(err, quorum.ErrOutcomeUnknown), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &apiError{code: kerr.RequestTimedOut, msg: err.Error()}
	}
	if wire.ErrorCode(err) == kerr.UnknownServerError.Code {
		return &apiError{code: kerr.UnknownServerError, msg: err.Error()}
	}
	return err
}

// codeOf and messageOf split an error into response fields.
func codeOf(err error) int16      { return wire.ErrorCode(err) }
func messageOf(err error) *string { return wire.ErrorMessage(err) }
