package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Mechanism names kmirror serves.
const (
	MechanismPlain = "PLAIN"
)

// AuthError is a failed SASL authentication. ClientMessage is what the
// client is told (Kafka's wording, never a secret); Reason says why for the
// server's log (it may name the user, never a password). It wraps
// kerr.SaslAuthenticationFailed.
type AuthError struct {
	ClientMessage string
	Reason        string
}

// Error returns the reason and the client message.
func (e *AuthError) Error() string {
	return fmt.Sprintf("sasl authentication failed: %s (client told %q)", e.Reason, e.ClientMessage)
}

// Unwrap returns kerr.SaslAuthenticationFailed.
func (e *AuthError) Unwrap() error { return kerr.SaslAuthenticationFailed }

// invalidCredentials is Kafka's message for a SASL failure that has no
// more specific one.
func invalidCredentials(mechanism, reason string) *AuthError {
	return &AuthError{
		ClientMessage: "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mechanism,
		Reason:        reason,
	}
}

// ServerMechanism is the server side of a SASL mechanism on one listener.
type ServerMechanism interface {
	// Name is the SASL mechanism name (PLAIN, SCRAM-SHA-256, ...).
	Name() string
	// NewSession starts the authentication of one connection.
	NewSession() ServerSession
}

// ServerSession is one connection's authentication exchange.
type ServerSession interface {
	// Step handles the client's next message and returns the answer to
	// send. done is true once the client is authenticated (the answer is
	// then the last one). A failure is an *AuthError; the connection is
	// closed after the client has been told.
	Step(clientMsg []byte) (serverMsg []byte, done bool, err error)
	// User is the authenticated user name once Step returned done; the
	// connection's principal is "User:" + User.
	User() string
}

// PlainMechanism serves SASL/PLAIN (RFC 4616) against a fixed user list,
// the user_<name> options of the listener's PlainLoginModule JAAS entry.
type PlainMechanism struct {
	// users maps a user name to the SHA-256 of its password, so that the
	// comparison takes the same time whatever the password's length.
	users map[string][32]byte
}

// NewPlainMechanism returns a PLAIN mechanism for the given users
// (name → password).
func NewPlainMechanism(users map[string]string) *PlainMechanism {
	m := &PlainMechanism{users: map[string][32]byte{}}
	for u, p := range users {
		m.users[u] = sha256.Sum256([]byte(p))
	}
	return m
}

// Name implements ServerMechanism.
func (m *PlainMechanism) Name() string { return MechanismPlain }

// NewSession implements ServerMechanism.
func (m *PlainMechanism) NewSession() ServerSession { return &plainSession{m: m} }

type plainSession struct {
	m    *PlainMechanism
	user string
}

func (s *plainSession) User() string { return s.user }

// Step checks "authzid NUL authcid NUL passwd" with Kafka's messages.
func (s *plainSession) Step(msg []byte) ([]byte, bool, error) {
	if s.user != "" {
		return nil, false, invalidCredentials(MechanismPlain, "PLAIN message after authentication")
	}
	parts := strings.Split(string(msg), "\x00")
	if len(parts) != 3 {
		return nil, false, invalidCredentials(MechanismPlain, fmt.Sprintf("invalid SASL/PLAIN response: expected 3 tokens, got %d", len(parts)))
	}
	authzid, user, pass := parts[0], parts[1], parts[2]
	switch {
	case user == "":
		return nil, false, &AuthError{ClientMessage: "Authentication failed: username not specified", Reason: "PLAIN without a user name"}
	case pass == "":
		return nil, false, &AuthError{ClientMessage: "Authentication failed: password not specified", Reason: "PLAIN without a password for user " + user}
	}
	want, known := s.m.users[user]
	got := sha256.Sum256([]byte(pass))
	// Compare even for an unknown user, so that timing does not tell
	// which users exist.
	match := subtle.ConstantTimeCompare(got[:], want[:]) == 1
	if !known || !match {
		reason := "wrong password for user " + user
		if !known {
			reason = "unknown user " + user
		}
		return nil, false, &AuthError{ClientMessage: "Authentication failed: Invalid username or password", Reason: reason}
	}
	if authzid != "" && authzid != user {
		return nil, false, &AuthError{ClientMessage: "Authentication failed: Client requested an authorization id that is different from username",
			Reason: "user " + user + " asked for another authorization id"}
	}
	s.user = user
	return nil, true, nil
}

// Mechanisms is the set of SASL mechanisms a listener offers, in the order
// of sasl.enabled.mechanisms.
type Mechanisms struct {
	list []ServerMechanism
}

// NewMechanisms returns the set of the given mechanisms.
func NewMechanisms(ms ...ServerMechanism) *Mechanisms {
	return &Mechanisms{list: slices.Clone(ms)}
}

// Names returns the mechanism names, as SaslHandshake lists them.
func (m *Mechanisms) Names() []string {
	out := make([]string, len(m.list))
	for i, x := range m.list {
		out[i] = x.Name()
	}
	return out
}

// Get returns the mechanism called name (exact, as Kafka compares).
func (m *Mechanisms) Get(name string) (ServerMechanism, bool) {
	for _, x := range m.list {
		if x.Name() == name {
			return x, true
		}
	}
	return nil, false
}
