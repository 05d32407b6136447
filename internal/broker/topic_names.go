package broker

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The internal topics: written only by the node itself (coordinators and
// the mirror), reported with IsInternal in Metadata, never auto-created for
// a client.
const (
	offsetsTopic          = "__consumer_offsets"
	transactionStateTopic = "__transaction_state"
	mirrorStateTopic      = "__mirror_state"
)

// isInternalTopic reports whether name is one of the internal topics.
func isInternalTopic(name string) bool {
	switch name {
	case offsetsTopic, transactionStateTopic, mirrorStateTopic:
		return true
	}
	return false
}

// maxTopicNameLen is Kafka's limit on topic names.
const maxTopicNameLen = 249

// validateTopicName applies Kafka's topic name rules (the controller
// applies them again on creation); the error wraps
// INVALID_TOPIC_EXCEPTION.
func validateTopicName(name string) error {
	switch {
	case name == "":
		return errf(kerr.InvalidTopicException, "topic name is invalid: the empty string is not allowed")
	case name == "." || name == "..":
		return errf(kerr.InvalidTopicException, "topic name is invalid: %q is not allowed", name)
	case len(name) > maxTopicNameLen:
		return errf(kerr.InvalidTopicException, "topic name is invalid: it is %d characters long, the limit is %d", len(name), maxTopicNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %q is invalid: only ASCII letters, digits, '.', '_' and '-' are allowed: %w", name, kerr.InvalidTopicException)
		}
	}
	return nil
}

// sortedIDs returns the keys of a set of broker ids in ascending order.
func sortedIDs(set map[int32]bool) []int32 {
	out := make([]int32, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}
