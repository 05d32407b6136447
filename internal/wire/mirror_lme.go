package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReadLastMirroredEpochsRequest (key 9010) is sent by a destination broker to
// its source cluster while PREPARING: for each partition, what is the
// greatest leader epoch of the asking cluster that the source holds (the Last
// Mirrored Epoch, LME), recorded when the source itself failed over from a
// mirror of the asking cluster. A source that is not kmirror does not know the
// key; the asker then treats every LME as -1.
type ReadLastMirroredEpochsRequest struct {
	// Version is the request version; only 0 exists.
	Version int16
	// ClusterID is the asking (destination) cluster's id: the source looks
	// up LMEs recorded for epochs of that cluster.
	ClusterID string
	// Topics are the partitions asked about.
	Topics []ReadLastMirroredEpochsRequestTopic
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// ReadLastMirroredEpochsRequestTopic names one topic's partitions.
type ReadLastMirroredEpochsRequestTopic struct {
	// TopicID is the topic's id (mirrored topics keep it).
	TopicID [16]byte
	// Name is the topic name, used when the id is unknown on the source.
	Name string
	// Partitions are the partition indexes.
	Partitions []int32
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

const minReadLMERequestTopic = minUUID + minString + 1 + minTags

// Key returns 9010.
func (*ReadLastMirroredEpochsRequest) Key() int16 { return KeyReadLastMirroredEpochs }

// MaxVersion returns 0.
func (*ReadLastMirroredEpochsRequest) MaxVersion() int16 { return 0 }

// SetVersion sets the version of the request and of its response.
func (v *ReadLastMirroredEpochsRequest) SetVersion(version int16) { v.Version = version }

// GetVersion returns the request version.
func (v *ReadLastMirroredEpochsRequest) GetVersion() int16 { return v.Version }

// IsFlexible returns true: every mirror message uses the flexible encoding.
func (*ReadLastMirroredEpochsRequest) IsFlexible() bool { return true }

// ResponseKind returns an empty response of the request's version.
func (v *ReadLastMirroredEpochsRequest) ResponseKind() kmsg.Response {
	return &ReadLastMirroredEpochsResponse{Version: v.Version}
}

// RequestWith issues the request on r and returns the typed response.
func (v *ReadLastMirroredEpochsRequest) RequestWith(ctx context.Context, r kmsg.Requestor) (*ReadLastMirroredEpochsResponse, error) {
	return requestWith[*ReadLastMirroredEpochsResponse](ctx, r, v)
}

// AppendTo appends the request body.
func (v *ReadLastMirroredEpochsRequest) AppendTo(dst []byte) []byte {
	dst = AppendCompactString(dst, v.ClusterID)
	dst = appendArray(dst, v.Topics, func(b []byte, t *ReadLastMirroredEpochsRequestTopic) []byte {
		b = AppendUUID(b, t.TopicID)
		b = AppendCompactString(b, t.Name)
		b = appendArray(b, t.Partitions, func(b []byte, p *int32) []byte { return AppendInt32(b, *p) })
		return AppendTags(b, t.UnknownTags)
	})
	return AppendTags(dst, v.UnknownTags)
}

// ReadFrom decodes a whole request body of v.Version, replacing v's fields.
func (v *ReadLastMirroredEpochsRequest) ReadFrom(src []byte) error {
	*v = ReadLastMirroredEpochsRequest{Version: v.Version}
	if err := checkVersion(v.Key(), v.Version); err != nil {
		return err
	}
	r := NewReader(src)
	v.ClusterID = r.CompactString()
	v.Topics = readArray(r, minReadLMERequestTopic, func(r *Reader, t *ReadLastMirroredEpochsRequestTopic) {
		t.TopicID = r.UUID()
		t.Name = r.CompactString()
		t.Partitions = readArray(r, 4, func(r *Reader, p *int32) { *p = r.Int32() })
		t.UnknownTags = r.Tags()
	})
	v.UnknownTags = r.Tags()
	return finish(r, v.Key(), "request")
}

// ReadLastMirroredEpochsResponse answers ReadLastMirroredEpochsRequest.
type ReadLastMirroredEpochsResponse struct {
	// Version is the response version; only 0 exists.
	Version int16
	// ThrottleMillis is how long the client should wait before its next
	// request (applied after the response).
	ThrottleMillis int32
	// ErrorCode is a request-level error.
	ErrorCode int16
	// Topics holds one result per requested topic.
	Topics []ReadLastMirroredEpochsResponseTopic
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// ReadLastMirroredEpochsResponseTopic holds one topic's results.
type ReadLastMirroredEpochsResponseTopic struct {
	// TopicID is the topic id, as requested.
	TopicID [16]byte
	// Name is the topic name, as requested.
	Name string
	// Partitions holds one result per requested partition.
	Partitions []ReadLastMirroredEpochsResponsePartition
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// ReadLastMirroredEpochsResponsePartition is the LME of one partition.
type ReadLastMirroredEpochsResponsePartition struct {
	// Partition is the partition index.
	Partition int32
	// ErrorCode is 0 on success (also when no LME is known).
	ErrorCode int16
	// LastMirroredEpoch is the greatest leader epoch of the asking cluster
	// held by this cluster's copy, or -1 if none is recorded.
	LastMirroredEpoch int32
	// EndOffset is where that epoch ends in this cluster's log, -1 with an
	// LME of -1.
	EndOffset int64
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

const (
	minReadLMEResponsePartition = 4 + 2 + 4 + 8 + minTags
	minReadLMEResponseTopic     = minUUID + minString + 1 + minTags
)

// Key returns 9010.
func (*ReadLastMirroredEpochsResponse) Key() int16 { return KeyReadLastMirroredEpochs }

// MaxVersion returns 0.
func (*ReadLastMirroredEpochsResponse) MaxVersion() int16 { return 0 }

// SetVersion sets the response version.
func (v *ReadLastMirroredEpochsResponse) SetVersion(version int16) { v.Version = version }

// GetVersion returns the response version.
func (v *ReadLastMirroredEpochsResponse) GetVersion() int16 { return v.Version }

// IsFlexible returns true.
func (*ReadLastMirroredEpochsResponse) IsFlexible() bool { return true }

// Throttle returns ThrottleMillis; the throttle applies after the response.
func (v *ReadLastMirroredEpochsResponse) Throttle() (int32, bool) { return v.ThrottleMillis, true }

// SetThrottle sets ThrottleMillis.
func (v *ReadLastMirroredEpochsResponse) SetThrottle(throttleMillis int32) {
	v.ThrottleMillis = throttleMillis
}

// RequestKind returns an empty request of the response's version.
func (v *ReadLastMirroredEpochsResponse) RequestKind() kmsg.Request {
	return &ReadLastMirroredEpochsRequest{Version: v.Version}
}

// AppendTo appends the response body.
func (v *ReadLastMirroredEpochsResponse) AppendTo(dst []byte) []byte {
	dst = AppendInt32(dst, v.ThrottleMillis)
	dst = AppendInt16(dst, v.ErrorCode)
	dst = appendArray(dst, v.Topics, func(b []byte, t *ReadLastMirroredEpochsResponseTopic) []byte {
		b = AppendUUID(b, t.TopicID)
		b = AppendCompactString(b, t.Name)
		b = appendArray(b, t.Partitions, func(b []byte, p *ReadLastMirroredEpochsResponsePartition) []byte {
			b = AppendInt32(b, p.Partition)
			b = AppendInt16(b, p.ErrorCode)
			b = AppendInt32(b, p.LastMirroredEpoch)
			b = AppendInt64(b, p.EndOffset)
			return AppendTags(b, p.UnknownTags)
		})
		return AppendTags(b, t.UnknownTags)
	})
	return AppendTags(dst, v.UnknownTags)
}

// ReadFrom decodes a whole response body of v.Version, replacing v's fields.
func (v *ReadLastMirroredEpochsResponse) ReadFrom(src []byte) error {
	*v = ReadLastMirroredEpochsResponse{Version: v.Version}
	if err := checkVersion(v.Key(), v.Version); err != nil {
		return err
	}
	r := NewReader(src)
	v.ThrottleMillis = r.Int32()
	v.ErrorCode = r.Int16()
	v.Topics = readArray(r, minReadLMEResponseTopic, func(r *Reader, t *ReadLastMirroredEpochsResponseTopic) {
		t.TopicID = r.UUID()
		t.Name = r.CompactString()
		t.Partitions = readArray(r, minReadLMEResponsePartition, func(r *Reader, p *ReadLastMirroredEpochsResponsePartition) {
			p.Partition = r.Int32()
			p.ErrorCode = r.Int16()
			p.LastMirroredEpoch = r.Int32()
			p.EndOffset = r.Int64()
			p.UnknownTags = r.Tags()
		})
		t.UnknownTags = r.Tags()
	})
	v.UnknownTags = r.Tags()
	return finish(r, v.Key(), "response")
}
