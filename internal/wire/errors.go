package wire

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrorCode maps an error chain to the Kafka error code to put in a response:
// 0 for nil, the code of the first *kerr.Error in the chain (so handlers wrap
// kerr values with context: fmt.Errorf("append to %s: %w", tp,
// kerr.CorruptMessage)), and UNKNOWN_SERVER_ERROR for anything else.
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	if ke, ok := errors.AsType[*kerr.Error](err); ok && ke != nil {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// ErrorMessage returns the text for a response's ErrorMessage field: nil for
// nil and for a bare kerr value (the code says everything; clients print the
// code's standard text), else the error's text with its context. Errors are
// built by kmirror's own code, which never wraps secrets into them, so the
// text is safe to send.
func ErrorMessage(err error) *string {
	if err == nil {
		return nil
	}
	if ke, ok := err.(*kerr.Error); ok && ke != nil {
		return nil
	}
	s := err.Error()
	return &s
}
