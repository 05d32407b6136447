package controller

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// CreateInternalTopic is the node's own path to create an internal topic
// (the group and transaction coordinators' and the mirrors' state topics):
// clients cannot create them. It is idempotent: a topic that exists
// already is a success with its id. partitions <= 0 takes the configured
// count (offsets.topic.num.partitions, transaction.state.log.num.partitions,
// mirror.state.topic.num.partitions); the replication factor is the
// configured one capped by the usable brokers, so that a small cluster can
// still create it. configs (e.g. cleanup.policy=compact) are validated like
// a client's, except that internal configs are allowed.
//
// It fails with an error wrapping kerr.NotController when this controller
// is not active (brokers use Channel.CreateInternalTopic, which finds the
// active one), and with the Kafka error of a refused creation otherwise.
func (c *Controller) CreateInternalTopic(ctx context.Context, name string, partitions int32, configs map[string]string) (metadata.Uuid, error) {
	if !IsInternalTopic(name) {
		return metadata.Uuid{}, errf(kerr.InvalidRequest, "%s is not an internal topic", name)
	}
	req := internalTopicRequest(name, partitions, configs)
	setTag(req, internalTopicTag, []byte{1})
	resp, err := c.serve(ctx, req)
	if err != nil {
		return metadata.Uuid{}, err
	}
	return internalTopicResult(resp)
}

// internalTopicRequest builds the CreateTopics request of an internal
// topic; its replication factor is left to the controller.
func internalTopicRequest(name string, partitions int32, configs map[string]string) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.TimeoutMillis = int32(proposeTimeout.Milliseconds())
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = name
	t.NumPartitions = -1
	if partitions > 0 {
		t.NumPartitions = partitions
	}
	t.ReplicationFactor = -1
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name = k
		v := configs[k]
		cfg.Value = &v
		t.Configs = append(t.Configs, cfg)
	}
	req.Topics = append(req.Topics, t)
	return req
}

// internalTopicResult reads the outcome of an internal topic's creation.
func internalTopicResult(resp kmsg.Response) (metadata.Uuid, error) {
	r, ok := resp.(*kmsg.CreateTopicsResponse)
	if !ok || len(r.Topics) != 1 {
		return metadata.Uuid{}, errf(kerr.UnknownServerError, "unexpected CreateTopics response %T", resp)
	}
	t := r.Topics[0]
	if t.ErrorCode != 0 {
		err := kerr.ErrorForCode(t.ErrorCode)
		if t.ErrorMessage != nil {
			if ke, ok := err.(*kerr.Error); ok {
				return metadata.Uuid{}, &apiError{code: ke, msg: *t.ErrorMessage}
			}
		}
		return metadata.Uuid{}, err
	}
	return metadata.Uuid(t.TopicID), nil
}
