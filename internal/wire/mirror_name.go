package wire

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MaxMirrorNameLen is the longest mirror name, as for topic names.
const MaxMirrorNameLen = 249

// Suffixes that mirror.name takes while a topic is paused, after it was
// removed from its mirror (failover requested), and once every partition of
// the removed topic is STOPPED (failover complete).
const (
	PausedSuffix  = ".paused"
	RemovedSuffix = ".removed"
	StoppedSuffix = ".stopped"
)

// reservedSuffixes are the suffixes a mirror name cannot end in.
var reservedSuffixes = []string{PausedSuffix, RemovedSuffix, StoppedSuffix}

// MirrorMembership is where a topic stands towards its mirror, as its
// mirror.name config says. The controller moves topics between these; the
// mirror data plane on each partition leader turns them into partition
// states.
type MirrorMembership int8

// The memberships, with the mirror.name value of each.
const (
	// NotMirrored: no mirror.name.
	NotMirrored MirrorMembership = iota
	// MembershipMirroring: "<m>"; partitions PREPARING, MIRRORING or
	// FAILED. The topic is read-only.
	MembershipMirroring
	// MembershipPaused: "<m>.paused"; partitions PAUSING or PAUSED. The
	// topic is read-only.
	MembershipPaused
	// MembershipRemoved: "<m>.removed"; the failover was asked for and the
	// partitions are STOPPING, or STOPPED already. The topic is read-only
	// until its partitions are STOPPED.
	MembershipRemoved
	// MembershipStopped: "<m>.stopped"; every partition was STOPPED when the
	// mirror recorded it in the metadata: the failover is complete and the
	// topic is an ordinary, writable topic that remembers its mirror (for
	// DeleteMirror and a later failback).
	MembershipStopped
)

// String names a membership as the mirror APIs' messages do.
func (m MirrorMembership) String() string {
	switch m {
	case MembershipMirroring:
		return "MIRRORING"
	case MembershipPaused:
		return "PAUSED"
	case MembershipRemoved:
		return "REMOVED"
	case MembershipStopped:
		return "STOPPED"
	}
	return "NOT MIRRORED"
}

// ReadOnly reports whether a topic of this membership refuses every
// mutation but its mirror's own: it is mirrored, paused, or failing over.
// (A REMOVED topic's partitions become writable one by one as they reach
// STOPPED; the topic as a whole counts as read-only until the failover is
// recorded as complete.)
func (m MirrorMembership) ReadOnly() bool {
	return m == MembershipMirroring || m == MembershipPaused || m == MembershipRemoved
}

// ParseMirrorName splits a topic's mirror.name value into the mirror and
// the membership. Mirror names cannot end in the suffixes, so the split is
// unambiguous.
func ParseMirrorName(v string) (mirror string, m MirrorMembership) {
	switch {
	case v == "":
		return "", NotMirrored
	case strings.HasSuffix(v, PausedSuffix):
		return strings.TrimSuffix(v, PausedSuffix), MembershipPaused
	case strings.HasSuffix(v, RemovedSuffix):
		return strings.TrimSuffix(v, RemovedSuffix), MembershipRemoved
	case strings.HasSuffix(v, StoppedSuffix):
		return strings.TrimSuffix(v, StoppedSuffix), MembershipStopped
	}
	return v, MembershipMirroring
}

// MirrorNameValue is the mirror.name value of a membership of mirror.
func MirrorNameValue(mirror string, m MirrorMembership) string {
	switch m {
	case MembershipPaused:
		return mirror + PausedSuffix
	case MembershipRemoved:
		return mirror + RemovedSuffix
	case MembershipStopped:
		return mirror + StoppedSuffix
	case MembershipMirroring:
		return mirror
	}
	return ""
}

// ValidateMirrorName checks a mirror name as CreateMirror accepts it: 1 to
// 249 characters of [a-zA-Z0-9._-], not "." or "..", and not ending in
// ".paused", ".removed" or ".stopped" (which would make a topic's
// mirror.name ambiguous). The error wraps kerr.InvalidRequest.
func ValidateMirrorName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("mirror name %q %s: %w", name, why, kerr.InvalidRequest)
	}
	switch {
	case name == "":
		return bad("is empty")
	case len(name) > MaxMirrorNameLen:
		return bad(fmt.Sprintf("is longer than %d characters", MaxMirrorNameLen))
	case name == "." || name == "..":
		return bad("is not allowed")
	}
	for _, s := range reservedSuffixes {
		if strings.HasSuffix(name, s) {
			return bad("ends in a reserved suffix (" + strings.Join(reservedSuffixes, ", ") + ")")
		}
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return bad(fmt.Sprintf("contains %q; use letters, digits, '.', '_' and '-'", c))
		}
	}
	return nil
}
