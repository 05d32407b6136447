package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// The __consumer_offsets decoder (Kafka's --offsets-decoder). A record's
// key starts with its version: 0 and 1 are an offset commit (group, topic,
// partition), 2 a group's metadata. Keys and values print as one-line
// JSON; a consumer group's member subscriptions and assignments are
// decoded from the consumer protocol. A record that does not decode prints
// the reason and its bytes.

// offsetCommitKeyJSON is an offset commit key as printed.
type offsetCommitKeyJSON struct {
	Type      string `json:"type"`
	Version   int16  `json:"version"`
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// groupMetadataKeyJSON is a group metadata key as printed.
type groupMetadataKeyJSON struct {
	Type    string `json:"type"`
	Version int16  `json:"version"`
	Group   string `json:"group"`
}

// offsetCommitValueJSON is an offset commit value as printed.
type offsetCommitValueJSON struct {
	Version         int16  `json:"version"`
	Offset          int64  `json:"offset"`
	LeaderEpoch     int32  `json:"leaderEpoch"`
	Metadata        string `json:"metadata"`
	CommitTimestamp int64  `json:"commitTimestamp"`
	ExpireTimestamp *int64 `json:"expireTimestamp,omitempty"`
	TopicID         string `json:"topicId,omitempty"`
}

// groupMetadataValueJSON is a group metadata value as printed.
type groupMetadataValueJSON struct {
	Version               int16        `json:"version"`
	ProtocolType          string       `json:"protocolType"`
	Generation            int32        `json:"generation"`
	Protocol              *string      `json:"protocol"`
	Leader                *string      `json:"leader"`
	CurrentStateTimestamp int64        `json:"currentStateTimestamp"`
	Members               []memberJSON `json:"members"`
}

// memberJSON is a group member as printed: for the consumer protocol its
// subscribed topics and assignment, else the raw protocol bytes.
type memberJSON struct {
	MemberID           string   `json:"memberId"`
	GroupInstanceID    *string  `json:"groupInstanceId"`
	ClientID           string   `json:"clientId"`
	ClientHost         string   `json:"clientHost"`
	RebalanceTimeoutMs int32    `json:"rebalanceTimeoutMs"`
	SessionTimeoutMs   int32    `json:"sessionTimeoutMs"`
	Subscription       []string `json:"subscription,omitempty"`
	Assignment         []string `json:"assignment,omitempty"`
	SubscriptionBytes  string   `json:"subscriptionBytes,omitempty"`
	AssignmentBytes    string   `json:"assignmentBytes,omitempty"`
}

// jsonText marshals v on one line, without escaping <, > and & (the
// structs printed always marshal).
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// undecodable prints bytes that failed to decode, with the reason.
func undecodable(b []byte, err error) string {
	return fmt.Sprintf("<undecodable: %v> %s", err, printable(b))
}

// decodeSafely runs a kmsg decoder, turning a panic into an error: the
// bytes come from a file and must not crash the tool.
func decodeSafely(read func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("decoder panic: %v", r)
		}
	}()
	return read()
}

// keyVersion reads the int16 version that starts an internal topic's key
// or value.
func keyVersion(b []byte) (int16, error) {
	if len(b) < 2 {
		return 0, fmt.Errorf("%d bytes, too short for a version", len(b))
	}
	return int16(binary.BigEndian.Uint16(b)), nil
}

// offsetsText decodes a __consumer_offsets record.
func offsetsText(key, value []byte) string {
	v, err := keyVersion(key)
	if err != nil {
		return "key: " + undecodable(key, err)
	}
	switch v {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := decodeSafely(func() error { return k.ReadFrom(key) }); err != nil {
			return "key: " + undecodable(key, err)
		}
		out := "key: " + jsonText(offsetCommitKeyJSON{"offset_commit", k.Version, k.Group, k.Topic, k.Partition})
		if value == nil {
			return out + " payload: <DELETE>"
		}
		return out + " payload: " + offsetCommitValueText(value)
	case 2:
		var k kmsg.GroupMetadataKey
		if err := decodeSafely(func() error { return k.ReadFrom(key) }); err != nil {
			return "key: " + undecodable(key, err)
		}
		out := "key: " + jsonText(groupMetadataKeyJSON{"group_metadata", k.Version, k.Group})
		if value == nil {
			return out + " payload: <DELETE>"
		}
		return out + " payload: " + groupMetadataValueText(value)
	}
	return "key: " + undecodable(key, fmt.Errorf("unknown key version %d", v))
}

func offsetCommitValueText(b []byte) string {
	ver, err := keyVersion(b)
	if err == nil && (ver < 0 || ver > 4) {
		err = fmt.Errorf("unknown value version %d", ver)
	}
	var v kmsg.OffsetCommitValue
	if err == nil {
		err = decodeSafely(func() error { return v.ReadFrom(b) })
	}
	if err != nil {
		return undecodable(b, err)
	}
	out := offsetCommitValueJSON{Version: v.Version, Offset: v.Offset, LeaderEpoch: -1, Metadata: v.Metadata, CommitTimestamp: v.CommitTimestamp}
	if v.Version >= 3 {
		out.LeaderEpoch = v.LeaderEpoch
	}
	if v.Version == 1 {
		out.ExpireTimestamp = &v.ExpireTimestamp
	}
	if v.TopicID != ([16]byte{}) {
		out.TopicID = metadata.Uuid(v.TopicID).String()
	}
	return jsonText(out)
}

func groupMetadataValueText(b []byte) string {
	ver, err := keyVersion(b)
	if err == nil && (ver < 0 || ver > 4) {
		err = fmt.Errorf("unknown value version %d", ver)
	}
	var v kmsg.GroupMetadataValue
	if err == nil {
		err = decodeSafely(func() error { return v.ReadFrom(b) })
	}
	if err != nil {
		return undecodable(b, err)
	}
	out := groupMetadataValueJSON{Version: v.Version, ProtocolType: v.ProtocolType, Generation: v.Generation,
		Protocol: v.Protocol, Leader: v.Leader, CurrentStateTimestamp: v.CurrentStateTimestamp, Members: []memberJSON{}}
	for _, m := range v.Members {
		mj := memberJSON{MemberID: m.MemberID, GroupInstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			RebalanceTimeoutMs: m.RebalanceTimeoutMillis, SessionTimeoutMs: m.SessionTimeoutMillis}
		if v.ProtocolType == "consumer" {
			mj.Subscription, mj.SubscriptionBytes = consumerSubscription(m.Subscription)
			mj.Assignment, mj.AssignmentBytes = consumerAssignment(m.Assignment)
		} else {
			mj.SubscriptionBytes, mj.AssignmentBytes = hexOf(m.Subscription), hexOf(m.Assignment)
		}
		out.Members = append(out.Members, mj)
	}
	return jsonText(out)
}

func hexOf(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return fmt.Sprintf("0x%x", b)
}

// consumerSubscription decodes a consumer protocol subscription into its
// topics; bytes that do not decode come back as hex.
func consumerSubscription(b []byte) ([]string, string) {
	if len(b) == 0 {
		return nil, ""
	}
	var s kmsg.ConsumerMemberMetadata
	if err := decodeSafely(func() error { return s.ReadFrom(b) }); err != nil {
		return nil, hexOf(b)
	}
	return slices.Sorted(slices.Values(s.Topics)), ""
}

// consumerAssignment decodes a consumer protocol assignment into
// "topic:p,p" entries; bytes that do not decode come back as hex.
func consumerAssignment(b []byte) ([]string, string) {
	if len(b) == 0 {
		return nil, ""
	}
	var a kmsg.ConsumerMemberAssignment
	if err := decodeSafely(func() error { return a.ReadFrom(b) }); err != nil {
		return nil, hexOf(b)
	}
	var out []string
	for _, t := range a.Topics {
		ps := make([]string, 0, len(t.Partitions))
		for _, p := range slices.Sorted(slices.Values(t.Partitions)) {
			ps = append(ps, strconv.Itoa(int(p)))
		}
		out = append(out, t.Topic+":"+strings.Join(ps, ","))
	}
	slices.Sort(out)
	return out, ""
}
