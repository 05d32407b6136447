package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreateMirrorRequest (key 9000) creates a mirror: a named link to a source
// cluster, described by source client properties (bootstrap.servers,
// security.protocol, SASL and TLS settings, client id, sync options). It is
// an admin request: kgo routes it to the controller.
type CreateMirrorRequest struct {
	// Version is the request version; only 0 exists.
	Version int16
	// MirrorName names the mirror; topics join it through mirror.name.
	MirrorName string
	// Configs are the mirror's source properties.
	Configs []CreateMirrorRequestConfig
	// ValidateOnly checks the request without creating the mirror.
	ValidateOnly bool
	// TimeoutMillis bounds how long the controller may take.
	TimeoutMillis int32
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// CreateMirrorRequestConfig is one source property of a mirror.
type CreateMirrorRequestConfig struct {
	// Name is the property name, e.g. bootstrap.servers.
	Name string
	// Value is the property value; nil sets nothing (the default applies).
	Value *string
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

const minCreateMirrorConfig = minString + 1 + minTags

func (c *CreateMirrorRequestConfig) appendTo(dst []byte) []byte {
	dst = AppendCompactString(dst, c.Name)
	dst = AppendCompactNullableString(dst, c.Value)
	return AppendTags(dst, c.UnknownTags)
}

func (c *CreateMirrorRequestConfig) readFrom(r *Reader) {
	c.Name = r.CompactString()
	c.Value = r.CompactNullableString()
	c.UnknownTags = r.Tags()
}

// Key returns 9000.
func (*CreateMirrorRequest) Key() int16 { return KeyCreateMirror }

// MaxVersion returns 0.
func (*CreateMirrorRequest) MaxVersion() int16 { return 0 }

// SetVersion sets the version of the request and of its response.
func (v *CreateMirrorRequest) SetVersion(version int16) { v.Version = version }

// GetVersion returns the request version.
func (v *CreateMirrorRequest) GetVersion() int16 { return v.Version }

// IsFlexible returns true: every mirror message uses the flexible encoding.
func (*CreateMirrorRequest) IsFlexible() bool { return true }

// IsAdminRequest marks the request for the controller.
func (*CreateMirrorRequest) IsAdminRequest() {}

// Timeout returns TimeoutMillis.
func (v *CreateMirrorRequest) Timeout() int32 { return v.TimeoutMillis }

// SetTimeout sets TimeoutMillis.
func (v *CreateMirrorRequest) SetTimeout(timeoutMillis int32) { v.TimeoutMillis = timeoutMillis }

// ResponseKind returns an empty response of the request's version.
func (v *CreateMirrorRequest) ResponseKind() kmsg.Response {
	return &CreateMirrorResponse{Version: v.Version}
}

// RequestWith issues the request on r and returns the typed response.
func (v *CreateMirrorRequest) RequestWith(ctx context.Context, r kmsg.Requestor) (*CreateMirrorResponse, error) {
	return requestWith[*CreateMirrorResponse](ctx, r, v)
}

// AppendTo appends the request body.
func (v *CreateMirrorRequest) AppendTo(dst []byte) []byte {
	dst = AppendCompactString(dst, v.MirrorName)
	dst = appendArray(dst, v.Configs, func(b []byte, c *CreateMirrorRequestConfig) []byte { return c.appendTo(b) })
	dst = AppendBool(dst, v.ValidateOnly)
	dst = AppendInt32(dst, v.TimeoutMillis)
	return AppendTags(dst, v.UnknownTags)
}

// ReadFrom decodes a whole request body of v.Version, replacing v's fields.
func (v *CreateMirrorRequest) ReadFrom(src []byte) error {
	*v = CreateMirrorRequest{Version: v.Version}
	if err := checkVersion(v.Key(), v.Version); err != nil {
		return err
	}
	r := NewReader(src)
	v.MirrorName = r.CompactString()
	v.Configs = readArray(r, minCreateMirrorConfig, func(r *Reader, c *CreateMirrorRequestConfig) { c.readFrom(r) })
	v.ValidateOnly = r.Bool()
	v.TimeoutMillis = r.Int32()
	v.UnknownTags = r.Tags()
	return finish(r, v.Key(), "request")
}

// CreateMirrorResponse answers CreateMirrorRequest.
type CreateMirrorResponse struct {
	// Version is the response version; only 0 exists.
	Version int16
	// ThrottleMillis is how long the client should wait before its next
	// request (applied after the response, as since Kafka 2.0).
	ThrottleMillis int32
	// ErrorCode is 0 on success.
	ErrorCode int16
	// ErrorMessage explains a non-zero ErrorCode.
	ErrorMessage *string
	// UnknownTags preserves tagged fields this code does not know.
	UnknownTags Tags
}

// Key returns 9000.
func (*CreateMirrorResponse) Key() int16 { return KeyCreateMirror }

// MaxVersion returns 0.
func (*CreateMirrorResponse) MaxVersion() int16 { return 0 }

// SetVersion sets the response version.
func (v *CreateMirrorResponse) SetVersion(version int16) { v.Version = version }

// GetVersion returns the response version.
func (v *CreateMirrorResponse) GetVersion() int16 { return v.Version }

// IsFlexible returns true.
func (*CreateMirrorResponse) IsFlexible() bool { return true }

// Throttle returns ThrottleMillis; the throttle applies after the response.
func (v *CreateMirrorResponse) Throttle() (int32, bool) { return v.ThrottleMillis, true }

// SetThrottle sets ThrottleMillis.
func (v *CreateMirrorResponse) SetThrottle(throttleMillis int32) { v.ThrottleMillis = throttleMillis }

// RequestKind returns an empty request of the response's version.
func (v *CreateMirrorResponse) RequestKind() kmsg.Request {
	return &CreateMirrorRequest{Version: v.Version}
}

// AppendTo appends the response body.
func (v *CreateMirrorResponse) AppendTo(dst []byte) []byte {
	dst = AppendInt32(dst, v.ThrottleMillis)
	dst = AppendInt16(dst, v.ErrorCode)
	dst = AppendCompactNullableString(dst, v.ErrorMessage)
	return AppendTags(dst, v.UnknownTags)
}

// ReadFrom decodes a whole response body of v.Version, replacing v's fields.
func (v *CreateMirrorResponse) ReadFrom(src []byte) error {
	*v = CreateMirrorResponse{Version: v.Version}
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
