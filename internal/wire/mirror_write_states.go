package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// WriteMirrorStatesRequest (key 9007) asks the mirror coordinator to persist
// partition state transitions, and the Last Mirrored Epochs recorded at
// failover, in __mirror_state. Brokers send it to each other when the
// coordinator of a key is on another node; a transition counts as done only
// once this write succeeded.
type WriteMirrorStatesRequest struct {
	// Version is the request version; only 0 exists.
	Version int16
	// Partitions are state transitions to persist.
	Partitions []WriteMirrorStatesRequestPartition
	// LastMirroredEpochs are LME records to persist, written during
	// STOPPING so that a later mirror in the opposite direction can ask for
	// them with ReadLastMirroredEpochs.
	LastMirroredEpochs []WriteMirrorStatesRequestLastMirroredEpoch
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// WriteMirrorStatesRequestPartition is one state to persist.
type WriteMirrorStatesRequestPartition struct {
	// MirrorName is the mirror the partition's topic belongs to.
	MirrorName string
	// TopicID is the destination topic's id.
	TopicID [16]byte
	// Partition is the partition index.
	Partition int32
	// State is the new state.
	State MirrorPartitionState
	// StateEpoch grows with every transition of the partition; the
	// coordinator refuses a write whose StateEpoch is not above the stored
	// one (docs/protocol.md gives the error codes).
	StateEpoch int32
	// LeaderEpoch is the writer's leader epoch of the destination partition;
	// a write from an older leader epoch than the stored one is refused.
	LeaderEpoch int32
	// LastError is the reason for FAILED, if any.
	LastError *string
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// WriteMirrorStatesRequestLastMirroredEpoch is one LME record: the greatest
// leader epoch of SourceClusterID that this cluster's copy of the partition
// holds, and the offset where that epoch ends here.
type WriteMirrorStatesRequestLastMirroredEpoch struct {
	// MirrorName is the mirror that stopped.
	MirrorName string
	// TopicID is the topic's id.
	TopicID [16]byte
	// Partition is the partition index.
	Partition int32
	// SourceClusterID is the cluster id of the source that was mirrored.
	SourceClusterID string
	// LastMirroredEpoch is the greatest source leader epoch kept here.
	LastMirroredEpoch int32
	// EndOffset is the end offset of that epoch in this cluster's log.
	EndOffset int64
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

const (
	minWriteMirrorStatesRequestPartition = minString + minUUID + 4 + 1 + 4 + 4 + 1 + minTags
	minWriteMirrorStatesRequestLME       = minString + minUUID + 4 + minString + 4 + 8 + minTags
)

// Key returns 9007.
func (*WriteMirrorStatesRequest) Key() int16 { return KeyWriteMirrorStates }

// MaxVersion returns 0.
func (*WriteMirrorStatesRequest) MaxVersion() int16 { return 0 }

// SetVersion sets the version of the request and of its response.
func (v *WriteMirrorStatesRequest) SetVersion(version int16) { v.Version = version }

// GetVersion returns the request version.
func (v *WriteMirrorStatesRequest) GetVersion() int16 { return v.Version }

// IsFlexible returns true: every mirror message uses the flexible encoding.
func (*WriteMirrorStatesRequest) IsFlexible() bool { return true }

// ResponseKind returns an empty response of the request's version.
func (v *WriteMirrorStatesRequest) ResponseKind() kmsg.Response {
	return &WriteMirrorStatesResponse{Version: v.Version}
}

// RequestWith issues the request on r and returns the typed response.
func (v *WriteMirrorStatesRequest) RequestWith(ctx context.Context, r kmsg.Requestor) (*WriteMirrorStatesResponse, error) {
	return requestWith[*WriteMirrorStatesResponse](ctx, r, v)
}

// AppendTo appends the request body.
func (v *WriteMirrorStatesRequest) AppendTo(dst []byte) []byte {
	dst = appendArray(dst, v.Partitions, func(b []byte, p *WriteMirrorStatesRequestPartition) []byte {
		b = AppendCompactString(b, p.MirrorName)
		b = AppendUUID(b, p.TopicID)
		b = AppendInt32(b, p.Partition)
		b = AppendInt8(b, int8(p.State))
		b = AppendInt32(b, p.StateEpoch)
		b = AppendInt32(b, p.LeaderEpoch)
		b = AppendCompactNullableString(b, p.LastError)
		return AppendTags(b, p.UnknownTags)
	})
	dst = appendArray(dst, v.LastMirroredEpochs, func(b []byte, l *WriteMirrorStatesRequestLastMirroredEpoch) []byte {
		b = AppendCompactString(b, l.MirrorName)
		b = AppendUUID(b, l.TopicID)
		b = AppendInt32(b, l.Partition)
		b = AppendCompactString(b, l.SourceClusterID)
		b = AppendInt32(b, l.LastMirroredEpoch)
		b = AppendInt64(b, l.EndOffset)
		return AppendTags(b, l.UnknownTags)
	})
	return AppendTags(dst, v.UnknownTags)
}

// ReadFrom decodes a whole request body of v.Version, replacing v's fields.
func (v *WriteMirrorStatesRequest) ReadFrom(src []byte) error {
	*v = WriteMirrorStatesRequest{Version: v.Version}
	if err := checkVersion(v.Key(), v.Version); err != nil {
		return err
	}
	r := NewReader(src)
	v.Partitions = readArray(r, minWriteMirrorStatesRequestPartition, func(r *Reader, p *WriteMirrorStatesRequestPartition) {
		p.MirrorName = r.CompactString()
		p.TopicID = r.UUID()
		p.Partition = r.Int32()
		p.State = MirrorPartitionState(r.Int8())
		p.StateEpoch = r.Int32()
		p.LeaderEpoch = r.Int32()
		p.LastError = r.CompactNullableString()
		p.UnknownTags = r.Tags()
	})
	v.LastMirroredEpochs = readArray(r, minWriteMirrorStatesRequestLME, func(r *Reader, l *WriteMirrorStatesRequestLastMirroredEpoch) {
		l.MirrorName = r.CompactString()
		l.TopicID = r.UUID()
		l.Partition = r.Int32()
		l.SourceClusterID = r.CompactString()
		l.LastMirroredEpoch = r.Int32()
		l.EndOffset = r.Int64()
		l.UnknownTags = r.Tags()
	})
	v.UnknownTags = r.Tags()
	return finish(r, v.Key(), "request")
}

// WriteMirrorStatesResponse answers WriteMirrorStatesRequest.
type WriteMirrorStatesResponse struct {
	// Version is the response version; only 0 exists.
	Version int16
	// ThrottleMillis is how long the client should wait before its next
	// request (applied after the response).
	ThrottleMillis int32
	// ErrorCode is a request-level error. It also reports the outcome of
	// the LastMirroredEpochs writes, which have no per-entry results: they
	// are written atomically with the partition states.
	ErrorCode int16
	// Partitions holds one result per state in the request.
	Partitions []WriteMirrorStatesResponsePartition
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// WriteMirrorStatesResponsePartition is the result of one state write.
type WriteMirrorStatesResponsePartition struct {
	// MirrorName is the mirror, as requested.
	MirrorName string
	// TopicID is the topic id, as requested.
	TopicID [16]byte
	// Partition is the partition index, as requested.
	Partition int32
	// ErrorCode is 0 once the state is durably written.
	ErrorCode int16
	// ErrorMessage explains a non-zero ErrorCode.
	ErrorMessage *string
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

const minWriteMirrorStatesResponsePartition = minString + minUUID + 4 + 2 + 1 + minTags

// Key returns 9007.
func (*WriteMirrorStatesResponse) Key() int16 { return KeyWriteMirrorStates }

// MaxVersion returns 0.
func (*WriteMirrorStatesResponse) MaxVersion() int16 { return 0 }

// SetVersion sets the response version.
func (v *WriteMirrorStatesResponse) SetVersion(version int16) { v.Version = version }

// GetVersion returns the response version.
func (v *WriteMirrorStatesResponse) GetVersion() int16 { return v.Version }

// IsFlexible returns true.
func (*WriteMirrorStatesResponse) IsFlexible() bool { return true }

// Throttle returns ThrottleMillis; the throttle applies after the response.
func (v *WriteMirrorStatesResponse) Throttle() (int32, bool) { return v.ThrottleMillis, true }

// SetThrottle sets ThrottleMillis.
func (v *WriteMirrorStatesResponse) SetThrottle(throttleMillis int32) {
	v.ThrottleMillis = throttleMillis
}

// RequestKind returns an empty request of the response's version.
func (v *WriteMirrorStatesResponse) RequestKind() kmsg.Request {
	return &WriteMirrorStatesRequest{Version: v.Version}
}

// AppendTo appends the response body.
func (v *WriteMirrorStatesResponse) AppendTo(dst []byte) []byte {
	dst = AppendInt32(dst, v.ThrottleMillis)
	dst = AppendInt16(dst, v.ErrorCode)
	dst = appendArray(dst, v.Partitions, func(b []byte, p *WriteMirrorStatesResponsePartition) []byte {
		b = AppendCompactString(b, p.MirrorName)
		b = AppendUUID(b, p.TopicID)
		b = AppendInt32(b, p.Partition)
		b = AppendInt16(b, p.ErrorCode)
		b = AppendCompactNullableString(b, p.ErrorMessage)
		return AppendTags(b, p.UnknownTags)
	})
	return AppendTags(dst, v.UnknownTags)
}

// ReadFrom decodes a whole response body of v.Version, replacing v's fields.
func (v *WriteMirrorStatesResponse) ReadFrom(src []byte) error {
	*v = WriteMirrorStatesResponse{Version: v.Version}
	if err := checkVersion(v.Key(), v.Version); err != nil {
		return err
	}
	r := NewReader(src)
	v.ThrottleMillis = r.Int32()
	v.ErrorCode = r.Int16()
	v.Partitions = readArray(r, minWriteMirrorStatesResponsePartition, func(r *Reader, p *WriteMirrorStatesResponsePartition) {
		p.MirrorName = r.CompactString()
		p.TopicID = r.UUID()
		p.Partition = r.Int32()
		p.ErrorCode = r.Int16()
		p.ErrorMessage = r.CompactNullableString()
		p.UnknownTags = r.Tags()
	})
	v.UnknownTags = r.Tags()
	return finish(r, v.Key(), "response")
}
