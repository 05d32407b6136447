package controller

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Internal topics: the node creates them itself (CreateInternalTopic), with
// a replication factor capped by the live brokers; clients can neither
// create nor delete them.
const (
	// OffsetsTopic holds consumer group offsets and metadata.
	OffsetsTopic = "__consumer_offsets"
	// TransactionStateTopic holds transaction coordinator state.
	TransactionStateTopic = "__transaction_state"
	// MirrorStateTopic holds the state of mirrored partitions.
	MirrorStateTopic = "__mirror_state"
)

// metadataTopicName is the name of Kafka's metadata log; no topic may take
// it, so that tools never confuse the two.
const metadataTopicName = "__cluster_metadata"

// maxTopicNameLen is Kafka's limit on topic names (it keeps partition
// directory names under common file-name limits).
const maxTopicNameLen = 249

// IsInternalTopic reports whether name is one of kmirror's internal topics.
func IsInternalTopic(name string) bool {
	switch name {
	case OffsetsTopic, TransactionStateTopic, MirrorStateTopic:
		return true
	}
	return false
}

// validateTopicName applies Kafka's topic name rules. The error wraps
// kerr.InvalidTopicException and says which rule the name breaks.
func validateTopicName(name string) error {
	switch {
	case name == "":
		return errf(kerr.InvalidTopicException, "Topic name is invalid: the empty string is not allowed")
	case name == "." || name == "..":
		return errf(kerr.InvalidTopicException, "Topic name is invalid: '%s' is not allowed", name)
	case len(name) > maxTopicNameLen:
		return errf(kerr.InvalidTopicException, "Topic name is invalid: it is %d characters long, the limit is %d", len(name), maxTopicNameLen)
	case name == metadataTopicName:
		return errf(kerr.InvalidTopicException, "Topic name is invalid: '%s' is the name of the metadata log", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return errf(kerr.InvalidTopicException, "Topic name is invalid: '%s' has a character other than ASCII letters, digits, '.', '_' and '-'", name)
		}
	}
	return nil
}

// collisionKey maps a topic name to the name it would collide with in
// metric names, where '.' and '_' are the same character. Two topics whose
// keys are equal may not both exist.
func collisionKey(name string) string { return strings.ReplaceAll(name, ".", "_") }
