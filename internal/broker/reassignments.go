package broker

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleAlterPartitionReassignments serves AlterPartitionReassignments
// v0–v1 by forwarding it to the active controller, which starts, replaces,
// cancels and later completes the reassignments (controller/reassign.go).
func (b *Broker) handleAlterPartitionReassignments(ctx context.Context, _ *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	if _, ok := kreq.(*kmsg.AlterPartitionAssignmentsRequest); !ok {
		return nil, requestTypeError("AlterPartitionReassignments", kreq)
	}
	return b.forward(ctx, kreq)
}

// handleListPartitionReassignments serves ListPartitionReassignments v0.
func (b *Broker) handleListPartitionReassignments(_ context.Context, _ *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.ListPartitionReassignmentsRequest)
	if !ok {
		return nil, requestTypeError("ListPartitionReassignments", kreq)
	}
	return listPartitionReassignments(b.rm.Image(), req), nil
}

// listPartitionReassignments answers ListPartitionReassignments from img
// (the broker's own image, as DescribeMirrors is answered):
// every partition under reassignment, or those of the topics and
// partitions asked for (others are left out, as Kafka does).
func listPartitionReassignments(img *metadata.Image, req *kmsg.ListPartitionReassignmentsRequest) *kmsg.ListPartitionReassignmentsResponse {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	resp.Version = req.Version
	add := func(t *metadata.TopicImage, parts []int32) {
		out := kmsg.NewListPartitionReassignmentsResponseTopic()
		out.Topic = t.Name
		for _, p := range parts {
			st, ok := t.Partition(p)
			if !ok {
				continue
			}
			if !st.Reassigning() {
				continue
			}
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition = p
			rp.Replicas = slices.Clone(st.Replicas)
			rp.AddingReplicas = append([]int32{}, st.AddingReplicas...)
			rp.RemovingReplicas = append([]int32{}, st.RemovingReplicas...)
			out.Partitions = append(out.Partitions, rp)
		}
		if len(out.Partitions) > 0 {
			resp.Topics = append(resp.Topics, out)
		}
	}
	if req.Topics == nil {
		for _, t := range img.Topics() {
			add(t, t.PartitionIDs())
		}
		return resp
	}
	for _, rt := range req.Topics {
		if t, ok := img.Topic(rt.Topic); ok {
			add(t, rt.Partitions)
		}
	}
	return resp
}
