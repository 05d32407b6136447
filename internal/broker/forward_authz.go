package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// The forwarded admin requests (CreateTopics, DeleteTopics,
// CreatePartitions, AlterConfigs, IncrementalAlterConfigs) are authorized
// here, by the broker that knows the client's principal: the controller
// sees only the broker's own principal (kmirror sends no Envelope). The
// items the principal may not touch are answered by the broker and left
// out of the request it forwards; a request left with nothing to forward
// is not forwarded at all.

// authzFailedMessage is the message of an admin item refused for want of
// rights, as Kafka's controller words it.
var authzFailedMessage = "Authorization failed."

// forwardRest forwards fwd, what is left of req after authorization, or
// answers req's empty response when the authorization refused everything
// (the answers of the refused items are added to it). A request that was
// empty to begin with is forwarded, for the controller to answer.
func (b *Broker) forwardRest(ctx context.Context, req, fwd kmsg.Request, refusedAll bool) (kmsg.Response, error) {
	if refusedAll {
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		return resp, nil
	}
	return b.forward(ctx, fwd)
}

// authorizeCreateTopics splits a CreateTopics into the topics the principal
// may create (CREATE on the cluster, else on each topic) and the answers of
// the others (TOPIC_AUTHORIZATION_FAILED). A name listed twice is forwarded
// whatever the rights, for the controller to refuse the duplicate with
// INVALID_REQUEST (it creates neither), as Kafka checks duplicates first.
func authorizeCreateTopics(rc *wire.RequestContext, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsRequest, []kmsg.CreateTopicsResponseTopic) {
	if !authorizing(rc) {
		return req, nil
	}
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	create := newCreateAuthz(rc)
	fwd := *req
	fwd.Topics = nil
	var refused []kmsg.CreateTopicsResponseTopic
	for _, t := range req.Topics {
		if count[t.Topic] > 1 || create.allowed(t.Topic) {
			fwd.Topics = append(fwd.Topics, t)
			continue
		}
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, kerr.TopicAuthorizationFailed.Code, &authzFailedMessage
		refused = append(refused, rt)
	}
	return &fwd, refused
}

// hideUndescribedConfigs removes what a CreateTopics answer (v5+) tells of
// each created topic the principal may not DESCRIBE_CONFIGS — its configs,
// partition count and replication factor (-1) — and says so in
// ConfigErrorCode (TopicConfigErrorCode in Kafka's schema), as Kafka's
// controller answers such a topic.
func hideUndescribedConfigs(rc *wire.RequestContext, resp *kmsg.CreateTopicsResponse) {
	if !authorizing(rc) || resp.Version < 5 {
		return
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.ErrorCode != 0 {
			continue
		}
		if !rc.Authorize(kmsg.ACLOperationDescribeConfigs, kmsg.ACLResourceTypeTopic, t.Topic) {
			t.Configs = nil
			t.NumPartitions, t.ReplicationFactor = -1, -1
			t.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
		}
	}
}

// authorizeDeleteTopics splits a DeleteTopics into the topics the principal
// may delete and the answers of the others. A topic named needs DELETE; a
// topic given by id (v6+) DESCRIBE first, without which its name is not
// answered back, then DELETE. Ids this broker does not know are forwarded
// for the controller to answer UNKNOWN_TOPIC_ID, and so are names and ids
// listed twice and items naming both, which the controller refuses as
// invalid.
func authorizeDeleteTopics(rc *wire.RequestContext, img *metadata.Image, req *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsRequest, []kmsg.DeleteTopicsResponseTopic) {
	if !authorizing(rc) {
		return req, nil
	}
	del := newTopicAuthz(rc, kmsg.ACLOperationDelete)
	describe := newTopicAuthz(rc, kmsg.ACLOperationDescribe)
	refuse := func(name *string, id [16]byte) kmsg.DeleteTopicsResponseTopic {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode, rt.ErrorMessage = name, id, kerr.TopicAuthorizationFailed.Code, &authzFailedMessage
		return rt
	}
	fwd := *req
	var refused []kmsg.DeleteTopicsResponseTopic
	if req.Version < 6 {
		count := map[string]int{}
		for _, n := range req.TopicNames {
			count[n]++
		}
		fwd.TopicNames = nil
		for _, n := range req.TopicNames {
			if count[n] > 1 || del.allowed(n) {
				fwd.TopicNames = append(fwd.TopicNames, n)
				continue
			}
			name := n
			refused = append(refused, refuse(&name, [16]byte{}))
		}
		return &fwd, refused
	}
	names, ids := map[string]int{}, map[[16]byte]int{}
	for _, t := range req.Topics {
		if t.Topic != nil {
			names[*t.Topic]++
		} else {
			ids[t.TopicID]++
		}
	}
	fwd.Topics = nil
	for _, t := range req.Topics {
		switch {
		case t.Topic != nil && t.TopicID != [16]byte{}:
			// Both: INVALID_REQUEST from the controller.
		case t.Topic != nil:
			if names[*t.Topic] == 1 && !del.allowed(*t.Topic) {
				refused = append(refused, refuse(t.Topic, t.TopicID))
				continue
			}
		case ids[t.TopicID] == 1:
			ti, ok := img.TopicByID(metadata.Uuid(t.TopicID))
			if !ok {
				break
			}
			if !describe.allowed(ti.Name) {
				refused = append(refused, refuse(nil, t.TopicID))
				continue
			}
			if !del.allowed(ti.Name) {
				name := ti.Name
				refused = append(refused, refuse(&name, t.TopicID))
				continue
			}
		}
		fwd.Topics = append(fwd.Topics, t)
	}
	return &fwd, refused
}

// authorizeCreatePartitions splits a CreatePartitions into the topics the
// principal may ALTER and the answers of the others. A name listed twice is
// forwarded, for the controller to refuse the duplicate (INVALID_REQUEST).
func authorizeCreatePartitions(rc *wire.RequestContext, req *kmsg.CreatePartitionsRequest) (*kmsg.CreatePartitionsRequest, []kmsg.CreatePartitionsResponseTopic) {
	if !authorizing(rc) {
		return req, nil
	}
	count := map[string]int{}
	for _, t := range req.Topics {
		count[t.Topic]++
	}
	alter := newTopicAuthz(rc, kmsg.ACLOperationAlter)
	fwd := *req
	fwd.Topics = nil
	var refused []kmsg.CreatePartitionsResponseTopic
	for _, t := range req.Topics {
		if count[t.Topic] > 1 || alter.allowed(t.Topic) {
			fwd.Topics = append(fwd.Topics, t)
			continue
		}
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, kerr.TopicAuthorizationFailed.Code, &authzFailedMessage
		refused = append(refused, rt)
	}
	return &fwd, refused
}

// authorizeAlterConfigs splits an AlterConfigs into the resources the
// principal may ALTER_CONFIGS (see authorizeConfigResource) and the
// answers of the others.
func authorizeAlterConfigs(rc *wire.RequestContext, req *kmsg.AlterConfigsRequest) (*kmsg.AlterConfigsRequest, []kmsg.AlterConfigsResponseResource) {
	if !authorizing(rc) {
		return req, nil
	}
	fwd := *req
	fwd.Resources = nil
	var refused []kmsg.AlterConfigsResponseResource
	for _, r := range req.Resources {
		if err := authorizeConfigResource(rc, r.ResourceType, r.ResourceName, kmsg.ACLOperationAlterConfigs); err != nil {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = r.ResourceType, r.ResourceName, err.Code
			refused = append(refused, rr)
			continue
		}
		fwd.Resources = append(fwd.Resources, r)
	}
	return &fwd, refused
}

// authorizeIncrementalAlterConfigs is authorizeAlterConfigs for
// IncrementalAlterConfigs.
func authorizeIncrementalAlterConfigs(rc *wire.RequestContext, req *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsRequest, []kmsg.IncrementalAlterConfigsResponseResource) {
	if !authorizing(rc) {
		return req, nil
	}
	fwd := *req
	fwd.Resources = nil
	var refused []kmsg.IncrementalAlterConfigsResponseResource
	for _, r := range req.Resources {
		if err := authorizeConfigResource(rc, r.ResourceType, r.ResourceName, kmsg.ACLOperationAlterConfigs); err != nil {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = r.ResourceType, r.ResourceName, err.Code
			refused = append(refused, rr)
			continue
		}
		fwd.Resources = append(fwd.Resources, r)
	}
	return &fwd, refused
}
