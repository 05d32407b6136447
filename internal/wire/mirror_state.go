package wire

import "fmt"

// MirrorPartitionState is the state of one mirrored partition on the
// destination cluster, as persisted in __mirror_state and reported by
// DescribeMirrors and ReadMirrorStates. The numbering is part of the wire and
// on-disk format: never renumber.
type MirrorPartitionState int8

// The mirror partition states (DESIGN.md §6).
const (
	// MirrorStateUnknown: no state recorded for the partition.
	MirrorStateUnknown MirrorPartitionState = 0
	// MirrorStatePreparing: truncating to the last mirrored epoch before
	// fetching.
	MirrorStatePreparing MirrorPartitionState = 1
	// MirrorStateMirroring: fetchers copy the source's batches as they are.
	MirrorStateMirroring MirrorPartitionState = 2
	// MirrorStatePausing: fetchers are being removed for a pause.
	MirrorStatePausing MirrorPartitionState = 3
	// MirrorStatePaused: no fetching; the partition stays read-only.
	MirrorStatePaused MirrorPartitionState = 4
	// MirrorStateStopping: failover in progress (fetchers removed, epoch
	// bumped, truncation to the LSO, LME persisted, barrier appended).
	MirrorStateStopping MirrorPartitionState = 5
	// MirrorStateStopped: failover done; the partition is writable.
	MirrorStateStopped MirrorPartitionState = 6
	// MirrorStateFailed: an action failed; it is retried with backoff.
	MirrorStateFailed MirrorPartitionState = 7
)

var mirrorStateNames = [...]string{
	"UNKNOWN", "PREPARING", "MIRRORING", "PAUSING", "PAUSED", "STOPPING", "STOPPED", "FAILED",
}

// String returns the state's upper-case name, or "MirrorPartitionState(n)" for
// a value outside the defined range (possible when decoding a peer's bytes).
func (s MirrorPartitionState) String() string {
	if s >= 0 && int(s) < len(mirrorStateNames) {
		return mirrorStateNames[s]
	}
	return fmt.Sprintf("MirrorPartitionState(%d)", int8(s))
}

// Valid reports whether s is one of the defined states.
func (s MirrorPartitionState) Valid() bool { return s >= 0 && int(s) < len(mirrorStateNames) }

// ParseMirrorPartitionState returns the state named name (as String prints
// it).
func ParseMirrorPartitionState(name string) (MirrorPartitionState, bool) {
	for i, n := range mirrorStateNames {
		if n == name {
			return MirrorPartitionState(i), true
		}
	}
	return MirrorStateUnknown, false
}
