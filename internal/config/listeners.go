package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Listener is one listener: "NAME://host:port" plus the security protocol
// its name maps to.
type Listener struct {
	// Name is the listener name, upper-case (e.g. PLAINTEXT, CONTROLLER).
	Name string
	// Host is the host or IP (IPv6 without brackets); empty means the
	// default interface.
	Host string
	// Port is the TCP port; 0 asks the system for a free one.
	Port int
	// SecurityProtocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
	SecurityProtocol string
}

// Address returns host:port, bracketing IPv6 hosts.
func (l Listener) Address() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

// String returns NAME://host:port.
func (l Listener) String() string { return l.Name + "://" + l.Address() }

// Voter is one member of the metadata quorum: "id@host:port".
type Voter struct {
	ID   int32
	Host string
	Port int
}

// Address returns host:port.
func (v Voter) Address() string { return net.JoinHostPort(v.Host, strconv.Itoa(v.Port)) }

// String returns id@host:port.
func (v Voter) String() string { return strconv.Itoa(int(v.ID)) + "@" + v.Address() }

// ParseListeners parses a comma-separated listener list
// ("NAME://host:port,..."). Names are upper-cased and must be unique; the
// security protocols are left empty (see listener.security.protocol.map).
func ParseListeners(s string) ([]Listener, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []Listener
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		name, addr, ok := strings.Cut(part, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not NAME://host:port", part)
		}
		host, port, err := splitHostPort(addr)
		if err != nil {
			return nil, err
		}
		l := Listener{Name: strings.ToUpper(name), Host: host, Port: port}
		if slices.ContainsFunc(out, func(o Listener) bool { return o.Name == l.Name }) {
			return nil, fmt.Errorf("listener name %s is used twice", l.Name)
		}
		out = append(out, l)
	}
	return out, nil
}

var listenersValidator = ValidatorFunc("NAME://host:port,...", func(v Value) error {
	ls, err := ParseListeners(v.Str())
	if err != nil {
		return err
	}
	// Kafka: one port per listener, except port 0 (ephemeral) and an IPv4
	// and an IPv6 listener sharing a port.
	for i, a := range ls {
		for _, b := range ls[:i] {
			if a.Port != 0 && a.Port == b.Port && !ipv4AndIPv6(a.Host, b.Host) {
				return fmt.Errorf("listeners %s and %s use the same port %d", b.Name, a.Name, a.Port)
			}
		}
	}
	return nil
})

func ipv4AndIPv6(a, b string) bool {
	ia, ib := net.ParseIP(a), net.ParseIP(b)
	if ia == nil || ib == nil {
		return false
	}
	return (ia.To4() == nil) != (ib.To4() == nil)
}

// ParseSecurityProtocolMap parses NAME:PROTOCOL pairs into a map keyed by the
// upper-cased listener name.
func ParseSecurityProtocolMap(s string) (map[string]string, error) {
	out := make(map[string]string)
	s = strings.TrimSpace(s)
	if s == "" {
		return out, nil
	}
	for _, part := range strings.Split(s, ",") {
		name, proto, ok := strings.Cut(strings.TrimSpace(part), ":")
		name, proto = strings.ToUpper(strings.TrimSpace(name)), strings.ToUpper(strings.TrimSpace(proto))
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not NAME:PROTOCOL", part)
		}
		if !slices.Contains(securityProtocols, proto) {
			return nil, fmt.Errorf("%q: unknown security protocol %q (use one of %s)", part, proto, strings.Join(securityProtocols, ", "))
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("listener name %s is mapped twice", name)
		}
		out[name] = proto
	}
	return out, nil
}

var securityMapValidator = ValidatorFunc("NAME:PROTOCOL,... with PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", func(v Value) error {
	_, err := ParseSecurityProtocolMap(v.Str())
	return err
})

// ParseVoters parses controller.quorum.voters entries ("id@host:port").
func ParseVoters(items []string) ([]Voter, error) {
	var out []Voter
	for _, it := range items {
		idS, addr, ok := strings.Cut(it, "@")
		if !ok {
			return nil, fmt.Errorf("%q is not id@host:port", it)
		}
		id, err := strconv.ParseInt(idS, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("%q has an invalid node id %q", it, idS)
		}
		host, port, err := splitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if host == "" {
			return nil, fmt.Errorf("%q has no host", it)
		}
		if slices.ContainsFunc(out, func(v Voter) bool { return v.ID == int32(id) }) {
			return nil, fmt.Errorf("voter id %d is listed twice", id)
		}
		out = append(out, Voter{ID: int32(id), Host: host, Port: port})
	}
	return out, nil
}

var votersValidator = ValidatorFunc("id@host:port,...", func(v Value) error {
	_, err := ParseVoters(v.List())
	return err
})

var hostPortListValidator = ValidatorFunc("host:port,...", func(v Value) error {
	for _, it := range v.List() {
		if _, _, err := splitHostPort(it); err != nil {
			return err
		}
	}
	return nil
})
