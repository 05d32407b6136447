package server

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/wire"
)

// The SASL API versions served: SaslHandshake v1 moved the tokens into
// SaslAuthenticate requests; SaslAuthenticate v1 added the session
// lifetime, v2 is its flexible form.
const (
	saslHandshakeMax    = 1
	saslAuthenticateMax = 2
)

// maxSASLTokenSize bounds a frame before authentication, as Kafka's
// sasl.server.max.receive.size default: an unauthenticated client cannot
// make the node hold large frames.
const maxSASLTokenSize = 512 << 10

// saslState is a SASL listener connection's authentication, Kafka's
// SaslServerAuthenticator. Before authentication the connection may send
// only ApiVersions, SaslHandshake (once) and SaslAuthenticate; anything else
// closes it. A v0 SaslHandshake switches to Kafka's legacy framing, where
// the tokens follow as bare size-prefixed frames without request headers.
type saslState struct {
	mechs   *auth.Mechanisms
	session auth.ServerSession
	mech    string
	raw     bool // v0 handshake: bare token frames
	done    bool
}

func newSASLState(m *auth.Mechanisms) *saslState { return &saslState{mechs: m} }

// authenticate handles a frame of a connection that has not authenticated
// yet; false closes the connection.
func (c *conn) authenticate(ctx context.Context, w *responseWriter, frame []byte) bool {
	if len(frame) > maxSASLTokenSize {
		c.log.Warn("closing connection: frame before SASL authentication exceeds the limit", "size", len(frame), "limit", maxSASLTokenSize)
		return false
	}
	if c.sasl.raw {
		return c.rawToken(w, frame)
	}
	if len(frame) < 2 {
		c.log.Info("closing connection: malformed request before SASL authentication")
		return false
	}
	key := int16(binary.BigEndian.Uint16(frame))
	if !slices.Contains(auth.PreAuthenticationAPIs, key) {
		c.log.Info("closing connection: request before SASL authentication", "api", wire.APIName(key), "api_key", key)
		return false
	}
	if key == int16(kmsg.ApiVersions) {
		hdr, resp, err := c.ep.dispatchAs(ctx, c.nc.RemoteAddr(), c.principal, frame)
		if err != nil {
			c.logRequestError(ctx, hdr, err)
			return false
		}
		return c.writeResponse(ctx, w, hdr, resp)
	}
	hdr, req, err := wire.ParseRequest(frame, c.ep.reg)
	if err != nil {
		c.logRequestError(ctx, hdr, err)
		return false
	}
	switch r := req.(type) {
	case *kmsg.SASLHandshakeRequest:
		return c.saslHandshake(ctx, w, hdr, r)
	case *kmsg.SASLAuthenticateRequest:
		return c.saslAuthenticate(ctx, w, hdr, r)
	}
	return false
}

// saslHandshake selects the mechanism. An unknown one is answered with
// UNSUPPORTED_SASL_MECHANISM and the enabled list, then the connection is
// closed, as a second handshake is.
func (c *conn) saslHandshake(ctx context.Context, w *responseWriter, hdr wire.RequestHeader, req *kmsg.SASLHandshakeRequest) bool {
	if c.sasl.session != nil {
		c.log.Info("closing connection: second SaslHandshake")
		return false
	}
	resp := kmsg.NewPtrSASLHandshakeResponse()
	resp.SetVersion(req.Version)
	resp.SupportedMechanisms = c.sasl.mechs.Names()
	m, ok := c.sasl.mechs.Get(req.Mechanism)
	if !ok {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		c.log.Info("closing connection: unsupported SASL mechanism", "mechanism", req.Mechanism, "enabled", resp.SupportedMechanisms)
		c.writeResponse(ctx, w, hdr, resp)
		return false
	}
	c.sasl.session, c.sasl.mech = m.NewSession(), m.Name()
	c.sasl.raw = req.Version == 0
	return c.writeResponse(ctx, w, hdr, resp)
}

// saslAuthenticate runs one step of the exchange. A failure is answered
// with SASL_AUTHENTICATION_FAILED and Kafka's message, then the connection
// is closed.
func (c *conn) saslAuthenticate(ctx context.Context, w *responseWriter, hdr wire.RequestHeader, req *kmsg.SASLAuthenticateRequest) bool {
	if c.sasl.session == nil {
		c.log.Info("closing connection: SaslAuthenticate before SaslHandshake")
		return false
	}
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.SetVersion(req.Version)
	reply, done, err := c.sasl.session.Step(req.SASLAuthBytes)
	if err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := clientAuthMessage(err, c.sasl.mech)
		resp.ErrorMessage = &msg
		c.logAuthFailure(err)
		c.writeResponse(ctx, w, hdr, resp)
		return false
	}
	resp.SASLAuthBytes = reply
	resp.SessionLifetimeMillis = 0 // connections.max.reauth.ms is 0
	if done {
		c.authenticated()
	}
	return c.writeResponse(ctx, w, hdr, resp)
}

// rawToken handles a token of the legacy (v0 handshake) framing: the answer
// is a bare size-prefixed token (empty when the mechanism has nothing to
// say); a failure just closes the connection, which is all such a client
// understands.
func (c *conn) rawToken(w *responseWriter, token []byte) bool {
	reply, done, err := c.sasl.session.Step(token)
	if err != nil {
		c.logAuthFailure(err)
		return false
	}
	if err := w.writeRaw(reply); err != nil {
		c.log.Info("closing connection: writing a SASL token failed", "error", err)
		return false
	}
	if done {
		c.authenticated()
	}
	return true
}

func (c *conn) authenticated() {
	c.sasl.done = true
	c.principal = "User:" + c.sasl.session.User()
	c.log.Debug("sasl authentication succeeded", "mechanism", c.sasl.mech, "principal", c.principal)
}

// logAuthFailure logs a failed authentication with its reason (a user name
// perhaps, never a password), as Kafka logs "Failed authentication".
func (c *conn) logAuthFailure(err error) {
	c.log.Info("failed SASL authentication", "mechanism", c.sasl.mech, "error", err)
}

// clientAuthMessage is what the client is told about a failure.
func clientAuthMessage(err error, mech string) string {
	var ae *auth.AuthError
	if errors.As(err, &ae) {
		return ae.ClientMessage
	}
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech
}

// writeResponse sends resp (nil sends nothing); false means the write
// failed and the connection must close.
func (c *conn) writeResponse(ctx context.Context, w *responseWriter, hdr wire.RequestHeader, resp wire.Response) bool {
	if resp == nil {
		return true
	}
	if c.limits.idleTimeout > 0 {
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.limits.idleTimeout))
	}
	if err := w.write(hdr.CorrelationID, resp); err != nil {
		if ctx.Err() == nil {
			c.log.Info("closing connection: writing the response failed",
				"api", wire.APIName(hdr.APIKey), "correlation_id", hdr.CorrelationID, "error", err)
		}
		return false
	}
	return true
}

// saslAfterAuthentication answers SaslHandshake and SaslAuthenticate on an
// authenticated connection: kmirror does not re-authenticate (KIP-368), so
// like Kafka without re-authentication it answers ILLEGAL_SASL_STATE.
func saslAfterAuthentication(_ context.Context, _ *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
	return wire.ErrorResponse(req, kerr.IllegalSaslState), nil
}
