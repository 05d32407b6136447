package wire

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MaxMirrorNameLen is the longest mirror name, as for topic names.
const MaxMirrorNameLen = 249

// Suffixes that mirror.name takes while a topic is paused or after it was
// removed from its mirror (failover).
const (
	PausedSuffix  = ".paused"
	RemovedSuffix = ".removed"
)

// ValidateMirrorName checks a mirror name as CreateMirror accepts it: 1 to
// 249 characters of [a-zA-Z0-9._-], not "." or "..", and not ending in
// ".paused" or ".removed" (which would make a topic's mirror.name ambiguous).
// The error wraps kerr.InvalidRequest.
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
	case strings.HasSuffix(name, PausedSuffix) || strings.HasSuffix(name, RemovedSuffix):
		return bad("ends in a reserved suffix (" + PausedSuffix + " or " + RemovedSuffix + ")")
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return bad(fmt.Sprintf("contains %q; use letters, digits, '.', '_' and '-'", c))
		}
	}
	return nil
}
