package wire

import "github.com/twmb/franz-go/pkg/kmsg"

// MirrorTopicsRequest is the body shared by the four requests that change the
// mirror membership of topics: AddTopicsToMirrorRequest (95),
// RemoveTopicsFromMirrorRequest (96), PauseMirrorTopicsRequest (102) and
// ResumeMirrorTopicsRequest (103). Those types are defined on this struct, so
// they have exactly these fields. It is not itself a request.
type MirrorTopicsRequest struct {
	// Version is the request version; only 0 exists.
	Version int16
	// MirrorName is the mirror the topics belong to, or join.
	MirrorName string
	// Topics are the destination topics to act on.
	Topics []MirrorTopicsRequestTopic
	// ValidateOnly checks every topic without changing anything.
	ValidateOnly bool
	// TimeoutMillis bounds how long the controller may take.
	TimeoutMillis int32
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// MirrorTopicsRequestTopic names one topic in a MirrorTopicsRequest.
type MirrorTopicsRequestTopic struct {
	// Name is the topic name.
	Name string
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

const minMirrorTopicsRequestTopic = minString + minTags

func (v *MirrorTopicsRequest) appendTo(dst []byte) []byte {
	dst = AppendCompactString(dst, v.MirrorName)
	dst = appendArray(dst, v.Topics, func(b []byte, t *MirrorTopicsRequestTopic) []byte {
		b = AppendCompactString(b, t.Name)
		return AppendTags(b, t.UnknownTags)
	})
	dst = AppendBool(dst, v.ValidateOnly)
	dst = AppendInt32(dst, v.TimeoutMillis)
	return AppendTags(dst, v.UnknownTags)
}

func (v *MirrorTopicsRequest) readFrom(key int16, src []byte) error {
	*v = MirrorTopicsRequest{Version: v.Version}
	if err := checkVersion(key, v.Version); err != nil {
		return err
	}
	r := NewReader(src)
	v.MirrorName = r.CompactString()
	v.Topics = readArray(r, minMirrorTopicsRequestTopic, func(r *Reader, t *MirrorTopicsRequestTopic) {
		t.Name = r.CompactString()
		t.UnknownTags = r.Tags()
	})
	v.ValidateOnly = r.Bool()
	v.TimeoutMillis = r.Int32()
	v.UnknownTags = r.Tags()
	return finish(r, key, "request")
}

// MirrorTopicsResponse is the body shared by the responses to the four
// MirrorTopicsRequest kinds: a mirror-level error (e.g. an unknown mirror)
// and one result per topic.
type MirrorTopicsResponse struct {
	// Version is the response version; only 0 exists.
	Version int16
	// ThrottleMillis is how long the client should wait before its next
	// request (applied after the response).
	ThrottleMillis int32
	// ErrorCode is a mirror-level error; when non-zero Topics may be empty.
	ErrorCode int16
	// ErrorMessage explains a non-zero ErrorCode.
	ErrorMessage *string
	// Topics holds one result per requested topic.
	Topics []MirrorTopicsResponseTopic
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// MirrorTopicsResponseTopic is the result for one topic.
type MirrorTopicsResponseTopic struct {
	// Name is the topic name, as requested.
	Name string
	// TopicID is the topic's id, zero when the topic is unknown.
	TopicID [16]byte
	// ErrorCode is 0 on success.
	ErrorCode int16
	// ErrorMessage says which check failed and why.
	ErrorMessage *string
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

const minMirrorTopicsResponseTopic = minString + minUUID + 2 + 1 + minTags

func (v *MirrorTopicsResponse) appendTo(dst []byte) []byte {
	dst = AppendInt32(dst, v.ThrottleMillis)
	dst = AppendInt16(dst, v.ErrorCode)
	dst = AppendCompactNullableString(dst, v.ErrorMessage)
	dst = appendArray(dst, v.Topics, func(b []byte, t *MirrorTopicsResponseTopic) []byte {
		b = AppendCompactString(b, t.Name)
		b = AppendUUID(b, t.TopicID)
		b = AppendInt16(b, t.ErrorCode)
		b = AppendCompactNullableString(b, t.ErrorMessage)
		return AppendTags(b, t.UnknownTags)
	})
	return AppendTags(dst, v.UnknownTags)
}

func (v *MirrorTopicsResponse) readFrom(key int16, src []byte) error {
	*v = MirrorTopicsResponse{Version: v.Version}
	if err := checkVersion(key, v.Version); err != nil {
		return err
	}
	r := NewReader(src)
	v.ThrottleMillis = r.Int32()
	v.ErrorCode = r.Int16()
	v.ErrorMessage = r.CompactNullableString()
	v.Topics = readArray(r, minMirrorTopicsResponseTopic, func(r *Reader, t *MirrorTopicsResponseTopic) {
		t.Name = r.CompactString()
		t.TopicID = r.UUID()
		t.ErrorCode = r.Int16()
		t.ErrorMessage = r.CompactNullableString()
		t.UnknownTags = r.Tags()
	})
	v.UnknownTags = r.Tags()
	return finish(r, key, "response")
}

var (
	_ kmsg.AdminRequest   = (*AddTopicsToMirrorRequest)(nil)
	_ kmsg.TimeoutRequest = (*RemoveTopicsFromMirrorRequest)(nil)
)
