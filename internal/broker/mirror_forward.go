package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// The mirror admin APIs on a broker. The writes (CreateMirror,
// AddTopicsToMirror, RemoveTopicsFromMirror, DeleteMirror,
// PauseMirrorTopics, ResumeMirrorTopics) are the active controller's to
// decide: the broker forwards them unchanged and returns the answer, once
// its own metadata shows the change (so that a client's next request to
// this broker, e.g. ListMirrors, sees it), or after the request's timeout.
// ListMirrors is answered from this broker's metadata image.
// DescribeMirrors (99) belongs to the mirror data plane, which knows the
// partition states.

// mirrorVisibleWait caps how long a forwarded mirror write waits for its
// effect to reach this broker's metadata.
const mirrorVisibleWait = 10 * time.Second

// mirrorAdminAPIs returns the mirror admin APIs the broker serves.
func (b *Broker) mirrorAdminAPIs() []wire.API {
	return []wire.API{
		{Key: wire.KeyCreateMirror, MinVersion: 0, MaxVersion: 0, Handle: b.handleMirrorWrite},
		{Key: wire.KeyAddTopicsToMirror, MinVersion: 0, MaxVersion: 0, Handle: b.handleMirrorWrite},
		{Key: wire.KeyRemoveTopicsFromMirror, MinVersion: 0, MaxVersion: 0, Handle: b.handleMirrorWrite},
		{Key: wire.KeyDeleteMirror, MinVersion: 0, MaxVersion: 0, Handle: b.handleMirrorWrite},
		{Key: wire.KeyListMirrors, MinVersion: 0, MaxVersion: 0, Handle: b.handleListMirrors},
		{Key: wire.KeyPauseMirrorTopics, MinVersion: 0, MaxVersion: 0, Handle: b.handleMirrorWrite},
		{Key: wire.KeyResumeMirrorTopics, MinVersion: 0, MaxVersion: 0, Handle: b.handleMirrorWrite},
	}
}

// handleMirrorWrite forwards a mirror admin write to the active controller.
func (b *Broker) handleMirrorWrite(ctx context.Context, _ *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
	visible, timeoutMillis, ok := mirrorWriteVisible(req)
	if !ok {
		return nil, requestTypeError("mirror admin", req)
	}
	resp, code, msg := b.sendToController(ctx, req)
	if code != nil {
		return mirrorForwardError(req, code.Code, &msg), nil
	}
	if cond := visible(resp); cond != nil && timeoutMillis > 0 {
		wait := min(time.Duration(timeoutMillis)*time.Millisecond, mirrorVisibleWait)
		waitUntil(ctx, b.closing, time.Now().Add(wait), []*notifier{&b.rm.metaNotify}, func() bool { return cond(b.rm.Image()) })
	}
	return resp, nil
}

// imageCond is a condition on this broker's metadata image.
type imageCond func(*metadata.Image) bool

// mirrorWriteVisible returns, for a mirror admin write, a function that
// gives the condition under which a successful answer is visible in the
// metadata (nil when nothing changed), and the request's timeout. ok is
// false for any other request.
func mirrorWriteVisible(req kmsg.Request) (visible func(kmsg.Response) imageCond, timeoutMillis int32, ok bool) {
	topics := func(r *wire.MirrorTopicsRequest, value func(mirror string) string) (func(kmsg.Response) imageCond, int32, bool) {
		return func(resp kmsg.Response) imageCond {
			res := mirrorTopicsResults(resp)
			if r.ValidateOnly || res == nil {
				return nil
			}
			want := map[string]string{}
			for _, t := range res.Topics {
				if t.ErrorCode == 0 {
					want[t.Name] = value(r.MirrorName)
				}
			}
			if len(want) == 0 {
				return nil
			}
			return func(img *metadata.Image) bool {
				for name, v := range want {
					if got, _ := img.Config(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: name}, config.MirrorNameConfig); got != v {
						return false
					}
				}
				return true
			}
		}, r.TimeoutMillis, true
	}
	same := func(m string) string { return m }
	switch r := req.(type) {
	case *wire.CreateMirrorRequest:
		return func(resp kmsg.Response) imageCond {
			if cr, _ := resp.(*wire.CreateMirrorResponse); cr == nil || cr.ErrorCode != 0 || r.ValidateOnly {
				return nil
			}
			return func(img *metadata.Image) bool { return hasMirror(img, r.MirrorName) }
		}, r.TimeoutMillis, true
	case *wire.DeleteMirrorRequest:
		return func(resp kmsg.Response) imageCond {
			if dr, _ := resp.(*wire.DeleteMirrorResponse); dr == nil || dr.ErrorCode != 0 {
				return nil
			}
			return func(img *metadata.Image) bool { return !hasMirror(img, r.MirrorName) }
		}, r.TimeoutMillis, true
	case *wire.AddTopicsToMirrorRequest:
		return topics((*wire.MirrorTopicsRequest)(r), same)
	case *wire.ResumeMirrorTopicsRequest:
		return topics((*wire.MirrorTopicsRequest)(r), same)
	case *wire.PauseMirrorTopicsRequest:
		return topics((*wire.MirrorTopicsRequest)(r), func(m string) string { return m + wire.PausedSuffix })
	case *wire.RemoveTopicsFromMirrorRequest:
		return topics((*wire.MirrorTopicsRequest)(r), func(m string) string { return m + wire.RemovedSuffix })
	}
	return nil, 0, false
}

// mirrorTopicsResults returns the shared body of the four MirrorTopics
// response kinds, or nil for another response.
func mirrorTopicsResults(resp kmsg.Response) *wire.MirrorTopicsResponse {
	switch r := resp.(type) {
	case *wire.AddTopicsToMirrorResponse:
		return (*wire.MirrorTopicsResponse)(r)
	case *wire.RemoveTopicsFromMirrorResponse:
		return (*wire.MirrorTopicsResponse)(r)
	case *wire.PauseMirrorTopicsResponse:
		return (*wire.MirrorTopicsResponse)(r)
	case *wire.ResumeMirrorTopicsResponse:
		return (*wire.MirrorTopicsResponse)(r)
	}
	return nil
}

// hasMirror reports whether img has a mirror of that name.
func hasMirror(img *metadata.Image, name string) bool {
	return len(img.Configs(metadata.ConfigResource{Type: metadata.ResourceMirror, Name: name})) > 0
}

// mirrorForwardError answers a mirror admin write that no controller
// answered: the request-level error, repeated for every distinct topic of
// the topic kinds.
func mirrorForwardError(req kmsg.Request, code int16, msg *string) kmsg.Response {
	topics := func(r *wire.MirrorTopicsRequest) *wire.MirrorTopicsResponse {
		resp := &wire.MirrorTopicsResponse{Version: r.Version, ErrorCode: code, ErrorMessage: msg}
		seen := map[string]bool{}
		for _, t := range r.Topics {
			if !seen[t.Name] {
				seen[t.Name] = true
				resp.Topics = append(resp.Topics, wire.MirrorTopicsResponseTopic{Name: t.Name, ErrorCode: code, ErrorMessage: msg})
			}
		}
		return resp
	}
	switch r := req.(type) {
	case *wire.CreateMirrorRequest:
		return &wire.CreateMirrorResponse{Version: r.Version, ErrorCode: code, ErrorMessage: msg}
	case *wire.DeleteMirrorRequest:
		return &wire.DeleteMirrorResponse{Version: r.Version, ErrorCode: code, ErrorMessage: msg}
	case *wire.AddTopicsToMirrorRequest:
		return (*wire.AddTopicsToMirrorResponse)(topics((*wire.MirrorTopicsRequest)(r)))
	case *wire.RemoveTopicsFromMirrorRequest:
		return (*wire.RemoveTopicsFromMirrorResponse)(topics((*wire.MirrorTopicsRequest)(r)))
	case *wire.PauseMirrorTopicsRequest:
		return (*wire.PauseMirrorTopicsResponse)(topics((*wire.MirrorTopicsRequest)(r)))
	case *wire.ResumeMirrorTopicsRequest:
		return (*wire.ResumeMirrorTopicsResponse)(topics((*wire.MirrorTopicsRequest)(r)))
	}
	return nil
}

// handleListMirrors answers ListMirrors from this broker's image: every
// mirror, sorted by name, with its bootstrap.servers and the number of
// topics whose mirror.name refers to it (paused and removed included).
func (b *Broker) handleListMirrors(_ context.Context, _ *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*wire.ListMirrorsRequest)
	if !ok {
		return nil, requestTypeError("ListMirrors", kreq)
	}
	return listMirrors(b.image(), req.Version), nil
}

// listMirrors builds a ListMirrors response from img.
func listMirrors(img *metadata.Image, version int16) *wire.ListMirrorsResponse {
	resp := &wire.ListMirrorsResponse{Version: version}
	for _, name := range img.Mirrors() {
		bootstrap, _ := img.Config(metadata.ConfigResource{Type: metadata.ResourceMirror, Name: name}, "bootstrap.servers")
		n := 0
		for _, m := range []wire.MirrorMembership{wire.MembershipMirroring, wire.MembershipPaused, wire.MembershipRemoved, wire.MembershipStopped} {
			n += len(img.MirrorTopics(wire.MirrorNameValue(name, m)))
		}
		resp.Mirrors = append(resp.Mirrors, wire.ListMirrorsResponseMirror{Name: name, SourceBootstrapServers: bootstrap, TopicCount: int32(n)})
	}
	return resp
}
