package wire

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestErrorCode(t *testing.T) {
	cases := []struct {
		err  error
		code int16
	}{
		{nil, 0},
		{kerr.CorruptMessage, 2},
		{fmt.Errorf("append to t-0: %w", kerr.CorruptMessage), 2},
		{fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", kerr.OutOfOrderSequenceNumber)), 45},
		{errors.Join(errors.New("x"), kerr.InvalidConfig), 40},
		{errors.New("disk on fire"), -1},
		{ErrMalformed, -1},
	}
	for _, c := range cases {
		if got := ErrorCode(c.err); got != c.code {
			t.Errorf("ErrorCode(%v) = %d, want %d", c.err, got, c.code)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	if ErrorMessage(nil) != nil {
		t.Error("nil error has a message")
	}
	if ErrorMessage(kerr.UnknownTopicOrPartition) != nil {
		t.Error("a bare kerr value needs no message")
	}
	err := fmt.Errorf("topic %q is in mirror %q: %w", "orders", "west", kerr.InvalidRequest)
	if m := ErrorMessage(err); m == nil || *m != err.Error() {
		t.Errorf("ErrorMessage = %v", m)
	}
}
