package server

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/quorum"
	"github.com/kmirror/kmirror/internal/wire"
)

// security is a node's TLS, SASL and authorization: each listener's
// settings, the ACL authorizer (nil when authorizer.class.name is empty),
// and the SCRAM credentials of the metadata image the node has applied.
type security struct {
	listeners map[string]*auth.Listener
	authz     *auth.Authorizer
	quorum    atomic.Pointer[quorum.Quorum]
}

// newSecurity checks and builds the security of every listener; it reads
// certificate and key files, so it fails early on a bad path.
func (n *Node) newSecurity() (*security, error) {
	sec := &security{listeners: map[string]*auth.Listener{}}
	enabled, err := auth.AuthorizerEnabled(n.cfg.AuthorizerClassName)
	if err != nil {
		return nil, err
	}
	if enabled {
		sec.authz = auth.NewAuthorizer(auth.AuthorizerConfig{
			SuperUsers:                n.cfg.SuperUsers,
			AllowEveryoneIfNoACLFound: n.cfg.AllowEveryoneIfNoACLFound,
			Logger:                    n.log.With("component", "authorizer"),
		})
	}
	for _, l := range n.cfg.Listeners {
		ls, warnings, err := auth.NewListener(n.cfg, l, sec.scramCredential)
		if err != nil {
			return nil, err
		}
		for _, w := range warnings {
			n.log.Warn(w)
		}
		sec.listeners[l.Name] = ls
	}
	return sec, nil
}

// scramCredential reads a SCRAM credential from the applied metadata image;
// none is known before the quorum is open.
func (s *security) scramCredential(user string, mechanism int8) (metadata.ScramCredential, bool) {
	q := s.quorum.Load()
	if q == nil {
		return metadata.ScramCredential{}, false
	}
	return q.Image().ScramCredential(user, mechanism)
}

// attach gives every bound listener its security and its endpoint the
// authorizer. It runs before any endpoint is enabled.
func (s *security) attach(ns *netServer, controllerListeners []string) {
	for _, l := range ns.listeners {
		l.sec = s.listeners[l.name]
		var authz wire.Authorizer
		if s.authz != nil {
			authz = s.authz
		}
		l.ep.secure(authz, slices.Contains(controllerListeners, l.name), l.sec != nil && l.sec.SASL != nil)
	}
}

// follow makes the security follow the node's metadata: SCRAM credentials
// and ACLs.
func (s *security) follow(q *quorum.Quorum) {
	s.quorum.Store(q)
	if s.authz != nil {
		q.AddPublisher(s.authz)
	}
}

// dialOptions returns how this node connects to the listener called name
// on other nodes.
func (n *Node) dialOptions(name string) ([]wire.DialOption, error) {
	opts, err := auth.NodeDialOptions(n.cfg, name)
	if err != nil {
		return nil, fmt.Errorf("connections to listener %s: %w", name, err)
	}
	return opts, nil
}
