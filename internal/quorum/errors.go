package quorum

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// NotLeaderError is returned for writes (Propose, Barrier, membership
// changes) on a node that is not the quorum leader. It names the leader when
// one is known (LeaderID -1 otherwise), so the caller can redirect, and it
// matches kerr.NotController with errors.Is.
type NotLeaderError struct {
	LeaderID   int32
	LeaderAddr string
	// Err is ErrOutcomeUnknown when leadership was lost while the write was
	// in flight, nil otherwise.
	Err error
}

func (e *NotLeaderError) Error() string {
	s := "not the metadata quorum leader"
	if e.LeaderID >= 0 {
		s += fmt.Sprintf("; leader is node %d at %s", e.LeaderID, e.LeaderAddr)
	} else {
		s += "; no leader known"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns kerr.NotController and Err.
func (e *NotLeaderError) Unwrap() []error {
	if e.Err != nil {
		return []error{kerr.NotController, e.Err}
	}
	return []error{kerr.NotController}
}

// ErrOutcomeUnknown means a write was sent to the log but this node cannot
// tell whether it committed (leadership was lost, or the caller's context
// ended first). Read the image, or retry with an idempotent write.
var ErrOutcomeUnknown = errors.New("metadata write outcome unknown")

// ErrClosed is returned by calls on a closed Quorum.
var ErrClosed = errors.New("metadata quorum closed")
