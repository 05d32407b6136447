package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// handleElectLeaders serves ElectLeaders v0–v2 by forwarding it to the
// active controller, which elects (preferred or unclean) and answers per
// partition; as in KRaft, a broker decides nothing itself.
func (b *Broker) handleElectLeaders(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	if _, ok := kreq.(*kmsg.ElectLeadersRequest); !ok {
		return nil, requestTypeError("ElectLeaders", kreq)
	}
	return b.forward(ctx, kreq)
}

// electLeadersError answers every partition of an ElectLeaders request
// with code (no controller answered).
func electLeadersError(r *kmsg.ElectLeadersRequest, code int16, msg *string) *kmsg.ElectLeadersResponse {
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
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
	return resp
}
