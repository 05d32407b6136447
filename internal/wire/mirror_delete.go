package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteMirrorRequest (key 9003) deletes a mirror. The controller allows it
// only when the mirror has no topics or all of them are STOPPED; it then
// tombstones the mirror's config and its __mirror_state records, and the name
// becomes reusable. It is an admin request: kgo routes it to the controller.
type DeleteMirrorRequest struct {
	// Version is the request version; only 0 exists.
	Version int16
	// MirrorName is the mirror to delete.
	MirrorName string
	// TimeoutMillis bounds how long the controller may take.
	TimeoutMillis int32
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// Key returns 9003.
func (*DeleteMirrorRequest) Key() int16 { return KeyDeleteMirror }

// MaxVersion returns 0.
func (*DeleteMirrorRequest) MaxVersion() int16 { return 0 }

// SetVersion sets the version of the request and of its response.
func (v *DeleteMirrorRequest) SetVersion(version int16) { v.Version = version }

// GetVersion returns the request version.
func (v *DeleteMirrorRequest) GetVersion() int16 { return v.Version }

// IsFlexible returns true: every mirror message uses the flexible encoding.
func (*DeleteMirrorRequest) IsFlexible() bool { return true }

// IsAdminRequest marks the request for the controller.
func (*DeleteMirrorRequest) IsAdminRequest() {}

// Timeout returns TimeoutMillis.
func (v *DeleteMirrorRequest) Timeout() int32 { return v.TimeoutMillis }

// SetTimeout sets TimeoutMillis.
func (v *DeleteMirrorRequest) SetTimeout(timeoutMillis int32) { v.TimeoutMillis = timeoutMillis }

// ResponseKind returns an empty response of the request's version.
func (v *DeleteMirrorRequest) ResponseKind() kmsg.Response {
	return &DeleteMirrorResponse{Version: v.Version}
}

// RequestWith issues the request on r and returns the typed response.
func (v *DeleteMirrorRequest) RequestWith(ctx context.Context, r kmsg.Requestor) (*DeleteMirrorResponse, error) {
	return requestWith[*DeleteMirrorResponse](ctx, r, v)
}

// AppendTo appends the request body.
func (v *DeleteMirrorRequest) AppendTo(dst []byte) []byte {
	dst = AppendCompactString(dst, v.MirrorName)
	dst = AppendInt32(dst, v.TimeoutMillis)
	return AppendTags(dst, v.UnknownTags)
}

// ReadFrom decodes a whole request body of v.Version, replacing v's fields.
func (v *DeleteMirrorRequest) ReadFrom(src []byte) error {
	*v = DeleteMirrorRequest{Version: v.Version}
	if err := checkVersion(v.Key(), v.Version); err != nil {
		return err
	}
	r := NewReader(src)
	v.MirrorName = r.CompactString()
	v.TimeoutMillis = r.Int32()
	v.UnknownTags = r.Tags()
	return finish(r, v.Key(), "request")
}

// DeleteMirrorResponse answers DeleteMirrorRequest.
type DeleteMirrorResponse struct {
	// Version is the response version; only 0 exists.
	Version int16
	// ThrottleMillis is how long the client should wait before its next
	// request (applied after the response).
	ThrottleMillis int32
	// ErrorCode is 0 on success.
	ErrorCode int16
	// ErrorMessage explains a non-zero ErrorCode.
	ErrorMessage *string
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// Key returns 9003.
func (*DeleteMirrorResponse) Key() int16 { return KeyDeleteMirror }

// MaxVersion returns 0.
func (*DeleteMirrorResponse) MaxVersion() int16 { return 0 }

// SetVersion sets the response version.
func (v *DeleteMirrorResponse) SetVersion(version int16) { v.Version = version }

// GetVersion returns the response version.
func (v *DeleteMirrorResponse) GetVersion() int16 { return v.Version }

// IsFlexible returns true.
func (*DeleteMirrorResponse) IsFlexible() bool { return true }

// Throttle returns ThrottleMillis; the throttle applies after the response.
func (v *DeleteMirrorResponse) Throttle() (int32, bool) { return v.ThrottleMillis, true }

// SetThrottle sets ThrottleMillis.
func (v *DeleteMirrorResponse) SetThrottle(throttleMillis int32) { v.ThrottleMillis = throttleMillis }

// RequestKind returns an empty request of the response's version.
func (v *DeleteMirrorResponse) RequestKind() kmsg.Request {
	return &DeleteMirrorRequest{Version: v.Version}
}

// AppendTo appends the response body.
func (v *DeleteMirrorResponse) AppendTo(dst []byte) []byte {
	dst = AppendInt32(dst, v.ThrottleMillis)
	dst = AppendInt16(dst, v.ErrorCode)
	dst = AppendCompactNullableString(dst, v.ErrorMessage)
	return AppendTags(dst, v.UnknownTags)
}

// ReadFrom decodes a whole response body of v.Version, replacing v's fields.
func (v *DeleteMirrorResponse) ReadFrom(src []byte) error {
	*v = DeleteMirrorResponse{Version: v.Version}
	if err := checkVersion(v.Key(), v.Version); err != nil {
		return err
	}
	r := NewReader(src)
	v.ThrottleMillis = r.Int32()
	v.ErrorCode = r.Int16()
	v.ErrorMessage = r.CompactNullableString()
	v.UnknownTags = r.Tags()
	return finish(r, v.Key(), "response")
}
