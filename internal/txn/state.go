package txn

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is the state of a transactional id, numbered as Kafka stores it in
// TxnMetadataValue.State.
type State int8

// States of a transactional id. Dead is written as a tombstone;
// PrepareEpochFence exists only inside one transition (see package doc).
const (
	Empty             State = 0
	Ongoing           State = 1
	PrepareCommit     State = 2
	PrepareAbort      State = 3
	CompleteCommit    State = 4
	CompleteAbort     State = 5
	Dead              State = 6
	PrepareEpochFence State = 7
)

var stateNames = [...]string{
	Empty:             "Empty",
	Ongoing:           "Ongoing",
	PrepareCommit:     "PrepareCommit",
	PrepareAbort:      "PrepareAbort",
	CompleteCommit:    "CompleteCommit",
	CompleteAbort:     "CompleteAbort",
	Dead:              "Dead",
	PrepareEpochFence: "PrepareEpochFence",
}

// String is Kafka's name of the state, which DescribeTransactions and
// ListTransactions answer and ListTransactions filters by.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("Unknown(%d)", int8(s))
}

// ParseState returns the state named name (Kafka's names, case-sensitive).
func ParseState(name string) (State, bool) {
	for i, n := range stateNames {
		if n == name {
			return State(i), true
		}
	}
	return 0, false
}

// kmsgState converts to kmsg's representation.
func (s State) kmsgState() kmsg.TransactionState { return kmsg.TransactionState(s) }

// Prepared reports whether the transaction is being completed (its markers
// are being written).
func (s State) Prepared() bool { return s == PrepareCommit || s == PrepareAbort }

// Completed reports whether no transaction is in progress: a new one may
// start and the id may be expired.
func (s State) Completed() bool { return s == Empty || s == CompleteCommit || s == CompleteAbort }
