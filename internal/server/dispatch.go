package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// panicError is a handler panic turned into an error: the connection that
// caused it is closed and the node carries on.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("handler panic: %v", p.value) }

// dispatch parses one request frame (without its size prefix) and runs the
// handler of its key. It returns the parsed header (as much as was read),
// the response to send (nil: send nothing), or an error after which the
// connection must be closed: every parse error except an unsupported
// ApiVersions version (answered with Kafka's v0 fallback body), a handler
// error, a response of the wrong key, or a handler panic (a *panicError).
//
// dispatch never panics, whatever frame holds; the fuzz target relies on it.
func (e *endpoint) dispatch(ctx context.Context, clientAddr net.Addr, frame []byte) (hdr wire.RequestHeader, resp wire.Response, err error) {
	return e.dispatchAs(ctx, clientAddr, wire.AnonymousPrincipal, frame)
}

// dispatchAs is dispatch for a request from principal. With an authorizer,
// an API whose only check is an operation on the cluster (see
// endpoint.clusterCheck) is refused here with CLUSTER_AUTHORIZATION_FAILED
// on every item of the response, before its handler runs.
func (e *endpoint) dispatchAs(ctx context.Context, clientAddr net.Addr, principal string, frame []byte) (hdr wire.RequestHeader, resp wire.Response, err error) {
	hdr, req, err := wire.ParseRequest(frame, e.reg)
	if err != nil {
		if hdr.APIKey == int16(kmsg.ApiVersions) && errors.Is(err, kerr.UnsupportedVersion) {
			return hdr, e.reg.UnsupportedApiVersionsResponse(), nil
		}
		return hdr, nil, err
	}
	if av, ok := req.(*kmsg.ApiVersionsRequest); ok {
		return hdr, e.apiVersions(av), nil
	}
	h := e.handlers[hdr.APIKey]
	if h == nil {
		// The registry serves only keys with handlers, so this is a bug,
		// reported like any other request that cannot be served.
		return hdr, nil, fmt.Errorf("%s: no handler: %w", wire.APIName(hdr.APIKey), wire.ErrUnknownAPIKey)
	}
	rc := &wire.RequestContext{
		Header:           hdr,
		Listener:         e.listener,
		SecurityProtocol: e.protocol,
		Principal:        principal,
		ClientAddr:       clientAddr,
		Authz:            e.authz,
	}
	if op, ok := e.clusterCheck(hdr.APIKey); ok && !rc.AuthorizeCluster(op) {
		return hdr, wire.ErrorResponse(req, kerr.ClusterAuthorizationFailed), nil
	}
	var meter *wire.WaitMeter
	if e.quota != nil {
		ctx, meter = wire.WithWaitMeter(ctx)
	}
	start := time.Now()
	resp, err = callHandler(ctx, h, rc, req)
	if err != nil {
		return hdr, nil, err
	}
	if meter != nil {
		e.chargeRequest(rc, req, resp, time.Since(start)-meter.Waited())
	}
	if resp == nil {
		return hdr, nil, nil
	}
	if resp.Key() != hdr.APIKey {
		if s, ok := resp.(*wire.StreamResponse); ok {
			s.Done()
		}
		return hdr, nil, fmt.Errorf("%s handler answered a %s response", wire.APIName(hdr.APIKey), wire.APIName(resp.Key()))
	}
	if s, ok := resp.(*wire.StreamResponse); ok && s.Version != hdr.APIVersion {
		s.Done()
		return hdr, nil, fmt.Errorf("%s v%d handler answered a v%d stream", wire.APIName(hdr.APIKey), hdr.APIVersion, s.Version)
	}
	if r, ok := resp.(kmsg.Response); ok && r.GetVersion() != hdr.APIVersion {
		// The body must be encoded at the request's version; handlers that
		// build a response from scratch may forget to set it.
		r.SetVersion(hdr.APIVersion)
	}
	return hdr, resp, nil
}

// callHandler runs h, turning a panic into a *panicError with its stack.
func callHandler(ctx context.Context, h wire.Handler, rc *wire.RequestContext, req kmsg.Request) (resp wire.Response, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, &panicError{value: p, stack: debug.Stack()}
		}
	}()
	return h(ctx, rc, req)
}
