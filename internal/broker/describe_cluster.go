package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// DescribeCluster endpoint types (KIP-919).
const (
	endpointTypeBroker     = 1
	endpointTypeController = 2
)

// handleDescribeCluster serves DescribeCluster v0–v1 on a broker listener:
// the cluster id, the controller id clients are told (as in Metadata) and
// the unfenced brokers with an endpoint on the request's listener. Asking a
// broker for controller endpoints is UNSUPPORTED_ENDPOINT_TYPE, as in Kafka.
func (b *Broker) handleDescribeCluster(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.DescribeClusterRequest)
	if !ok {
		return nil, requestTypeError("DescribeCluster", kreq)
	}
	img := b.image()
	listener := listenerOf(rc)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.EndpointType = endpointTypeBroker
	resp.ClusterID = b.deps.ClusterID
	if req.Version >= 1 && req.EndpointType != endpointTypeBroker {
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
		msg := "the request was sent to an endpoint of type BROKER, but endpoints of another type were requested"
		if req.EndpointType == endpointTypeController {
			msg = "the request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
		}
		resp.ErrorMessage = &msg
		resp.ControllerID = -1
		return resp, nil
	}
	resp.ControllerID = b.controllerID(img, listener)
	for _, reg := range img.Brokers() {
		if reg.Fenced {
			continue
		}
		if ep, ok := reg.Endpoint(listener); ok {
			rb := kmsg.NewDescribeClusterResponseBroker()
			rb.NodeID, rb.Host, rb.Port, rb.Rack = reg.ID, ep.Host, int32(ep.Port), rackOf(reg)
			resp.Brokers = append(resp.Brokers, rb)
		}
	}
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = clusterAuthorizedOperations(rc)
	}
	return resp, nil
}
