package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// handleDescribeQuorum serves DescribeQuorum v0–v2 (kafka-metadata-quorum
// describe) by forwarding it to the active controller, which answers from
// the metadata quorum, as Kafka's brokers do.
func (b *Broker) handleDescribeQuorum(ctx context.Context, _ *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	if _, ok := kreq.(*kmsg.DescribeQuorumRequest); !ok {
		return nil, requestTypeError("DescribeQuorum", kreq)
	}
	return b.forward(ctx, kreq)
}
