package controller

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// servedAPI is one API key the controller serves and its version range.
type servedAPI struct {
	key, min, max int16
}

// servedAPIs are the controller listener's APIs (besides ApiVersions, which
// the server answers).
var servedAPIs = []servedAPI{
	{key: 19, min: 0, max: 7}, // CreateTopics
	{key: 20, min: 0, max: 6}, // DeleteTopics
	{key: 33, min: 0, max: 2}, // AlterConfigs
	{key: 37, min: 0, max: 3}, // CreatePartitions
	{key: 43, min: 0, max: 2}, // ElectLeaders
	{key: 44, min: 0, max: 1}, // IncrementalAlterConfigs
	{key: 45, min: 0, max: 1}, // AlterPartitionReassignments
	{key: 55, min: 0, max: 2}, // DescribeQuorum
	{key: 56, min: 0, max: 3}, // AlterPartition
	{key: 62, min: 0, max: 4}, // BrokerRegistration
	{key: 63, min: 0, max: 1}, // BrokerHeartbeat
	{key: 67, min: 0, max: 0}, // AllocateProducerIds
	// The mirror admin APIs (mirror_api.go). ListMirrors (98) and
	// DescribeMirrors (99) are answered by brokers.
	{key: wire.KeyCreateMirror, min: 0, max: 0},
	{key: wire.KeyAddTopicsToMirror, min: 0, max: 0},
	{key: wire.KeyRemoveTopicsFromMirror, min: 0, max: 0},
	{key: wire.KeyDeleteMirror, min: 0, max: 0},
	{key: wire.KeyPauseMirrorTopics, min: 0, max: 0},
	{key: wire.KeyResumeMirrorTopics, min: 0, max: 0},
	// The ACL and SCRAM APIs (acls.go, scram.go). DescribeAcls (29) and
	// DescribeUserScramCredentials (50) are answered by brokers.
	{key: 30, min: 0, max: 3}, // CreateAcls
	{key: 31, min: 0, max: 3}, // DeleteAcls
	{key: 49, min: 0, max: 1}, // AlterClientQuotas
	{key: 51, min: 0, max: 0}, // AlterUserScramCredentials
}

// supported reports whether the controller serves key at version.
func supported(key, version int16) bool {
	i := slices.IndexFunc(servedAPIs, func(a servedAPI) bool { return a.key == key })
	return i >= 0 && version >= servedAPIs[i].min && version <= servedAPIs[i].max
}

// errorResponse answers every item of req with err (NOT_CONTROLLER from a
// controller that is not active, for example).
func errorResponse(req kmsg.Request, err error) (kmsg.Response, error) {
	code, msg := codeOf(err), messageOf(err)
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
		resp.Version = r.Version
		seen := map[string]bool{}
		for _, t := range r.Topics {
			if seen[t.Topic] {
				continue
			}
			seen[t.Topic] = true
			res := kmsg.NewCreateTopicsResponseTopic()
			res.Topic, res.ErrorCode, res.ErrorMessage = t.Topic, code, msg
			resp.Topics = append(resp.Topics, res)
		}
		return resp, nil
	case *kmsg.DeleteTopicsRequest:
		resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
		resp.Version = r.Version
		if r.Version >= 6 {
			for _, t := range r.Topics {
				res := kmsg.NewDeleteTopicsResponseTopic()
				res.Topic, res.TopicID, res.ErrorCode, res.ErrorMessage = t.Topic, t.TopicID, code, msg
				resp.Topics = append(resp.Topics, res)
			}
		} else {
			for _, n := range r.TopicNames {
				res := kmsg.NewDeleteTopicsResponseTopic()
				res.Topic, res.ErrorCode, res.ErrorMessage = &n, code, msg
				resp.Topics = append(resp.Topics, res)
			}
		}
		return resp, nil
	case *kmsg.CreatePartitionsRequest:
		resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
		resp.Version = r.Version
		for _, t := range r.Topics {
			res := kmsg.NewCreatePartitionsResponseTopic()
			res.Topic, res.ErrorCode, res.ErrorMessage = t.Topic, code, msg
			resp.Topics = append(resp.Topics, res)
		}
		return resp, nil
	case *kmsg.AlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
		resp.Version = r.Version
		for _, x := range r.Resources {
			res := kmsg.NewAlterConfigsResponseResource()
			res.ResourceType, res.ResourceName, res.ErrorCode, res.ErrorMessage = x.ResourceType, x.ResourceName, code, msg
			resp.Resources = append(resp.Resources, res)
		}
		return resp, nil
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		resp.Version = r.Version
		for _, x := range r.Resources {
			res := kmsg.NewIncrementalAlterConfigsResponseResource()
			res.ResourceType, res.ResourceName, res.ErrorCode, res.ErrorMessage = x.ResourceType, x.ResourceName, code, msg
			resp.Resources = append(resp.Resources, res)
		}
		return resp, nil
	case *kmsg.AllocateProducerIDsRequest:
		resp := r.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
		resp.Version, resp.ErrorCode = r.Version, code
		return resp, nil
	case *kmsg.DescribeQuorumRequest:
		resp := r.ResponseKind().(*kmsg.DescribeQuorumResponse)
		resp.Version, resp.ErrorCode = r.Version, code
		if r.Version >= 2 {
			resp.ErrorMessage = msg
		}
		return resp, nil
	case *kmsg.BrokerRegistrationRequest:
		resp := r.ResponseKind().(*kmsg.BrokerRegistrationResponse)
		resp.Version, resp.ErrorCode, resp.BrokerEpoch = r.Version, code, -1
		return resp, nil
	case *kmsg.BrokerHeartbeatRequest:
		resp := r.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		resp.Version, resp.ErrorCode, resp.IsFenced = r.Version, code, true
		return resp, nil
	case *kmsg.AlterPartitionRequest:
		resp := r.ResponseKind().(*kmsg.AlterPartitionResponse)
		resp.Version, resp.ErrorCode = r.Version, code
		return resp, nil
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.Version, resp.ErrorCode, resp.ErrorMessage = r.Version, code, msg
		return resp, nil
	case *kmsg.ElectLeadersRequest:
		resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
		resp.Version = r.Version
		if r.Version >= 1 {
			resp.ErrorCode = code
		}
		for _, t := range r.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.ErrorMessage = p, code, msg
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	if resp, ok := mirrorErrorResponse(req, err); ok {
		return resp, nil
	}
	if resp, ok := securityErrorResponse(req, err); ok {
		return resp, nil
	}
	return nil, fmt.Errorf("controller does not serve API key %d: %w", req.Key(), kerr.UnsupportedVersion)
}

// hasNotController reports whether a controller answered any item of resp
// with NOT_CONTROLLER, meaning the request (or part of it) should be sent
// again to the active controller.
func hasNotController(resp kmsg.Response) bool {
	nc := kerr.NotController.Code
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		return slices.ContainsFunc(r.Topics, func(t kmsg.CreateTopicsResponseTopic) bool { return t.ErrorCode == nc })
	case *kmsg.DeleteTopicsResponse:
		return slices.ContainsFunc(r.Topics, func(t kmsg.DeleteTopicsResponseTopic) bool { return t.ErrorCode == nc })
	case *kmsg.CreatePartitionsResponse:
		return slices.ContainsFunc(r.Topics, func(t kmsg.CreatePartitionsResponseTopic) bool { return t.ErrorCode == nc })
	case *kmsg.AlterConfigsResponse:
		return slices.ContainsFunc(r.Resources, func(x kmsg.AlterConfigsResponseResource) bool { return x.ErrorCode == nc })
	case *kmsg.IncrementalAlterConfigsResponse:
		return slices.ContainsFunc(r.Resources, func(x kmsg.IncrementalAlterConfigsResponseResource) bool { return x.ErrorCode == nc })
	case *kmsg.AllocateProducerIDsResponse:
		return r.ErrorCode == nc
	case *kmsg.DescribeQuorumResponse:
		return r.ErrorCode == nc
	case *kmsg.BrokerRegistrationResponse:
		return r.ErrorCode == nc
	case *kmsg.BrokerHeartbeatResponse:
		return r.ErrorCode == nc
	case *kmsg.AlterPartitionResponse:
		if r.ErrorCode == nc {
			return true
		}
		for _, t := range r.Topics {
			if slices.ContainsFunc(t.Partitions, func(p kmsg.AlterPartitionResponseTopicPartition) bool { return p.ErrorCode == nc }) {
				return true
			}
		}
		return false
	case *kmsg.AlterPartitionAssignmentsResponse:
		if r.ErrorCode == nc {
			return true
		}
		for _, t := range r.Topics {
			if slices.ContainsFunc(t.Partitions, func(p kmsg.AlterPartitionAssignmentsResponseTopicPartition) bool { return p.ErrorCode == nc }) {
				return true
			}
		}
		return false
	case *kmsg.ElectLeadersResponse:
		if r.ErrorCode == nc {
			return true
		}
		for _, t := range r.Topics {
			if slices.ContainsFunc(t.Partitions, func(p kmsg.ElectLeadersResponseTopicPartition) bool { return p.ErrorCode == nc }) {
				return true
			}
		}
		return false
	}
	return mirrorHasNotController(resp) || securityHasNotController(resp)
}

// hasInternalTag reports whether req carries the internal-topic tag.
func hasInternalTag(req *kmsg.CreateTopicsRequest) bool {
	_, ok := tagValue(req, internalTopicTag)
	return ok
}
