package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/storage"
)

// errorCode maps an error from a partition operation to the Kafka error
// code of the response: wrapped kerr values keep their code; a closed log
// (the partition was just removed) is NOT_LEADER_OR_FOLLOWER, which clients
// retry after refreshing metadata; an ended context is REQUEST_TIMED_OUT;
// anything else from the storage layer is KAFKA_STORAGE_ERROR.
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return ke.Code
	case errors.Is(err, storage.ErrClosed):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.RequestTimedOut.Code
	}
	return kerr.KafkaStorageError.Code
}

// errorMessage is the ErrorMessage a response carries for err (nil for no
// error): what failed and why, without the generic text of the Kafka error
// code, which the client already knows from the code.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	var ke *kerr.Error
	if errors.As(err, &ke) {
		s = strings.TrimSuffix(s, ": "+ke.Error())
	}
	return &s
}

// codeError is an error with a message of its own that unwraps to the
// Kafka error to answer.
type codeError struct {
	msg  string
	code *kerr.Error
}

func (e *codeError) Error() string { return e.msg }
func (e *codeError) Unwrap() error { return e.code }

// errf builds an error wrapping a Kafka error with a message.
func errf(code *kerr.Error, format string, args ...any) error {
	return &codeError{msg: fmt.Sprintf(format, args...), code: code}
}

// recordIndexer is implemented by append errors that know which record of
// the batch was invalid; Produce v8+ reports it in RecordErrors.
type recordIndexer interface {
	RecordIndex() int
}
