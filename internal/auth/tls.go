package auth

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/kmirror/kmirror/internal/config"
)

// tlsSettings are a listener's ssl.* settings, resolved with the
// listener.name.<listener>.ssl.* overrides.
type tlsSettings struct {
	listener string
	get      func(name string) string
}

func newTLSSettings(cfg *config.Config, listener string) tlsSettings {
	return tlsSettings{listener: listener, get: func(name string) string {
		v, ok := cfg.ListenerValue(listener, name)
		if !ok {
			return ""
		}
		if v.Type() == config.TypePassword {
			return v.Password()
		}
		return v.Str()
	}}
}

// errf names the listener and the config in a TLS setup error.
func (s tlsSettings) errf(name, format string, args ...any) error {
	return fmt.Errorf("listener %s: %s: %s", s.listener, name, fmt.Sprintf(format, args...))
}

// keyPair loads the node's certificate chain and key: kmirror's
// ssl.certificate.location + ssl.key.location, or a PEM key store
// (ssl.keystore.type=PEM with ssl.keystore.location holding both, or the
// inline ssl.keystore.certificate.chain + ssl.keystore.key). ok is false
// when none is configured.
func (s tlsSettings) keyPair() (cert tls.Certificate, ok bool, err error) {
	certLoc, keyLoc := s.get("ssl.certificate.location"), s.get("ssl.key.location")
	ksType := strings.ToUpper(s.get("ssl.keystore.type"))
	ksLoc := s.get("ssl.keystore.location")
	switch {
	case certLoc != "" || keyLoc != "":
		if certLoc == "" || keyLoc == "" {
			return cert, false, s.errf("ssl.certificate.location", "set both ssl.certificate.location and ssl.key.location")
		}
		certPEM, err := os.ReadFile(certLoc)
		if err != nil {
			return cert, false, s.errf("ssl.certificate.location", "%v", err)
		}
		keyPEM, err := os.ReadFile(keyLoc)
		if err != nil {
			return cert, false, s.errf("ssl.key.location", "%v", err)
		}
		cert, err = parseKeyPair(certPEM, keyPEM)
		if err != nil {
			return cert, false, s.errf("ssl.certificate.location", "%v", err)
		}
		return cert, true, nil
	case ksType == "PEM" && ksLoc != "":
		pemBytes, err := os.ReadFile(ksLoc)
		if err != nil {
			return cert, false, s.errf("ssl.keystore.location", "%v", err)
		}
		cert, err = parseKeyPair(pemBytes, pemBytes)
		if err != nil {
			return cert, false, s.errf("ssl.keystore.location", "%v", err)
		}
		return cert, true, nil
	case ksType == "PEM" && s.get("ssl.keystore.certificate.chain") != "":
		cert, err = parseKeyPair([]byte(s.get("ssl.keystore.certificate.chain")), []byte(s.get("ssl.keystore.key")))
		if err != nil {
			return cert, false, s.errf("ssl.keystore.certificate.chain", "%v", err)
		}
		return cert, true, nil
	case ksLoc != "":
		return cert, false, s.errf("ssl.keystore.type", "%s key stores are not supported: convert it to PEM (ssl.keystore.type=PEM) or use ssl.certificate.location and ssl.key.location", ksType)
	}
	return cert, false, nil
}

// parseKeyPair reads a certificate chain and a private key from PEM; an
// encrypted key is refused (the error never shows key material).
func parseKeyPair(certPEM, keyPEM []byte) (tls.Certificate, error) {
	for rest := keyPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == "ENCRYPTED PRIVATE KEY" || b.Headers["Proc-Type"] != "" {
			return tls.Certificate{}, errors.New("encrypted private keys are not supported: store the key unencrypted with restricted file permissions")
		}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// crypto/tls's errors describe the PEM structure, not key bytes.
		return tls.Certificate{}, fmt.Errorf("certificate and key: %w", err)
	}
	return cert, nil
}

// trustPool loads the trusted certificate authorities: ssl.ca.location, a
// PEM trust store (ssl.truststore.type=PEM with ssl.truststore.location, or
// the inline ssl.truststore.certificates). nil when none is configured.
func (s tlsSettings) trustPool() (*x509.CertPool, error) {
	var pemBytes []byte
	var from string
	tsType := strings.ToUpper(s.get("ssl.truststore.type"))
	switch {
	case s.get("ssl.ca.location") != "":
		from = "ssl.ca.location"
		b, err := os.ReadFile(s.get(from))
		if err != nil {
			return nil, s.errf(from, "%v", err)
		}
		pemBytes = b
	case tsType == "PEM" && s.get("ssl.truststore.location") != "":
		from = "ssl.truststore.location"
		b, err := os.ReadFile(s.get(from))
		if err != nil {
			return nil, s.errf(from, "%v", err)
		}
		pemBytes = b
	case tsType == "PEM" && s.get("ssl.truststore.certificates") != "":
		from = "ssl.truststore.certificates"
		pemBytes = []byte(s.get(from))
	case s.get("ssl.truststore.location") != "":
		return nil, s.errf("ssl.truststore.type", "%s trust stores are not supported: convert it to PEM (ssl.truststore.type=PEM) or use ssl.ca.location", tsType)
	default:
		return nil, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, s.errf(from, "no PEM certificate found")
	}
	return pool, nil
}

// ServerTLSConfig builds the TLS configuration of a listener whose security
// protocol is SSL or SASL_SSL, from its ssl.* settings: the node's
// certificate (required), the trusted authorities, and ssl.client.auth
// (none, requested: verified if presented, required).
func ServerTLSConfig(cfg *config.Config, listener string) (*tls.Config, error) {
	s := newTLSSettings(cfg, listener)
	cert, ok, err := s.keyPair()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, s.errf("ssl.certificate.location", "a TLS listener needs the node's certificate and key (ssl.certificate.location and ssl.key.location, or ssl.keystore.type=PEM with ssl.keystore.location)")
	}
	pool, err := s.trustPool()
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, ClientCAs: pool}
	switch mode := strings.ToLower(s.get("ssl.client.auth")); mode {
	case "", "none":
		tc.ClientAuth = tls.NoClientCert
	case "requested", "required":
		if pool == nil {
			return nil, s.errf("ssl.client.auth", "%s needs the authorities client certificates chain to (ssl.ca.location or a PEM trust store)", mode)
		}
		tc.ClientAuth = tls.VerifyClientCertIfGiven
		if mode == "required" {
			tc.ClientAuth = tls.RequireAndVerifyClientCert
		}
	default:
		return nil, s.errf("ssl.client.auth", "unknown value %q", mode)
	}
	return tc, nil
}

// ClientTLSConfig builds the TLS configuration this node uses to connect to
// a listener of another node (inter-broker, controller) whose protocol is
// SSL or SASL_SSL, from the same listener's ssl.* settings, as Kafka does:
// the trusted authorities (the system's when none is set), the node's
// certificate for mutual TLS, and host name verification unless
// ssl.endpoint.identification.algorithm is empty.
func ClientTLSConfig(cfg *config.Config, listener string) (*tls.Config, error) {
	s := newTLSSettings(cfg, listener)
	pool, err := s.trustPool()
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	cert, ok, err := s.keyPair()
	if err != nil {
		return nil, err
	}
	if ok {
		tc.Certificates = []tls.Certificate{cert}
	}
	if s.get("ssl.endpoint.identification.algorithm") == "" {
		// Verify the chain, not the host name.
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the server sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: pool, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return tc, nil
}
