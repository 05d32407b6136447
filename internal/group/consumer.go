package group

import (
	"encoding/binary"
	"errors"
)

// ConsumerProtocolType is the protocol type of Kafka consumers; only such
// groups have subscriptions the coordinator understands.
const ConsumerProtocolType = "consumer"

// errBadSubscription reports consumer member metadata that does not parse.
var errBadSubscription = errors.New("malformed consumer subscription")

// ParseSubscriptionTopics reads the topics of a consumer protocol
// subscription (member metadata of a "consumer" group). Every version of the
// subscription starts with the version 0 layout — int16 version, then an
// array of topic names — so only that prefix is read and later fields are
// ignored. The bytes are untrusted: they come from a client.
func ParseSubscriptionTopics(b []byte) ([]string, error) {
	if len(b) < 6 {
		return nil, errBadSubscription
	}
	if int16(binary.BigEndian.Uint16(b)) < 0 {
		return nil, errBadSubscription
	}
	n := int32(binary.BigEndian.Uint32(b[2:]))
	b = b[6:]
	// Each topic takes at least its two-byte length.
	if n < 0 || int64(n)*2 > int64(len(b)) {
		return nil, errBadSubscription
	}
	topics := make([]string, 0, n)
	for i := int32(0); i < n; i++ {
		if len(b) < 2 {
			return nil, errBadSubscription
		}
		l := int16(binary.BigEndian.Uint16(b))
		b = b[2:]
		if l < 0 || int(l) > len(b) {
			return nil, errBadSubscription
		}
		topics = append(topics, string(b[:l]))
		b = b[l:]
	}
	return topics, nil
}
