package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// serveMirror dispatches a mirror admin request; ok is false for any other
// request. The drivers answer every failure inside the response.
func (c *Controller) serveMirror(ctx context.Context, req kmsg.Request) (kmsg.Response, bool) {
	switch r := req.(type) {
	case *wire.CreateMirrorRequest:
		return c.createMirror(r), true
	case *wire.AddTopicsToMirrorRequest:
		return (*wire.AddTopicsToMirrorResponse)(c.addTopicsToMirror(ctx, (*wire.MirrorTopicsRequest)(r))), true
	case *wire.RemoveTopicsFromMirrorRequest:
		return (*wire.RemoveTopicsFromMirrorResponse)(c.changeMirrorTopics(opRemove, (*wire.MirrorTopicsRequest)(r))), true
	case *wire.PauseMirrorTopicsRequest:
		return (*wire.PauseMirrorTopicsResponse)(c.changeMirrorTopics(opPause, (*wire.MirrorTopicsRequest)(r))), true
	case *wire.ResumeMirrorTopicsRequest:
		return (*wire.ResumeMirrorTopicsResponse)(c.changeMirrorTopics(opResume, (*wire.MirrorTopicsRequest)(r))), true
	case *wire.DeleteMirrorRequest:
		return c.deleteMirror(ctx, r), true
	}
	return nil, false
}

// mirrorTopicsFailure answers a MirrorTopicsRequest with one mirror-level
// error, repeated for every distinct requested topic so that a client that
// reads only per-topic results sees it too.
func mirrorTopicsFailure(req *wire.MirrorTopicsRequest, err error) *wire.MirrorTopicsResponse {
	resp := &wire.MirrorTopicsResponse{Version: req.Version, ErrorCode: codeOf(err), ErrorMessage: messageOf(err)}
	seen := map[string]bool{}
	for _, t := range req.Topics {
		if seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		resp.Topics = append(resp.Topics, wire.MirrorTopicsResponseTopic{Name: t.Name, ErrorCode: resp.ErrorCode, ErrorMessage: resp.ErrorMessage})
	}
	return resp
}

// mirrorErrorResponse is errorResponse for the mirror admin requests.
func mirrorErrorResponse(req kmsg.Request, err error) (kmsg.Response, bool) {
	code, msg := codeOf(err), messageOf(err)
	switch r := req.(type) {
	case *wire.CreateMirrorRequest:
		return &wire.CreateMirrorResponse{Version: r.Version, ErrorCode: code, ErrorMessage: msg}, true
	case *wire.DeleteMirrorRequest:
		return &wire.DeleteMirrorResponse{Version: r.Version, ErrorCode: code, ErrorMessage: msg}, true
	case *wire.AddTopicsToMirrorRequest:
		return (*wire.AddTopicsToMirrorResponse)(mirrorTopicsFailure((*wire.MirrorTopicsRequest)(r), err)), true
	case *wire.RemoveTopicsFromMirrorRequest:
		return (*wire.RemoveTopicsFromMirrorResponse)(mirrorTopicsFailure((*wire.MirrorTopicsRequest)(r), err)), true
	case *wire.PauseMirrorTopicsRequest:
		return (*wire.PauseMirrorTopicsResponse)(mirrorTopicsFailure((*wire.MirrorTopicsRequest)(r), err)), true
	case *wire.ResumeMirrorTopicsRequest:
		return (*wire.ResumeMirrorTopicsResponse)(mirrorTopicsFailure((*wire.MirrorTopicsRequest)(r), err)), true
	}
	return nil, false
}

// mirrorHasNotController is hasNotController for the mirror admin responses.
func mirrorHasNotController(resp kmsg.Response) bool {
	nc := kerr.NotController.Code
	topics := func(r *wire.MirrorTopicsResponse) bool {
		return r.ErrorCode == nc || slices.ContainsFunc(r.Topics, func(t wire.MirrorTopicsResponseTopic) bool { return t.ErrorCode == nc })
	}
	switch r := resp.(type) {
	case *wire.CreateMirrorResponse:
		return r.ErrorCode == nc
	case *wire.DeleteMirrorResponse:
		return r.ErrorCode == nc
	case *wire.AddTopicsToMirrorResponse:
		return topics((*wire.MirrorTopicsResponse)(r))
	case *wire.RemoveTopicsFromMirrorResponse:
		return topics((*wire.MirrorTopicsResponse)(r))
	case *wire.PauseMirrorTopicsResponse:
		return topics((*wire.MirrorTopicsResponse)(r))
	case *wire.ResumeMirrorTopicsResponse:
		return topics((*wire.MirrorTopicsResponse)(r))
	}
	return false
}
