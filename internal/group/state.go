package group

// State is a classic group's state, with Kafka's names and transitions:
//
//	Empty ──join──▶ PreparingRebalance ──all joined / rebalance timeout──▶ CompletingRebalance
//	CompletingRebalance ──leader's SyncGroup persisted──▶ Stable
//	Stable / CompletingRebalance ──join, leave, expiry──▶ PreparingRebalance
//	PreparingRebalance ──no member left──▶ Empty
//	Empty ──delete, offsets expired──▶ Dead
type State int8

// The group states.
const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

var stateNames = [...]string{
	Empty:               "Empty",
	PreparingRebalance:  "PreparingRebalance",
	CompletingRebalance: "CompletingRebalance",
	Stable:              "Stable",
	Dead:                "Dead",
}

// String returns Kafka's name of the state, as DescribeGroups and ListGroups
// report it.
func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState returns the state named s, ignoring case (ListGroups filters
// compare names without case, as Kafka does).
func ParseState(s string) (State, bool) {
	for i, n := range stateNames {
		if equalFold(n, s) {
			return State(i), true
		}
	}
	return 0, false
}

// equalFold compares ASCII strings without case.
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// canRebalance reports whether a rebalance may start from s.
func (s State) canRebalance() bool {
	return s == Stable || s == CompletingRebalance || s == Empty
}
