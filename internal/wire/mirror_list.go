package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListMirrorsRequest (key 9004) lists the mirrors of the cluster. It has no
// fields besides tags. It is an admin request: kgo routes it to the
// controller.
type ListMirrorsRequest struct {
	// Version is the request version; only 0 exists.
	Version int16
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// Key returns 9004.
func (*ListMirrorsRequest) Key() int16 { return KeyListMirrors }

// MaxVersion returns 0.
func (*ListMirrorsRequest) MaxVersion() int16 { return 0 }

// SetVersion sets the version of the request and of its response.
func (v *ListMirrorsRequest) SetVersion(version int16) { v.Version = version }

// GetVersion returns the request version.
func (v *ListMirrorsRequest) GetVersion() int16 { return v.Version }

// IsFlexible returns true: every mirror message uses the flexible encoding.
func (*ListMirrorsRequest) IsFlexible() bool { return true }

// IsAdminRequest marks the request for the controller.
func (*ListMirrorsRequest) IsAdminRequest() {}

// ResponseKind returns an empty response of the request's version.
func (v *ListMirrorsRequest) ResponseKind() kmsg.Response {
	return &ListMirrorsResponse{Version: v.Version}
}

// RequestWith issues the request on r and returns the typed response.
func (v *ListMirrorsRequest) RequestWith(ctx context.Context, r kmsg.Requestor) (*ListMirrorsResponse, error) {
	return requestWith[*ListMirrorsResponse](ctx, r, v)
}

// AppendTo appends the request body.
func (v *ListMirrorsRequest) AppendTo(dst []byte) []byte { return AppendTags(dst, v.UnknownTags) }

// ReadFrom decodes a whole request body of v.Version, replacing v's fields.
func (v *ListMirrorsRequest) ReadFrom(src []byte) error {
	*v = ListMirrorsRequest{Version: v.Version}
	if err := checkVersion(v.Key(), v.Version); err != nil {
		return err
	}
	r := NewReader(src)
	v.UnknownTags = r.Tags()
	return finish(r, v.Key(), "request")
}

// ListMirrorsResponse answers ListMirrorsRequest.
type ListMirrorsResponse struct {
	// Version is the response version; only 0 exists.
	Version int16
	// ThrottleMillis is how long the client should wait before its next
	// request (applied after the response).
	ThrottleMillis int32
	// ErrorCode is 0 on success.
	ErrorCode int16
	// Mirrors holds one entry per mirror, sorted by name.
	Mirrors []ListMirrorsResponseMirror
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// ListMirrorsResponseMirror describes one mirror briefly.
type ListMirrorsResponseMirror struct {
	// Name is the mirror's name.
	Name string
	// SourceBootstrapServers is the mirror's bootstrap.servers property.
	SourceBootstrapServers string
	// TopicCount is how many topics have mirror.name set to this mirror,
	// including paused and removed ones.
	TopicCount int32
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

const minListMirrorsResponseMirror = minString + minString + 4 + minTags

// Key returns 9004.
func (*ListMirrorsResponse) Key() int16 { return KeyListMirrors }

// MaxVersion returns 0.
func (*ListMirrorsResponse) MaxVersion() int16 { return 0 }

// SetVersion sets the response version.
func (v *ListMirrorsResponse) SetVersion(version int16) { v.Version = version }

// GetVersion returns the response version.
func (v *ListMirrorsResponse) GetVersion() int16 { return v.Version }

// IsFlexible returns true.
func (*ListMirrorsResponse) IsFlexible() bool { return true }

// Throttle returns ThrottleMillis; the throttle applies after the response.
func (v *ListMirrorsResponse) Throttle() (int32, bool) { return v.ThrottleMillis, true }

// SetThrottle sets ThrottleMillis.
func (v *ListMirrorsResponse) SetThrottle(throttleMillis int32) { v.ThrottleMillis = throttleMillis }

// RequestKind returns an empty request of the response's version.
func (v *ListMirrorsResponse) RequestKind() kmsg.Request {
	return &ListMirrorsRequest{Version: v.Version}
}

// AppendTo appends the response body.
func (v *ListMirrorsResponse) AppendTo(dst []byte) []byte {
	dst = AppendInt32(dst, v.ThrottleMillis)
	dst = AppendInt16(dst, v.ErrorCode)
	dst = appendArray(dst, v.Mirrors, func(b []byte, m *ListMirrorsResponseMirror) []byte {
		b = AppendCompactString(b, m.Name)
		b = AppendCompactString(b, m.SourceBootstrapServers)
		b = AppendInt32(b, m.TopicCount)
		return AppendTags(b, m.UnknownTags)
	})
	return AppendTags(dst, v.UnknownTags)
}

// ReadFrom decodes a whole response body of v.Version, replacing v's fields.
func (v *ListMirrorsResponse) ReadFrom(src []byte) error {
	*v = ListMirrorsResponse{Version: v.Version}
	if err := checkVersion(v.Key(), v.Version); err != nil {
		return err
	}
	r := NewReader(src)
	v.ThrottleMillis = r.Int32()
	v.ErrorCode = r.Int16()
	v.Mirrors = readArray(r, minListMirrorsResponseMirror, func(r *Reader, m *ListMirrorsResponseMirror) {
		m.Name = r.CompactString()
		m.SourceBootstrapServers = r.CompactString()
		m.TopicCount = r.Int32()
		m.UnknownTags = r.Tags()
	})
	v.UnknownTags = r.Tags()
	return finish(r, v.Key(), "response")
}
