package auth

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/wire"
)

// Security protocols of listeners.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// UsesTLS reports whether a security protocol runs over TLS.
func UsesTLS(protocol string) bool { return protocol == ProtocolSSL || protocol == ProtocolSASLSSL }

// UsesSASL reports whether a security protocol authenticates with SASL.
func UsesSASL(protocol string) bool {
	return protocol == ProtocolSASLPlaintext || protocol == ProtocolSASLSSL
}

// Listener is the security of one listener: its TLS configuration and how a
// certificate becomes a principal (SSL, SASL_SSL), and the SASL mechanisms
// it offers (SASL_PLAINTEXT, SASL_SSL).
type Listener struct {
	Name     string
	Protocol string
	// TLS is the server configuration; nil without TLS.
	TLS *tls.Config
	// Mapper maps client certificate DNs to principal names (SSL).
	Mapper *PrincipalMapper
	// SASL holds the enabled mechanisms; nil without SASL.
	SASL *Mechanisms
}

// NewListener builds the security of listener l from the node's
// configuration. SCRAM mechanisms look credentials up with creds. Warnings
// name settings that are ignored (a mechanism kmirror does not implement
// next to ones it does).
func NewListener(cfg *config.Config, l config.Listener, creds ScramCredentials) (*Listener, []string, error) {
	sec := &Listener{Name: l.Name, Protocol: l.SecurityProtocol}
	var warnings []string
	switch l.SecurityProtocol {
	case ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL:
	default:
		return nil, nil, fmt.Errorf("listener %s: unknown security protocol %s", l.Name, l.SecurityProtocol)
	}
	if UsesTLS(l.SecurityProtocol) {
		tc, err := ServerTLSConfig(cfg, l.Name)
		if err != nil {
			return nil, nil, err
		}
		sec.TLS = tc
		rules, _ := cfg.ListenerValue(l.Name, "ssl.principal.mapping.rules")
		m, err := ParsePrincipalMappingRules(rules.Str())
		if err != nil {
			return nil, nil, fmt.Errorf("listener %s: %w", l.Name, err)
		}
		sec.Mapper = m
	}
	if UsesSASL(l.SecurityProtocol) {
		if v, ok := cfg.ListenerValue(l.Name, "connections.max.reauth.ms"); ok && v.Long() != 0 {
			return nil, nil, fmt.Errorf("listener %s: connections.max.reauth.ms: re-authentication (KIP-368) is not supported; leave it at 0", l.Name)
		}
		enabled, _ := cfg.ListenerValue(l.Name, "sasl.enabled.mechanisms")
		var mechs []ServerMechanism
		for _, name := range enabled.List() {
			switch name = strings.ToUpper(strings.TrimSpace(name)); name {
			case MechanismPlain:
				j, err := listenerJAAS(cfg, l.Name, MechanismPlain)
				if err != nil {
					return nil, nil, err
				}
				if j == nil || j.LoginModule != PlainLoginModule {
					return nil, nil, fmt.Errorf("listener %s: PLAIN needs listener.name.%s.plain.sasl.jaas.config with %s and its user_<name>=\"<password>\" options",
						l.Name, strings.ToLower(l.Name), PlainLoginModule)
				}
				mechs = append(mechs, NewPlainMechanism(j.PlainUsers()))
			case ScramSHA256.Name, ScramSHA512.Name:
				m, _ := ScramMechanismByName(name)
				mechs = append(mechs, NewScramServer(m, creds))
			default:
				warnings = append(warnings, fmt.Sprintf("listener %s: SASL mechanism %s is not implemented by kmirror and is not offered", l.Name, name))
			}
		}
		if len(mechs) == 0 {
			return nil, warnings, fmt.Errorf("listener %s: sasl.enabled.mechanisms offers none of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (Kafka's default GSSAPI is not implemented)", l.Name)
		}
		sec.SASL = NewMechanisms(mechs...)
	}
	return sec, warnings, nil
}

// TLSPrincipal returns the principal of a TLS connection: "User:" and the
// client certificate's DN (RFC 2253) through ssl.principal.mapping.rules, or
// User:ANONYMOUS without a client certificate.
func (l *Listener) TLSPrincipal(cs tls.ConnectionState) (string, error) {
	if len(cs.PeerCertificates) == 0 {
		return wire.AnonymousPrincipal, nil
	}
	dn, err := DistinguishedName(cs.PeerCertificates[0].RawSubject)
	if err != nil {
		return "", err
	}
	mapper := l.Mapper
	if mapper == nil {
		mapper = &PrincipalMapper{rules: []mappingRule{{isDefault: true}}}
	}
	name, err := mapper.Map(dn)
	if err != nil {
		return "", err
	}
	return "User:" + name, nil
}

// listenerJAAS returns the JAAS configuration of a listener for a mechanism:
// listener.name.<l>.<mechanism>.sasl.jaas.config, else
// listener.name.<l>.sasl.jaas.config, else sasl.jaas.config; nil when none
// is set.
func listenerJAAS(cfg *config.Config, listener, mechanism string) (*JAAS, error) {
	for _, name := range []string{strings.ToLower(mechanism) + ".sasl.jaas.config", "sasl.jaas.config"} {
		v, ok := cfg.ListenerValue(listener, name)
		if !ok || v.IsNull() || v.Password() == "" {
			continue
		}
		j, err := ParseJAAS(v.Password())
		if err != nil {
			return nil, fmt.Errorf("listener %s: %w", listener, err)
		}
		return j, nil
	}
	return nil, nil
}

// NodeDialOptions returns how this node connects to the listener called
// name on other nodes (the inter-broker listener, a controller listener):
// TLS with ClientTLSConfig for SSL and SASL_SSL, and for SASL the mechanism
// of sasl.mechanism.controller.protocol (controller listeners) or
// sasl.mechanism.inter.broker.protocol, with the username and password of
// the listener's JAAS entry for that mechanism. A PLAINTEXT listener needs
// no options.
func NodeDialOptions(cfg *config.Config, name string) ([]wire.DialOption, error) {
	protocol, err := listenerProtocol(cfg, name)
	if err != nil {
		return nil, err
	}
	var opts []wire.DialOption
	if UsesTLS(protocol) {
		tc, err := ClientTLSConfig(cfg, name)
		if err != nil {
			return nil, err
		}
		opts = append(opts, wire.WithTLS(tc))
	}
	m, err := NodeSASLMechanism(cfg, name)
	if err != nil {
		return nil, err
	}
	if m != nil {
		opts = append(opts, wire.WithSASL(m))
	}
	return opts, nil
}

// NodeSASLMechanism returns the mechanism this node logs in with on the
// listener called name on other nodes — sasl.mechanism.controller.protocol
// for a controller listener, else sasl.mechanism.inter.broker.protocol,
// with the username and password of the listener's JAAS entry for it — or
// nil if that listener does not use SASL. Kafka connections
// (NodeDialOptions) and raft peers log in with it.
func NodeSASLMechanism(cfg *config.Config, name string) (sasl.Mechanism, error) {
	protocol, err := listenerProtocol(cfg, name)
	if err != nil || !UsesSASL(protocol) {
		return nil, err
	}
	setting := "sasl.mechanism.inter.broker.protocol"
	if slices.Contains(cfg.ControllerListenerNames, name) {
		setting = "sasl.mechanism.controller.protocol"
	}
	v, _ := cfg.Get(setting)
	return clientMechanism(cfg, name, setting, v.Str())
}

// NodeTLSConfig returns the TLS configuration this node uses to connect to
// the listener called name on other nodes, or nil if that listener does not
// use TLS (raft's connections use it, and NodeSASLMechanism on a SASL_SSL
// listener).
func NodeTLSConfig(cfg *config.Config, name string) (*tls.Config, error) {
	protocol, err := listenerProtocol(cfg, name)
	if err != nil || !UsesTLS(protocol) {
		return nil, err
	}
	return ClientTLSConfig(cfg, name)
}

// listenerProtocol returns the security protocol of a listener, also of one
// this node does not bind (a broker-only node's view of the controllers'
// listener): listener.security.protocol.map, where PLAINTEXT is the default
// of a controller listener missing from the default map, as in config.
func listenerProtocol(cfg *config.Config, name string) (string, error) {
	for _, ls := range [][]config.Listener{cfg.Listeners, cfg.AdvertisedListeners} {
		if i := slices.IndexFunc(ls, func(l config.Listener) bool { return l.Name == name }); i >= 0 {
			return ls[i].SecurityProtocol, nil
		}
	}
	v, _ := cfg.Get("listener.security.protocol.map")
	m, err := config.ParseSecurityProtocolMap(v.Str())
	if err != nil {
		return "", err
	}
	if p, ok := m[name]; ok {
		return p, nil
	}
	return ProtocolPlaintext, nil
}

// clientMechanism builds the client side of mechanism for the node's own
// login on a listener, from the JAAS entry's username and password.
func clientMechanism(cfg *config.Config, listener, setting, mechanism string) (sasl.Mechanism, error) {
	mechanism = strings.ToUpper(strings.TrimSpace(mechanism))
	j, err := listenerJAAS(cfg, listener, mechanism)
	if err != nil {
		return nil, err
	}
	if j == nil || j.Options["username"] == "" || j.Options["password"] == "" {
		return nil, fmt.Errorf("listener %s: the node's own %s login needs username and password in listener.name.%s.%s.sasl.jaas.config",
			listener, mechanism, strings.ToLower(listener), strings.ToLower(mechanism))
	}
	user, pass := j.Options["username"], j.Options["password"]
	switch mechanism {
	case MechanismPlain:
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case ScramSHA256.Name:
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case ScramSHA512.Name:
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("listener %s: %s=%s is not implemented (use PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", listener, setting, mechanism)
}
