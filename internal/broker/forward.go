package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// Admin requests that change the metadata are the active controller's to
// decide: a broker forwards them unchanged (same request, same version) and
// returns the controller's answer. When no controller answers, every item
// of the request gets NOT_CONTROLLER (which clients retry) or, if the
// request's context ended, REQUEST_TIMED_OUT. The client's rights are
// checked before forwarding (forward_authz.go).

// createTopicsVisibleWait caps how long CreateTopics waits for the created
// topics to reach this broker's metadata image.
const createTopicsVisibleWait = 10 * time.Second

func (b *Broker) handleCreateTopics(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.CreateTopicsRequest)
	if !ok {
		return nil, requestTypeError("CreateTopics", kreq)
	}
	fwd, refused := authorizeCreateTopics(rc, req)
	resp, err := b.forwardRest(ctx, req, fwd, len(fwd.Topics) == 0 && len(refused) > 0)
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.CreateTopicsResponse)
	if !ok {
		return resp, nil
	}
	hideUndescribedConfigs(rc, r)
	r.Topics = append(r.Topics, refused...)
	if !req.ValidateOnly && req.TimeoutMillis > 0 {
		var created []string
		for _, t := range r.Topics {
			if t.ErrorCode == 0 {
				created = append(created, t.Topic)
			}
		}
		wait := min(time.Duration(req.TimeoutMillis)*time.Millisecond, createTopicsVisibleWait)
		b.waitForTopics(ctx, created, wait)
	}
	return r, nil
}

// waitForTopics waits until every named topic is in the image the replica
// manager applied (so that this broker serves it), or until wait passes.
func (b *Broker) waitForTopics(ctx context.Context, names []string, wait time.Duration) bool {
	if len(names) == 0 {
		return true
	}
	cond := func() bool {
		img := b.rm.Image()
		for _, n := range names {
			if _, ok := img.Topic(n); !ok {
				return false
			}
		}
		return true
	}
	return waitUntil(ctx, b.closing, time.Now().Add(wait), []*notifier{&b.rm.metaNotify}, cond) == waitDone
}

func (b *Broker) handleDeleteTopics(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.DeleteTopicsRequest)
	if !ok {
		return nil, requestTypeError("DeleteTopics", kreq)
	}
	fwd, refused := authorizeDeleteTopics(rc, b.image(), req)
	resp, err := b.forwardRest(ctx, req, fwd, len(fwd.Topics) == 0 && len(fwd.TopicNames) == 0 && len(refused) > 0)
	if r, ok := resp.(*kmsg.DeleteTopicsResponse); ok && err == nil {
		r.Topics = append(r.Topics, refused...)
	}
	return resp, err
}

func (b *Broker) handleCreatePartitions(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.CreatePartitionsRequest)
	if !ok {
		return nil, requestTypeError("CreatePartitions", kreq)
	}
	fwd, refused := authorizeCreatePartitions(rc, req)
	resp, err := b.forwardRest(ctx, req, fwd, len(fwd.Topics) == 0 && len(refused) > 0)
	if r, ok := resp.(*kmsg.CreatePartitionsResponse); ok && err == nil {
		r.Topics = append(r.Topics, refused...)
	}
	return resp, err
}

func (b *Broker) handleAlterConfigs(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.AlterConfigsRequest)
	if !ok {
		return nil, requestTypeError("AlterConfigs", kreq)
	}
	fwd, refused := authorizeAlterConfigs(rc, req)
	resp, err := b.forwardRest(ctx, req, fwd, len(fwd.Resources) == 0 && len(refused) > 0)
	if r, ok := resp.(*kmsg.AlterConfigsResponse); ok && err == nil {
		r.Resources = append(r.Resources, refused...)
	}
	return resp, err
}

func (b *Broker) handleIncrementalAlterConfigs(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.IncrementalAlterConfigsRequest)
	if !ok {
		return nil, requestTypeError("IncrementalAlterConfigs", kreq)
	}
	fwd, refused := authorizeIncrementalAlterConfigs(rc, req)
	resp, err := b.forwardRest(ctx, req, fwd, len(fwd.Resources) == 0 && len(refused) > 0)
	if r, ok := resp.(*kmsg.IncrementalAlterConfigsResponse); ok && err == nil {
		r.Resources = append(r.Resources, refused...)
	}
	return resp, err
}

// localMetadataWait caps how long a forwarded change waits for this
// broker's image to catch up with its metadata source.
const localMetadataWait = 5 * time.Second

// awaitLocalMetadata waits until the image this broker serves from has
// caught up with everything its metadata source has applied, so that a
// client that changed metadata through this broker reads its change back
// from it (the image reaches the broker on the publisher goroutine, a
// moment after the quorum applied it). It gives up after localMetadataWait
// or when ctx ends: the change is made either way.
func (b *Broker) awaitLocalMetadata(ctx context.Context) {
	target := b.deps.Metadata.Image().Offset()
	cond := func() bool { return b.rm.Image().Offset() >= target }
	waitUntil(ctx, b.closing, time.Now().Add(localMetadataWait), []*notifier{&b.rm.metaNotify}, cond)
}

// sendToController sends req to the active controller and returns its
// answer at the request's version, once this broker's image shows the
// change (awaitLocalMetadata). When no controller answered (or one answered
// another API), it logs why and returns the error code every item of the
// request gets: NOT_CONTROLLER, which clients retry, or REQUEST_TIMED_OUT
// once the request's context ended, with a message naming the cause.
func (b *Broker) sendToController(ctx context.Context, req kmsg.Request) (kmsg.Response, *kerr.Error, string) {
	defer wire.Waiting(ctx)() // the controller's work, not this broker's
	resp, err := b.deps.Controller.Send(ctx, req)
	if err == nil && resp != nil && resp.Key() == req.Key() {
		resp.SetVersion(req.GetVersion())
		b.awaitLocalMetadata(ctx)
		return resp, nil, ""
	}
	if err == nil {
		err = fmt.Errorf("controller answered %T to %T", resp, req)
	}
	b.log.Warn("forward to the controller", "api", wire.APIName(req.Key()), "error", err)
	code := kerr.NotController
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		code = kerr.RequestTimedOut
	}
	return nil, code, fmt.Sprintf("the request could not be forwarded to the active controller: %v", err)
}

// forward sends req to the active controller (sendToController) and
// returns its response, or an error response if none answered.
func (b *Broker) forward(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	resp, code, msg := b.sendToController(ctx, req)
	if code == nil {
		return resp, nil
	}
	return forwardErrorResponse(req, code.Code, &msg)
}

// forwardErrorResponse answers every item of a forwarded request with one
// error.
func forwardErrorResponse(req kmsg.Request, code int16, msg *string) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
		seen := map[string]bool{}
		for _, t := range r.Topics {
			if seen[t.Topic] {
				continue
			}
			seen[t.Topic] = true
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, code, msg
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.DeleteTopicsRequest:
		resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
		if r.Version >= 6 {
			for _, t := range r.Topics {
				rt := kmsg.NewDeleteTopicsResponseTopic()
				rt.Topic, rt.TopicID, rt.ErrorCode, rt.ErrorMessage = t.Topic, t.TopicID, code, msg
				resp.Topics = append(resp.Topics, rt)
			}
		} else {
			for _, n := range r.TopicNames {
				rt := kmsg.NewDeleteTopicsResponseTopic()
				name := n
				rt.Topic, rt.ErrorCode, rt.ErrorMessage = &name, code, msg
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return resp, nil
	case *kmsg.CreatePartitionsRequest:
		resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, code, msg
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.AlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
		for _, x := range r.Resources {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = x.ResourceType, x.ResourceName, code, msg
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, x := range r.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = x.ResourceType, x.ResourceName, code, msg
			resp.Resources = append(resp.Resources, rr)
		}
		return resp, nil
	case *kmsg.ElectLeadersRequest:
		return electLeadersError(r, code, msg), nil
	case *kmsg.DescribeQuorumRequest:
		resp := r.ResponseKind().(*kmsg.DescribeQuorumResponse)
		resp.ErrorCode = code
		if r.Version >= 2 {
			resp.ErrorMessage = msg
		}
		return resp, nil
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode, resp.ErrorMessage = code, msg
		return resp, nil
	}
	return nil, fmt.Errorf("broker: cannot forward API key %d", req.Key())
}
