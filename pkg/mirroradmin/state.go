package mirroradmin

import "fmt"

// State is the state of a mirrored partition on this cluster.
type State int8

// The partition states, as docs/protocol.md numbers them.
const (
	// StateUnknown: nothing recorded yet.
	StateUnknown State = 0
	// StatePreparing: truncating to the last mirrored epoch before copying.
	StatePreparing State = 1
	// StateMirroring: copying the source's batches; read-only.
	StateMirroring State = 2
	// StatePausing: stopping the copy for a pause.
	StatePausing State = 3
	// StatePaused: not copying; still read-only.
	StatePaused State = 4
	// StateStopping: failing over.
	StateStopping State = 5
	// StateStopped: failed over; writable.
	StateStopped State = 6
	// StateFailed: an action failed; retried with backoff.
	StateFailed State = 7
)

var stateNames = [...]string{"UNKNOWN", "PREPARING", "MIRRORING", "PAUSING", "PAUSED", "STOPPING", "STOPPED", "FAILED"}

// String returns the state's upper-case name.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int8(s))
}

// MarshalText makes the state print as its name in JSON.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state name as MarshalText writes it.
func (s *State) UnmarshalText(text []byte) error {
	for i, n := range stateNames {
		if n == string(text) {
			*s = State(i)
			return nil
		}
	}
	return fmt.Errorf("mirroradmin: unknown state %q", text)
}
