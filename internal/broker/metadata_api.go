package broker

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// The bit sets of the operations Kafka defines for each resource type: the
// authorized operations of every resource when no authorizer is configured.
var (
	topicOperations = opsBits(metadata.ACLOperationRead, metadata.ACLOperationWrite, metadata.ACLOperationCreate,
		metadata.ACLOperationDelete, metadata.ACLOperationAlter, metadata.ACLOperationDescribe,
		metadata.ACLOperationDescribeConfigs, metadata.ACLOperationAlterConfigs)
	clusterOperations = opsBits(metadata.ACLOperationCreate, metadata.ACLOperationClusterAction,
		metadata.ACLOperationDescribeConfigs, metadata.ACLOperationAlterConfigs, metadata.ACLOperationIdempotentWrite,
		metadata.ACLOperationAlter, metadata.ACLOperationDescribe)
)

func opsBits(ops ...int8) int32 {
	var b int32
	for _, o := range ops {
		b |= 1 << o
	}
	return b
}

// autoCreateTimeout bounds an auto-creation request to the controller.
const autoCreateTimeout = 30 * time.Second

// handleMetadata serves Metadata v0–v12 from the image: the unfenced
// brokers that have an endpoint on the listener the request came in on, the
// cluster and controller ids, and the requested topics (all of them for a
// null list, or an empty one at v0) with ids, leader epochs, replicas, ISR
// and offline replicas. A missing topic is created through the controller
// when auto.create.topics.enable and the request allow it, and answered
// LEADER_NOT_AVAILABLE until it exists.
//
// As in Kafka, a topic is shown only with DESCRIBE on it: a listing of all
// topics leaves the others out, a named topic without it is answered
// TOPIC_AUTHORIZATION_FAILED (by id: the id without the name), and a
// missing topic that would be auto-created (the broker and the request
// allow it) needs CREATE on the cluster or on the topic, else it is
// answered TOPIC_AUTHORIZATION_FAILED rather than created.
func (b *Broker) handleMetadata(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.MetadataRequest)
	if !ok {
		return nil, requestTypeError("Metadata", kreq)
	}
	v := req.Version
	img := b.image()
	listener := listenerOf(rc)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	for _, reg := range img.Brokers() {
		if reg.Fenced {
			continue
		}
		if ep, ok := reg.Endpoint(listener); ok {
			mb := kmsg.NewMetadataResponseBroker()
			mb.NodeID, mb.Host, mb.Port, mb.Rack = reg.ID, ep.Host, int32(ep.Port), rackOf(reg)
			resp.Brokers = append(resp.Brokers, mb)
		}
	}
	cid := b.deps.ClusterID
	resp.ClusterID = &cid
	resp.ControllerID = b.controllerID(img, listener)
	if v >= 8 && v <= 10 && req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = clusterAuthorizedOperations(rc)
	}
	var topicOps func(string) int32
	if v >= 8 && req.IncludeTopicAuthorizedOperations {
		topicOps = topicAuthorizedOperations(rc)
	}

	describe := newTopicAuthz(rc, kmsg.ACLOperationDescribe)
	if req.Topics == nil || (v == 0 && len(req.Topics) == 0) {
		for _, t := range img.Topics() {
			if !describe.allowed(t.Name) {
				continue
			}
			resp.Topics = append(resp.Topics, topicMetadata(img, t, v, listener, topicOps))
		}
		return resp, nil
	}
	cfg := b.rm.Config()
	allowAuto := cfg.AutoCreateTopicsEnable && (v < 4 || req.AllowAutoTopicCreation)
	create := newCreateAuthz(rc)
	for _, rt := range req.Topics {
		if rt.Topic == nil {
			mt := kmsg.NewMetadataResponseTopic()
			mt.TopicID = rt.TopicID
			if t, ok := img.TopicByID(rt.TopicID); ok && v >= 10 {
				if !describe.allowed(t.Name) {
					// Topic ids are not secret: the id is answered back,
					// never the name.
					mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
					resp.Topics = append(resp.Topics, mt)
					continue
				}
				resp.Topics = append(resp.Topics, topicMetadata(img, t, v, listener, topicOps))
				continue
			}
			mt.ErrorCode = kerr.UnknownTopicID.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		name := *rt.Topic
		if !describe.allowed(name) {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = rt.Topic
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		if t, ok := img.Topic(name); ok {
			resp.Topics = append(resp.Topics, topicMetadata(img, t, v, listener, topicOps))
			continue
		}
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = rt.Topic
		mt.IsInternal = isInternalTopic(name)
		switch {
		case allowAuto && !create.allowed(name):
			mt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			mt.IsInternal = false
		case !allowAuto || isInternalTopic(name):
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case validateTopicName(name) != nil:
			mt.ErrorCode = kerr.InvalidTopicException.Code
		default:
			b.autoCreateTopic(name)
			mt.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return resp, nil
}

// listenerOf returns the listener a request came in on.
func listenerOf(rc *wire.RequestContext) string {
	if rc == nil {
		return ""
	}
	return rc.Listener
}

// topicMetadata describes one topic as Kafka's KRaft metadata cache does:
// partitions whose leader has no endpoint on the listener are
// LEADER_NOT_AVAILABLE (LISTENER_NOT_FOUND from v6 when the leader is
// registered without that listener); replicas on brokers that are gone,
// fenced or without the listener are offline. At v0 replicas and ISR list
// only available brokers, and a partition missing some is
// REPLICA_NOT_AVAILABLE.
func topicMetadata(img *metadata.Image, t *metadata.TopicImage, v int16, listener string, ops func(topic string) int32) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	name := t.Name
	mt.Topic = &name
	mt.TopicID = t.ID
	mt.IsInternal = isInternalTopic(name)
	if ops != nil {
		mt.AuthorizedOperations = ops(name)
	}
	available := func(id int32) bool {
		reg, ok := img.Broker(id)
		if !ok || reg.Fenced {
			return false
		}
		_, ok = reg.Endpoint(listener)
		return ok
	}
	for _, pid := range t.PartitionIDs() {
		ps := t.Partitions[pid]
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = pid
		mp.LeaderEpoch = ps.LeaderEpoch
		mp.Replicas = slices.Clone(ps.Replicas)
		mp.ISR = slices.Clone(ps.ISR)
		if mp.Replicas == nil {
			mp.Replicas = []int32{}
		}
		if mp.ISR == nil {
			mp.ISR = []int32{}
		}
		mp.OfflineReplicas = []int32{}
		for _, r := range ps.Replicas {
			if !available(r) {
				mp.OfflineReplicas = append(mp.OfflineReplicas, r)
			}
		}
		if v == 0 {
			mp.Replicas = slices.DeleteFunc(mp.Replicas, func(r int32) bool { return !available(r) })
			mp.ISR = slices.DeleteFunc(mp.ISR, func(r int32) bool { return !available(r) })
			if len(mp.Replicas) < len(ps.Replicas) || len(mp.ISR) < len(ps.ISR) {
				mp.ErrorCode = kerr.ReplicaNotAvailable.Code
			}
		}
		reg, registered := img.Broker(ps.Leader)
		_, hasEndpoint := reg.Endpoint(listener)
		switch {
		case ps.Leader == metadata.NoLeader || !registered:
			mp.Leader = -1
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		case !hasEndpoint:
			mp.Leader = -1
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
			if v >= 6 {
				mp.ErrorCode = kerr.ListenerNotFound.Code
			}
		default:
			mp.Leader = ps.Leader
		}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// controllerID is the controller id a client is told: the active
// controller if it is also a live broker reachable on the listener (KRaft
// clients cannot reach a controller-only node), else the live broker with
// the lowest id, which forwards controller requests.
func (b *Broker) controllerID(img *metadata.Image, listener string) int32 {
	live := func(id int32) bool {
		reg, ok := img.Broker(id)
		if !ok || reg.Fenced {
			return false
		}
		_, ok = reg.Endpoint(listener)
		return ok
	}
	if ql, ok := b.deps.Metadata.(quorumLeader); ok {
		if id, _, ok := ql.Leader(); ok && live(id) {
			return id
		}
	}
	for _, reg := range img.Brokers() {
		if live(reg.ID) {
			return reg.ID
		}
	}
	return -1
}

// autoCreateTopic asks the controller, in the background, to create a
// topic with the broker's num.partitions and default.replication.factor;
// one request per topic at a time.
func (b *Broker) autoCreateTopic(name string) {
	b.autoMu.Lock()
	if b.autoInflight[name] {
		b.autoMu.Unlock()
		return
	}
	b.autoInflight[name] = true
	b.autoMu.Unlock()
	done := func() {
		b.autoMu.Lock()
		delete(b.autoInflight, name)
		b.autoMu.Unlock()
	}
	cfg := b.rm.Config()
	started := b.goBackground(func(ctx context.Context) {
		defer done()
		ctx, cancel := context.WithTimeout(ctx, autoCreateTimeout)
		defer cancel()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = 7
		req.TimeoutMillis = int32(autoCreateTimeout.Milliseconds())
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = name
		t.NumPartitions = cfg.NumPartitions
		t.ReplicationFactor = cfg.DefaultReplicationFactor
		req.Topics = append(req.Topics, t)
		resp, err := b.deps.Controller.Send(ctx, req)
		if err != nil {
			b.log.Warn("auto-create topic", "topic", name, "error", err)
			return
		}
		r, ok := resp.(*kmsg.CreateTopicsResponse)
		if !ok || len(r.Topics) != 1 {
			b.log.Warn("auto-create topic: unexpected response", "topic", name, "response", resp)
			return
		}
		if code := r.Topics[0].ErrorCode; code != 0 && code != kerr.TopicAlreadyExists.Code {
			b.log.Warn("auto-create topic", "topic", name, "error", kerr.ErrorForCode(code), "message", r.Topics[0].ErrorMessage)
			return
		}
		b.log.Info("auto-created topic", "topic", name, "partitions", cfg.NumPartitions, "replication_factor", cfg.DefaultReplicationFactor)
	})
	if !started {
		done()
	}
}
