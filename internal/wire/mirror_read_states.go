package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReadMirrorStatesRequest (key 9006) asks the mirror coordinator (the leader
// of the __mirror_state partition that holds each key) for the persisted
// state of mirrored partitions. Brokers send it to each other when the
// coordinator of a partition's key is on another node.
type ReadMirrorStatesRequest struct {
	// Version is the request version; only 0 exists.
	Version int16
	// Partitions are the mirrored partitions whose state is wanted.
	Partitions []ReadMirrorStatesRequestPartition
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// ReadMirrorStatesRequestPartition identifies one mirrored partition.
type ReadMirrorStatesRequestPartition struct {
	// MirrorName is the mirror the partition's topic belongs to.
	MirrorName string
	// TopicID is the destination topic's id.
	TopicID [16]byte
	// Partition is the partition index.
	Partition int32
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

const minReadMirrorStatesRequestPartition = minString + minUUID + 4 + minTags

// Key returns 9006.
func (*ReadMirrorStatesRequest) Key() int16 { return KeyReadMirrorStates }

// MaxVersion returns 0.
func (*ReadMirrorStatesRequest) MaxVersion() int16 { return 0 }

// SetVersion sets the version of the request and of its response.
func (v *ReadMirrorStatesRequest) SetVersion(version int16) { v.Version = version }

// GetVersion returns the request version.
func (v *ReadMirrorStatesRequest) GetVersion() int16 { return v.Version }

// IsFlexible returns true: every mirror message uses the flexible encoding.
func (*ReadMirrorStatesRequest) IsFlexible() bool { return true }

// ResponseKind returns an empty response of the request's version.
func (v *ReadMirrorStatesRequest) ResponseKind() kmsg.Response {
	return &ReadMirrorStatesResponse{Version: v.Version}
}

// RequestWith issues the request on r and returns the typed response.
func (v *ReadMirrorStatesRequest) RequestWith(ctx context.Context, r kmsg.Requestor) (*ReadMirrorStatesResponse, error) {
	return requestWith[*ReadMirrorStatesResponse](ctx, r, v)
}

// AppendTo appends the request body.
func (v *ReadMirrorStatesRequest) AppendTo(dst []byte) []byte {
	dst = appendArray(dst, v.Partitions, func(b []byte, p *ReadMirrorStatesRequestPartition) []byte {
		b = AppendCompactString(b, p.MirrorName)
		b = AppendUUID(b, p.TopicID)
		b = AppendInt32(b, p.Partition)
		return AppendTags(b, p.UnknownTags)
	})
	return AppendTags(dst, v.UnknownTags)
}

// ReadFrom decodes a whole request body of v.Version, replacing v's fields.
func (v *ReadMirrorStatesRequest) ReadFrom(src []byte) error {
	*v = ReadMirrorStatesRequest{Version: v.Version}
	if err := checkVersion(v.Key(), v.Version); err != nil {
		return err
	}
	r := NewReader(src)
	v.Partitions = readArray(r, minReadMirrorStatesRequestPartition, func(r *Reader, p *ReadMirrorStatesRequestPartition) {
		p.MirrorName = r.CompactString()
		p.TopicID = r.UUID()
		p.Partition = r.Int32()
		p.UnknownTags = r.Tags()
	})
	v.UnknownTags = r.Tags()
	return finish(r, v.Key(), "request")
}

// ReadMirrorStatesResponse answers ReadMirrorStatesRequest.
type ReadMirrorStatesResponse struct {
	// Version is the response version; only 0 exists.
	Version int16
	// ThrottleMillis is how long the client should wait before its next
	// request (applied after the response).
	ThrottleMillis int32
	// ErrorCode is a request-level error; per-partition errors are in
	// Partitions.
	ErrorCode int16
	// Partitions holds one result per requested partition.
	Partitions []ReadMirrorStatesResponsePartition
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// ReadMirrorStatesResponsePartition is the persisted state of one mirrored
// partition.
type ReadMirrorStatesResponsePartition struct {
	// MirrorName is the mirror, as requested.
	MirrorName string
	// TopicID is the topic id, as requested.
	TopicID [16]byte
	// Partition is the partition index, as requested.
	Partition int32
	// ErrorCode is 0 on success; NOT_COORDINATOR when this node does not
	// lead the key's __mirror_state partition, COORDINATOR_LOAD_IN_PROGRESS
	// while it is still loading it.
	ErrorCode int16
	// ErrorMessage explains a non-zero ErrorCode.
	ErrorMessage *string
	// State is the persisted state, UNKNOWN if none was ever written.
	State MirrorPartitionState
	// StateEpoch counts the state's writes; a write carrying an older
	// epoch is fenced.
	StateEpoch int32
	// LeaderEpoch is the destination partition's leader epoch when the
	// state was written.
	LeaderEpoch int32
	// UpdateMillis is when the state was written (Unix milliseconds), -1
	// if never.
	UpdateMillis int64
	// LastError is the error that led to FAILED, if any.
	LastError *string
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

const minReadMirrorStatesResponsePartition = minString + minUUID + 4 + 2 + 1 + 1 + 4 + 4 + 8 + 1 + minTags

// Key returns 9006.
func (*ReadMirrorStatesResponse) Key() int16 { return KeyReadMirrorStates }

// MaxVersion returns 0.
func (*ReadMirrorStatesResponse) MaxVersion() int16 { return 0 }

// SetVersion sets the response version.
func (v *ReadMirrorStatesResponse) SetVersion(version int16) { v.Version = version }

// GetVersion returns the response version.
func (v *ReadMirrorStatesResponse) GetVersion() int16 { return v.Version }

// IsFlexible returns true.
func (*ReadMirrorStatesResponse) IsFlexible() bool { return true }

// Throttle returns ThrottleMillis; the throttle applies after the response.
func (v *ReadMirrorStatesResponse) Throttle() (int32, bool) { return v.ThrottleMillis, true }

// SetThrottle sets ThrottleMillis.
func (v *ReadMirrorStatesResponse) SetThrottle(throttleMillis int32) {
	v.ThrottleMillis = throttleMillis
}

// RequestKind returns an empty request of the response's version.
func (v *ReadMirrorStatesResponse) RequestKind() kmsg.Request {
	return &ReadMirrorStatesRequest{Version: v.Version}
}

// AppendTo appends the response body.
func (v *ReadMirrorStatesResponse) AppendTo(dst []byte) []byte {
	dst = AppendInt32(dst, v.ThrottleMillis)
	dst = AppendInt16(dst, v.ErrorCode)
	dst = appendArray(dst, v.Partitions, func(b []byte, p *ReadMirrorStatesResponsePartition) []byte {
		b = AppendCompactString(b, p.MirrorName)
		b = AppendUUID(b, p.TopicID)
		b = AppendInt32(b, p.Partition)
		b = AppendInt16(b, p.ErrorCode)
		b = AppendCompactNullableString(b, p.ErrorMessage)
		b = AppendInt8(b, int8(p.State))
		b = AppendInt32(b, p.StateEpoch)
		b = AppendInt32(b, p.LeaderEpoch)
		b = AppendInt64(b, p.UpdateMillis)
		b = AppendCompactNullableString(b, p.LastError)
		return AppendTags(b, p.UnknownTags)
	})
	return AppendTags(dst, v.UnknownTags)
}

// ReadFrom decodes a whole response body of v.Version, replacing v's fields.
func (v *ReadMirrorStatesResponse) ReadFrom(src []byte) error {
	*v = ReadMirrorStatesResponse{Version: v.Version}
	if err := checkVersion(v.Key(), v.Version); err != nil {
		return err
	}
	r := NewReader(src)
	v.ThrottleMillis = r.Int32()
	v.ErrorCode = r.Int16()
	v.Partitions = readArray(r, minReadMirrorStatesResponsePartition, func(r *Reader, p *ReadMirrorStatesResponsePartition) {
		p.MirrorName = r.CompactString()
		p.TopicID = r.UUID()
		p.Partition = r.Int32()
		p.ErrorCode = r.Int16()
		p.ErrorMessage = r.CompactNullableString()
		p.State = MirrorPartitionState(r.Int8())
		p.StateEpoch = r.Int32()
		p.LeaderEpoch = r.Int32()
		p.UpdateMillis = r.Int64()
		p.LastError = r.CompactNullableString()
		p.UnknownTags = r.Tags()
	})
	v.UnknownTags = r.Tags()
	return finish(r, v.Key(), "response")
}
