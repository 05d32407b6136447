package group

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The record formats of __consumer_offsets are Kafka's (kmsg's
// OffsetCommitKey/Value and GroupMetadataKey/Value), so that the topic is
// byte-compatible with Kafka's: the key starts with an int16 version that
// says what the record is (0 and 1: a committed offset, 2: group metadata).

// KeyKind says what a __consumer_offsets record is.
type KeyKind int8

// Key kinds.
const (
	OffsetKey KeyKind = iota + 1
	GroupKey
)

// Key is a decoded __consumer_offsets record key.
type Key struct {
	Kind  KeyKind
	Group string
	// Topic and Partition are set for OffsetKey.
	Topic     string
	Partition int32
}

// TopicPartition names a partition whose offset a group commits.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// OffsetCommit is a committed offset as stored.
type OffsetCommit struct {
	Offset      int64
	LeaderEpoch int32 // -1 when unknown
	Metadata    string
	CommitTime  int64 // milliseconds
	// ExpireTime is the explicit expiry of commits made with a retention
	// time (OffsetCommit v2-v4); -1 when none.
	ExpireTime int64
}

// Errors of the decoders; every decode error wraps ErrMalformed.
var ErrMalformed = errors.New("malformed __consumer_offsets record")

// Versions this package writes, as Kafka 2.3+ does.
const (
	offsetKeyVersion         = 1
	groupKeyVersion          = 2
	offsetValueVersion       = 3 // with leader epoch
	offsetValueExpireVersion = 1 // with an explicit expire timestamp
	groupValueVersion        = 3 // with static members
	maxOffsetValueVersion    = 4
	maxGroupValueVersion     = 4
)

// DecodeKey decodes a record key of __consumer_offsets.
func DecodeKey(b []byte) (Key, error) {
	if len(b) < 2 {
		return Key{}, fmt.Errorf("key of %d bytes: %w", len(b), ErrMalformed)
	}
	switch v := int16(binary.BigEndian.Uint16(b)); v {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(b); err != nil {
			return Key{}, fmt.Errorf("offset commit key: %v: %w", err, ErrMalformed)
		}
		return Key{Kind: OffsetKey, Group: k.Group, Topic: k.Topic, Partition: k.Partition}, nil
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(b); err != nil {
			return Key{}, fmt.Errorf("group metadata key: %v: %w", err, ErrMalformed)
		}
		return Key{Kind: GroupKey, Group: k.Group}, nil
	default:
		return Key{}, fmt.Errorf("unknown key version %d: %w", v, ErrMalformed)
	}
}

// DecodeOffsetValue decodes the value of an offset commit record.
func DecodeOffsetValue(b []byte) (OffsetCommit, error) {
	if len(b) < 2 {
		return OffsetCommit{}, fmt.Errorf("offset commit value of %d bytes: %w", len(b), ErrMalformed)
	}
	if v := int16(binary.BigEndian.Uint16(b)); v < 0 || v > maxOffsetValueVersion {
		return OffsetCommit{}, fmt.Errorf("offset commit value version %d: %w", v, ErrMalformed)
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(b); err != nil {
		return OffsetCommit{}, fmt.Errorf("offset commit value: %v: %w", err, ErrMalformed)
	}
	o := OffsetCommit{Offset: v.Offset, LeaderEpoch: -1, Metadata: v.Metadata, CommitTime: v.CommitTimestamp, ExpireTime: -1}
	if v.Version >= 3 {
		o.LeaderEpoch = v.LeaderEpoch
	}
	if v.Version == 1 && v.ExpireTimestamp >= 0 {
		o.ExpireTime = v.ExpireTimestamp // -1 (and nonsense below it) means none
	}
	return o, nil
}

// DecodeGroupValue decodes the value of a group metadata record.
func DecodeGroupValue(b []byte) (Snapshot, error) {
	if len(b) < 2 {
		return Snapshot{}, fmt.Errorf("group metadata value of %d bytes: %w", len(b), ErrMalformed)
	}
	if v := int16(binary.BigEndian.Uint16(b)); v < 0 || v > maxGroupValueVersion {
		return Snapshot{}, fmt.Errorf("group metadata value version %d: %w", v, ErrMalformed)
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(b); err != nil {
		return Snapshot{}, fmt.Errorf("group metadata value: %v: %w", err, ErrMalformed)
	}
	s := Snapshot{ProtocolType: v.ProtocolType, Generation: v.Generation}
	if v.Protocol != nil {
		s.Protocol = *v.Protocol
	}
	if v.Leader != nil {
		s.Leader = *v.Leader
	}
	if v.Version >= 2 && v.CurrentStateTimestamp >= 0 {
		s.StateTime = time.UnixMilli(v.CurrentStateTimestamp)
	}
	for _, m := range v.Members {
		sm := SnapshotMember{
			ID:             m.MemberID,
			ClientID:       m.ClientID,
			ClientHost:     m.ClientHost,
			SessionTimeout: time.Duration(m.SessionTimeoutMillis) * time.Millisecond,
			Subscription:   bytes.Clone(m.Subscription),
			Assignment:     bytes.Clone(m.Assignment),
		}
		sm.RebalanceTimeout = sm.SessionTimeout
		if v.Version >= 1 {
			sm.RebalanceTimeout = time.Duration(m.RebalanceTimeoutMillis) * time.Millisecond
		}
		if m.InstanceID != nil {
			sm.InstanceID = *m.InstanceID
		}
		if sm.ID == "" || sm.SessionTimeout < 0 || sm.RebalanceTimeout < 0 {
			return Snapshot{}, fmt.Errorf("group metadata member %q with session timeout %v: %w", sm.ID, sm.SessionTimeout, ErrMalformed)
		}
		s.Members = append(s.Members, sm)
	}
	return s, nil
}

// EncodeOffsetKey returns the key of group's committed offset for tp.
func EncodeOffsetKey(group string, tp TopicPartition) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: group, Topic: tp.Topic, Partition: tp.Partition}
	return k.AppendTo(nil)
}

// EncodeOffsetValue returns the value of a committed offset.
func EncodeOffsetValue(o OffsetCommit) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	v.Offset = o.Offset
	v.LeaderEpoch = o.LeaderEpoch
	v.Metadata = o.Metadata
	v.CommitTimestamp = o.CommitTime
	if o.ExpireTime >= 0 {
		v.Version = offsetValueExpireVersion
		v.ExpireTimestamp = o.ExpireTime
	}
	return v.AppendTo(nil)
}

// EncodeGroupKey returns the key of group's metadata record.
func EncodeGroupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: group}
	return k.AppendTo(nil)
}

// EncodeGroupValue returns the value of a group metadata record.
func EncodeGroupValue(s Snapshot) []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType = s.ProtocolType
	v.Generation = s.Generation
	v.Protocol = optString(s.Protocol)
	v.Leader = optString(s.Leader)
	if !s.StateTime.IsZero() {
		v.CurrentStateTimestamp = s.StateTime.UnixMilli()
	}
	for _, m := range s.Members {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID = m.ID
		vm.InstanceID = optString(m.InstanceID)
		vm.ClientID = m.ClientID
		vm.ClientHost = m.ClientHost
		vm.RebalanceTimeoutMillis = int32(m.RebalanceTimeout / time.Millisecond)
		vm.SessionTimeoutMillis = int32(m.SessionTimeout / time.Millisecond)
		vm.Subscription = m.Subscription
		vm.Assignment = m.Assignment
		if vm.Subscription == nil {
			vm.Subscription = []byte{}
		}
		if vm.Assignment == nil {
			vm.Assignment = []byte{}
		}
		v.Members = append(v.Members, vm)
	}
	return v.AppendTo(nil)
}
