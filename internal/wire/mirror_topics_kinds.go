// Code in this file is the per-key boilerplate of the four requests that
// share MirrorTopicsRequest; it was written by a script and is kept by hand.

package wire

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AddTopicsToMirrorRequest (key 9001) adds destination topics to a mirror. The controller checks that each topic exists on the source and is in no mirror, creates it on the destination with the source's topic id, partition count and configs if it is missing, and sets its mirror.name config to the mirror. It is an admin request: kgo routes it to the
// controller. Its fields are MirrorTopicsRequest's.
type AddTopicsToMirrorRequest MirrorTopicsRequest

// Key returns 9001.
func (*AddTopicsToMirrorRequest) Key() int16 { return KeyAddTopicsToMirror }

// MaxVersion returns 0.
func (*AddTopicsToMirrorRequest) MaxVersion() int16 { return 0 }

// SetVersion sets the version of the request and of its response.
func (v *AddTopicsToMirrorRequest) SetVersion(version int16) { v.Version = version }

// GetVersion returns the request version.
func (v *AddTopicsToMirrorRequest) GetVersion() int16 { return v.Version }

// IsFlexible returns true: every mirror message uses the flexible encoding.
func (*AddTopicsToMirrorRequest) IsFlexible() bool { return true }

// IsAdminRequest marks the request for the controller.
func (*AddTopicsToMirrorRequest) IsAdminRequest() {}

// Timeout returns TimeoutMillis.
func (v *AddTopicsToMirrorRequest) Timeout() int32 { return v.TimeoutMillis }

// SetTimeout sets TimeoutMillis.
func (v *AddTopicsToMirrorRequest) SetTimeout(timeoutMillis int32) { v.TimeoutMillis = timeoutMillis }

// ResponseKind returns an empty response of the request's version.
func (v *AddTopicsToMirrorRequest) ResponseKind() kmsg.Response {
	return &AddTopicsToMirrorResponse{Version: v.Version}
}

// RequestWith issues the request on r and returns the typed response.
func (v *AddTopicsToMirrorRequest) RequestWith(ctx context.Context, r kmsg.Requestor) (*AddTopicsToMirrorResponse, error) {
	return requestWith[*AddTopicsToMirrorResponse](ctx, r, v)
}

// AppendTo appends the request body.
func (v *AddTopicsToMirrorRequest) AppendTo(dst []byte) []byte {
	return (*MirrorTopicsRequest)(v).appendTo(dst)
}

// ReadFrom decodes a whole request body of v.Version, replacing v's fields.
func (v *AddTopicsToMirrorRequest) ReadFrom(src []byte) error {
	return (*MirrorTopicsRequest)(v).readFrom(KeyAddTopicsToMirror, src)
}

// AddTopicsToMirrorResponse answers AddTopicsToMirrorRequest. Its fields are MirrorTopicsResponse's.
type AddTopicsToMirrorResponse MirrorTopicsResponse

// Key returns 9001.
func (*AddTopicsToMirrorResponse) Key() int16 { return KeyAddTopicsToMirror }

// MaxVersion returns 0.
func (*AddTopicsToMirrorResponse) MaxVersion() int16 { return 0 }

// SetVersion sets the response version.
func (v *AddTopicsToMirrorResponse) SetVersion(version int16) { v.Version = version }

// GetVersion returns the response version.
func (v *AddTopicsToMirrorResponse) GetVersion() int16 { return v.Version }

// IsFlexible returns true.
func (*AddTopicsToMirrorResponse) IsFlexible() bool { return true }

// Throttle returns ThrottleMillis; the throttle applies after the response.
func (v *AddTopicsToMirrorResponse) Throttle() (int32, bool) { return v.ThrottleMillis, true }

// SetThrottle sets ThrottleMillis.
func (v *AddTopicsToMirrorResponse) SetThrottle(throttleMillis int32) {
	v.ThrottleMillis = throttleMillis
}

// RequestKind returns an empty request of the response's version.
func (v *AddTopicsToMirrorResponse) RequestKind() kmsg.Request {
	return &AddTopicsToMirrorRequest{Version: v.Version}
}

// AppendTo appends the response body.
func (v *AddTopicsToMirrorResponse) AppendTo(dst []byte) []byte {
	return (*MirrorTopicsResponse)(v).appendTo(dst)
}

// ReadFrom decodes a whole response body of v.Version, replacing v's fields.
func (v *AddTopicsToMirrorResponse) ReadFrom(src []byte) error {
	return (*MirrorTopicsResponse)(v).readFrom(KeyAddTopicsToMirror, src)
}

// RemoveTopicsFromMirrorRequest (key 9002) fails topics over: allowed from MIRRORING or PAUSED, it sets mirror.name to "<mirror>.removed"; each partition then goes through STOPPING to STOPPED and becomes writable. It is an admin request: kgo routes it to the
// controller. Its fields are MirrorTopicsRequest's.
type RemoveTopicsFromMirrorRequest MirrorTopicsRequest

// Key returns 9002.
func (*RemoveTopicsFromMirrorRequest) Key() int16 { return KeyRemoveTopicsFromMirror }

// MaxVersion returns 0.
func (*RemoveTopicsFromMirrorRequest) MaxVersion() int16 { return 0 }

// SetVersion sets the version of the request and of its response.
func (v *RemoveTopicsFromMirrorRequest) SetVersion(version int16) { v.Version = version }

// GetVersion returns the request version.
func (v *RemoveTopicsFromMirrorRequest) GetVersion() int16 { return v.Version }

// IsFlexible returns true: every mirror message uses the flexible encoding.
func (*RemoveTopicsFromMirrorRequest) IsFlexible() bool { return true }

// IsAdminRequest marks the request for the controller.
func (*RemoveTopicsFromMirrorRequest) IsAdminRequest() {}

// Timeout returns TimeoutMillis.
func (v *RemoveTopicsFromMirrorRequest) Timeout() int32 { return v.TimeoutMillis }

// SetTimeout sets TimeoutMillis.
func (v *RemoveTopicsFromMirrorRequest) SetTimeout(timeoutMillis int32) {
	v.TimeoutMillis = timeoutMillis
}

// ResponseKind returns an empty response of the request's version.
func (v *RemoveTopicsFromMirrorRequest) ResponseKind() kmsg.Response {
	return &RemoveTopicsFromMirrorResponse{Version: v.Version}
}

// RequestWith issues the request on r and returns the typed response.
func (v *RemoveTopicsFromMirrorRequest) RequestWith(ctx context.Context, r kmsg.Requestor) (*RemoveTopicsFromMirrorResponse, error) {
	return requestWith[*RemoveTopicsFromMirrorResponse](ctx, r, v)
}

// AppendTo appends the request body.
func (v *RemoveTopicsFromMirrorRequest) AppendTo(dst []byte) []byte {
	return (*MirrorTopicsRequest)(v).appendTo(dst)
}

// ReadFrom decodes a whole request body of v.Version, replacing v's fields.
func (v *RemoveTopicsFromMirrorRequest) ReadFrom(src []byte) error {
	return (*MirrorTopicsRequest)(v).readFrom(KeyRemoveTopicsFromMirror, src)
}

// RemoveTopicsFromMirrorResponse answers RemoveTopicsFromMirrorRequest. Its fields are MirrorTopicsResponse's.
type RemoveTopicsFromMirrorResponse MirrorTopicsResponse

// Key returns 9002.
func (*RemoveTopicsFromMirrorResponse) Key() int16 { return KeyRemoveTopicsFromMirror }

// MaxVersion returns 0.
func (*RemoveTopicsFromMirrorResponse) MaxVersion() int16 { return 0 }

// SetVersion sets the response version.
func (v *RemoveTopicsFromMirrorResponse) SetVersion(version int16) { v.Version = version }

// GetVersion returns the response version.
func (v *RemoveTopicsFromMirrorResponse) GetVersion() int16 { return v.Version }

// IsFlexible returns true.
func (*RemoveTopicsFromMirrorResponse) IsFlexible() bool { return true }

// Throttle returns ThrottleMillis; the throttle applies after the response.
func (v *RemoveTopicsFromMirrorResponse) Throttle() (int32, bool) { return v.ThrottleMillis, true }

// SetThrottle sets ThrottleMillis.
func (v *RemoveTopicsFromMirrorResponse) SetThrottle(throttleMillis int32) {
	v.ThrottleMillis = throttleMillis
}

// RequestKind returns an empty request of the response's version.
func (v *RemoveTopicsFromMirrorResponse) RequestKind() kmsg.Request {
	return &RemoveTopicsFromMirrorRequest{Version: v.Version}
}

// AppendTo appends the response body.
func (v *RemoveTopicsFromMirrorResponse) AppendTo(dst []byte) []byte {
	return (*MirrorTopicsResponse)(v).appendTo(dst)
}

// ReadFrom decodes a whole response body of v.Version, replacing v's fields.
func (v *RemoveTopicsFromMirrorResponse) ReadFrom(src []byte) error {
	return (*MirrorTopicsResponse)(v).readFrom(KeyRemoveTopicsFromMirror, src)
}

// PauseMirrorTopicsRequest (key 9008) pauses mirroring of topics (only from MIRRORING) by setting mirror.name to "<mirror>.paused"; the topics stay read-only. It is an admin request: kgo routes it to the
// controller. Its fields are MirrorTopicsRequest's.
type PauseMirrorTopicsRequest MirrorTopicsRequest

// Key returns 9008.
func (*PauseMirrorTopicsRequest) Key() int16 { return KeyPauseMirrorTopics }

// MaxVersion returns 0.
func (*PauseMirrorTopicsRequest) MaxVersion() int16 { return 0 }

// SetVersion sets the version of the request and of its response.
func (v *PauseMirrorTopicsRequest) SetVersion(version int16) { v.Version = version }

// GetVersion returns the request version.
func (v *PauseMirrorTopicsRequest) GetVersion() int16 { return v.Version }

// IsFlexible returns true: every mirror message uses the flexible encoding.
func (*PauseMirrorTopicsRequest) IsFlexible() bool { return true }

// IsAdminRequest marks the request for the controller.
func (*PauseMirrorTopicsRequest) IsAdminRequest() {}

// Timeout returns TimeoutMillis.
func (v *PauseMirrorTopicsRequest) Timeout() int32 { return v.TimeoutMillis }

// SetTimeout sets TimeoutMillis.
func (v *PauseMirrorTopicsRequest) SetTimeout(timeoutMillis int32) { v.TimeoutMillis = timeoutMillis }

// ResponseKind returns an empty response of the request's version.
func (v *PauseMirrorTopicsRequest) ResponseKind() kmsg.Response {
	return &PauseMirrorTopicsResponse{Version: v.Version}
}

// RequestWith issues the request on r and returns the typed response.
func (v *PauseMirrorTopicsRequest) RequestWith(ctx context.Context, r kmsg.Requestor) (*PauseMirrorTopicsResponse, error) {
	return requestWith[*PauseMirrorTopicsResponse](ctx, r, v)
}

// AppendTo appends the request body.
func (v *PauseMirrorTopicsRequest) AppendTo(dst []byte) []byte {
	return (*MirrorTopicsRequest)(v).appendTo(dst)
}

// ReadFrom decodes a whole request body of v.Version, replacing v's fields.
func (v *PauseMirrorTopicsRequest) ReadFrom(src []byte) error {
	return (*MirrorTopicsRequest)(v).readFrom(KeyPauseMirrorTopics, src)
}

// PauseMirrorTopicsResponse answers PauseMirrorTopicsRequest. Its fields are MirrorTopicsResponse's.
type PauseMirrorTopicsResponse MirrorTopicsResponse

// Key returns 9008.
func (*PauseMirrorTopicsResponse) Key() int16 { return KeyPauseMirrorTopics }

// MaxVersion returns 0.
func (*PauseMirrorTopicsResponse) MaxVersion() int16 { return 0 }

// SetVersion sets the response version.
func (v *PauseMirrorTopicsResponse) SetVersion(version int16) { v.Version = version }

// GetVersion returns the response version.
func (v *PauseMirrorTopicsResponse) GetVersion() int16 { return v.Version }

// IsFlexible returns true.
func (*PauseMirrorTopicsResponse) IsFlexible() bool { return true }

// Throttle returns ThrottleMillis; the throttle applies after the response.
func (v *PauseMirrorTopicsResponse) Throttle() (int32, bool) { return v.ThrottleMillis, true }

// SetThrottle sets ThrottleMillis.
func (v *PauseMirrorTopicsResponse) SetThrottle(throttleMillis int32) {
	v.ThrottleMillis = throttleMillis
}

// RequestKind returns an empty request of the response's version.
func (v *PauseMirrorTopicsResponse) RequestKind() kmsg.Request {
	return &PauseMirrorTopicsRequest{Version: v.Version}
}

// AppendTo appends the response body.
func (v *PauseMirrorTopicsResponse) AppendTo(dst []byte) []byte {
	return (*MirrorTopicsResponse)(v).appendTo(dst)
}

// ReadFrom decodes a whole response body of v.Version, replacing v's fields.
func (v *PauseMirrorTopicsResponse) ReadFrom(src []byte) error {
	return (*MirrorTopicsResponse)(v).readFrom(KeyPauseMirrorTopics, src)
}

// ResumeMirrorTopicsRequest (key 9009) resumes paused topics (only when paused) by removing the ".paused" suffix; mirroring continues from the log end without truncation. It is an admin request: kgo routes it to the
// controller. Its fields are MirrorTopicsRequest's.
type ResumeMirrorTopicsRequest MirrorTopicsRequest

// Key returns 9009.
func (*ResumeMirrorTopicsRequest) Key() int16 { return KeyResumeMirrorTopics }

// MaxVersion returns 0.
func (*ResumeMirrorTopicsRequest) MaxVersion() int16 { return 0 }

// SetVersion sets the version of the request and of its response.
func (v *ResumeMirrorTopicsRequest) SetVersion(version int16) { v.Version = version }

// GetVersion returns the request version.
func (v *ResumeMirrorTopicsRequest) GetVersion() int16 { return v.Version }

// IsFlexible returns true: every mirror message uses the flexible encoding.
func (*ResumeMirrorTopicsRequest) IsFlexible() bool { return true }

// IsAdminRequest marks the request for the controller.
func (*ResumeMirrorTopicsRequest) IsAdminRequest() {}

// Timeout returns TimeoutMillis.
func (v *ResumeMirrorTopicsRequest) Timeout() int32 { return v.TimeoutMillis }

// SetTimeout sets TimeoutMillis.
func (v *ResumeMirrorTopicsRequest) SetTimeout(timeoutMillis int32) { v.TimeoutMillis = timeoutMillis }

// ResponseKind returns an empty response of the request's version.
func (v *ResumeMirrorTopicsRequest) ResponseKind() kmsg.Response {
	return &ResumeMirrorTopicsResponse{Version: v.Version}
}

// RequestWith issues the request on r and returns the typed response.
func (v *ResumeMirrorTopicsRequest) RequestWith(ctx context.Context, r kmsg.Requestor) (*ResumeMirrorTopicsResponse, error) {
	return requestWith[*ResumeMirrorTopicsResponse](ctx, r, v)
}

// AppendTo appends the request body.
func (v *ResumeMirrorTopicsRequest) AppendTo(dst []byte) []byte {
	return (*MirrorTopicsRequest)(v).appendTo(dst)
}

// ReadFrom decodes a whole request body of v.Version, replacing v's fields.
func (v *ResumeMirrorTopicsRequest) ReadFrom(src []byte) error {
	return (*MirrorTopicsRequest)(v).readFrom(KeyResumeMirrorTopics, src)
}

// ResumeMirrorTopicsResponse answers ResumeMirrorTopicsRequest. Its fields are MirrorTopicsResponse's.
type ResumeMirrorTopicsResponse MirrorTopicsResponse

// Key returns 9009.
func (*ResumeMirrorTopicsResponse) Key() int16 { return KeyResumeMirrorTopics }

// MaxVersion returns 0.
func (*ResumeMirrorTopicsResponse) MaxVersion() int16 { return 0 }

// SetVersion sets the response version.
func (v *ResumeMirrorTopicsResponse) SetVersion(version int16) { v.Version = version }

// GetVersion returns the response version.
func (v *ResumeMirrorTopicsResponse) GetVersion() int16 { return v.Version }

// IsFlexible returns true.
func (*ResumeMirrorTopicsResponse) IsFlexible() bool { return true }

// Throttle returns ThrottleMillis; the throttle applies after the response.
func (v *ResumeMirrorTopicsResponse) Throttle() (int32, bool) { return v.ThrottleMillis, true }

// SetThrottle sets ThrottleMillis.
func (v *ResumeMirrorTopicsResponse) SetThrottle(throttleMillis int32) {
	v.ThrottleMillis = throttleMillis
}

// RequestKind returns an empty request of the response's version.
func (v *ResumeMirrorTopicsResponse) RequestKind() kmsg.Request {
	return &ResumeMirrorTopicsRequest{Version: v.Version}
}

// AppendTo appends the response body.
func (v *ResumeMirrorTopicsResponse) AppendTo(dst []byte) []byte {
	return (*MirrorTopicsResponse)(v).appendTo(dst)
}

// ReadFrom decodes a whole response body of v.Version, replacing v's fields.
func (v *ResumeMirrorTopicsResponse) ReadFrom(src []byte) error {
	return (*MirrorTopicsResponse)(v).readFrom(KeyResumeMirrorTopics, src)
}
