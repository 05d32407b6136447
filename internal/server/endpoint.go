package server

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/wire"
)

// apiVersionsMax is the highest ApiVersions version a listener answers.
const apiVersionsMax = 4

// endpoint is what one listener serves: the registry that ApiVersions
// advertises and ParseRequest checks, and a handler per served key.
//
// An endpoint starts closed: connections that arrive before the node's
// services exist (raft needs the listeners bound first) wait in enable's
// gate instead of seeing a listener that serves nothing, as Kafka accepts
// connections but processes no request before its start-up ends.
type endpoint struct {
	listener string
	protocol string

	reg      *wire.Registry
	handlers map[int16]wire.Handler

	// authz is the node's authorizer, nil without one (everything is
	// allowed). controller marks a controller listener, whose callers are
	// the cluster's nodes: every API there needs CLUSTER_ACTION.
	authz      wire.Authorizer
	controller bool
	// quota charges client requests to their request quotas; nil on a
	// controller listener and before the broker starts.
	quota requestQuota

	once  sync.Once
	ready chan struct{}
}

// newEndpoint returns a closed endpoint for a listener that serves only
// ApiVersions until enable attaches services.
func newEndpoint(listener, protocol string) *endpoint {
	e := &endpoint{
		listener: listener,
		protocol: protocol,
		reg:      wire.NewRegistry(),
		handlers: map[int16]wire.Handler{},
		ready:    make(chan struct{}),
	}
	e.reg.Add(int16(kmsg.ApiVersions), 0, apiVersionsMax)
	return e
}

// enable attaches services and opens the gate. Two services may not serve
// the same key, and none may serve ApiVersions, which the endpoint answers
// itself. It must be called at most once, before any request is served
// (the gate publishes the handler map to the connection goroutines).
func (e *endpoint) enable(services ...wire.Service) error {
	for _, s := range services {
		for _, api := range s.APIs() {
			if api.Key == int16(kmsg.ApiVersions) {
				return fmt.Errorf("listener %s: a service may not serve ApiVersions", e.listener)
			}
			if _, dup := e.handlers[api.Key]; dup {
				return fmt.Errorf("listener %s: %s is served twice", e.listener, wire.APIName(api.Key))
			}
			if api.Handle == nil {
				return fmt.Errorf("listener %s: %s has no handler", e.listener, wire.APIName(api.Key))
			}
			e.reg.Add(api.Key, api.MinVersion, api.MaxVersion)
			if !e.reg.Has(api.Key) {
				return fmt.Errorf("listener %s: %s v%d-v%d is not a servable range", e.listener, wire.APIName(api.Key), api.MinVersion, api.MaxVersion)
			}
			e.handlers[api.Key] = api.Handle
		}
	}
	e.once.Do(func() { close(e.ready) })
	return nil
}

// secure sets the endpoint's authorization and, for a SASL listener, serves
// SaslHandshake and SaslAuthenticate (the connection loop handles them
// before authentication; after it, they answer ILLEGAL_SASL_STATE as in
// Kafka). It must be called before enable.
func (e *endpoint) secure(authz wire.Authorizer, controller, sasl bool) {
	e.authz, e.controller = authz, controller
	if sasl {
		e.reg.Add(int16(kmsg.SASLHandshake), 0, saslHandshakeMax)
		e.reg.Add(int16(kmsg.SASLAuthenticate), 0, saslAuthenticateMax)
		e.handlers[int16(kmsg.SASLHandshake)] = saslAfterAuthentication
		e.handlers[int16(kmsg.SASLAuthenticate)] = saslAfterAuthentication
	}
}

// clusterCheck returns the operation on the cluster a request of key needs
// before its handler may run. Without an authorizer there is none. On a
// controller listener every API needs CLUSTER_ACTION: brokers forward admin
// requests there after checking the client's rights themselves (kmirror
// sends no Envelope), and nodes are the only legitimate callers. Elsewhere
// it is the API's own check when that needs nothing from the request
// (auth.Requirement.ClusterCheck); the rest is the handlers' to check.
func (e *endpoint) clusterCheck(key int16) (kmsg.ACLOperation, bool) {
	if e.authz == nil || slices.Contains(auth.PreAuthenticationAPIs, key) {
		return 0, false
	}
	if e.controller {
		return kmsg.ACLOperationClusterAction, true
	}
	r, _ := auth.RequiredFor(key)
	return r.ClusterCheck()
}

// wait blocks until the endpoint is enabled or ctx ends.
func (e *endpoint) wait(ctx context.Context) error {
	select {
	case <-e.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// clientSoftwareRE is what Kafka accepts as ClientSoftwareName and
// ClientSoftwareVersion in ApiVersions v3+.
var clientSoftwareRE = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

// apiVersions answers an ApiVersions request that ParseRequest accepted.
// Like Kafka, a v3+ request with an invalid client software name or version
// gets INVALID_REQUEST and no key list.
func (e *endpoint) apiVersions(req *kmsg.ApiVersionsRequest) *kmsg.ApiVersionsResponse {
	if req.Version >= 3 && (!clientSoftwareRE.MatchString(req.ClientSoftwareName) || !clientSoftwareRE.MatchString(req.ClientSoftwareVersion)) {
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.SetVersion(req.Version)
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	return e.reg.ApiVersionsResponse(req.Version)
}
