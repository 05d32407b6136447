package wire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// DialOption secures a connection opened by Dial.
type DialOption func(*dialOptions)

type dialOptions struct {
	tls  *tls.Config
	sasl sasl.Mechanism
}

// WithTLS makes Dial run a TLS handshake with cfg before anything else (the
// SSL and SASL_SSL security protocols). Without cfg.ServerName the host of
// the dialled address is verified.
func WithTLS(cfg *tls.Config) DialOption {
	return func(o *dialOptions) { o.tls = cfg }
}

// WithSASL makes Dial authenticate with mechanism m (the SASL_PLAINTEXT and
// SASL_SSL security protocols): SaslHandshake v1, then SaslAuthenticate
// exchanges until m's session is done. franz-go's sasl/plain and sasl/scram
// provide the client mechanisms.
func WithSASL(m sasl.Mechanism) DialOption {
	return func(o *dialOptions) { o.sasl = m }
}

// ErrSASLAuthentication is wrapped by Dial when the server refused the
// SASL credentials or the mechanism.
var ErrSASLAuthentication = errors.New("sasl authentication failed")

// handshakeTimeout bounds the TLS handshake and SASL exchange of a dial
// whose context has no earlier deadline.
const handshakeTimeout = 30 * time.Second

// secure runs the TLS handshake and SASL authentication o asks for over nc
// and returns the ready Conn; nc is closed on failure.
func secure(ctx context.Context, nc net.Conn, addr, clientID string, o dialOptions) (*Conn, error) {
	if o.tls == nil && o.sasl == nil {
		return NewConn(nc, clientID), nil
	}
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if o.tls != nil {
		cfg := o.tls.Clone()
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			cfg.ServerName = host
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(hctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("tls handshake with %s: %w", addr, err)
		}
		nc = tc
	}
	c := NewConn(nc, clientID)
	if o.sasl != nil {
		if err := c.authenticate(hctx, o.sasl, addr); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Authenticate runs the SASL exchange of mechanism m (SaslHandshake v1,
// then SaslAuthenticate until m's session is done) on nc, an established
// connection at the point where the server expects it: raft peers log in
// this way right after their preamble. It reads nothing beyond the last
// answer and leaves nc open on success (its deadline set to ctx's); after a
// failure nc is of no further use and the caller closes it. The error wraps ErrSASLAuthentication when the
// server refused the mechanism or the credentials.
func Authenticate(ctx context.Context, nc net.Conn, clientID string, m sasl.Mechanism, addr string) error {
	return NewConn(nc, clientID).authenticate(ctx, m, addr)
}

// authenticate runs a SASL exchange with mechanism m on a new connection.
func (c *Conn) authenticate(ctx context.Context, m sasl.Mechanism, addr string) error {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = m.Name()
	resp, err := c.Request(ctx, hs)
	if err != nil {
		return fmt.Errorf("sasl handshake with %s: %w", addr, err)
	}
	if code := resp.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		return fmt.Errorf("sasl handshake with %s: mechanism %s (server offers %v): %w: %w",
			addr, m.Name(), resp.(*kmsg.SASLHandshakeResponse).SupportedMechanisms, ErrSASLAuthentication, kerr.ErrorForCode(code))
	}
	session, out, err := m.Authenticate(ctx, addr)
	if err != nil {
		return fmt.Errorf("sasl %s with %s: %w", m.Name(), addr, err)
	}
	for {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SetVersion(1)
		req.SASLAuthBytes = out
		kresp, err := c.Request(ctx, req)
		if err != nil {
			return fmt.Errorf("sasl %s with %s: %w", m.Name(), addr, err)
		}
		ar := kresp.(*kmsg.SASLAuthenticateResponse)
		if ar.ErrorCode != 0 {
			text := ""
			if ar.ErrorMessage != nil {
				text = ": " + *ar.ErrorMessage
			}
			return fmt.Errorf("sasl %s with %s%s: %w: %w", m.Name(), addr, text, ErrSASLAuthentication, kerr.ErrorForCode(ar.ErrorCode))
		}
		done, next, err := session.Challenge(ar.SASLAuthBytes)
		if err != nil {
			return fmt.Errorf("sasl %s with %s: %w: %w", m.Name(), addr, ErrSASLAuthentication, err)
		}
		if done {
			return nil
		}
		out = next
	}
}
