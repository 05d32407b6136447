package mirrorconfig

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/config"
)

// This file turns a mirror's security properties into the TLS and SASL
// settings of its source client. Parse checks that the properties fit
// together (checkSecurity); ClientOpts reads the files they name, on the
// broker that connects, every time it builds a client, so that a renewed
// certificate is picked up by the next connection attempt.
//
// No error built here quotes a password, a JAAS text or the bytes of a key
// or certificate file: they name the property and the problem.

// usesTLS and usesSASL classify a security protocol (upper case).
func usesTLS(protocol string) bool  { return protocol == "SSL" || protocol == "SASL_SSL" }
func usesSASL(protocol string) bool { return protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL" }

// loginModules are the JAAS login modules each mechanism takes.
var loginModules = map[string]string{
	"PLAIN":         auth.PlainLoginModule,
	"SCRAM-SHA-256": auth.ScramLoginModule,
	"SCRAM-SHA-512": auth.ScramLoginModule,
}

// credentials are a SASL login.
type credentials struct {
	user, pass string
}

// checkSecurity validates the combination of the security properties of a
// mirror whose security.protocol is protocol. Properties of a layer the
// protocol does not use (sasl.* with SSL, ssl.* with SASL_PLAINTEXT) are
// ignored, as Kafka's clients do.
func checkSecurity(values map[string]config.Value, protocol string) error {
	if usesSASL(protocol) {
		if _, err := saslLogin(values, protocol); err != nil {
			return err
		}
	}
	if usesTLS(protocol) {
		if err := checkTLS(values); err != nil {
			return err
		}
	}
	return nil
}

// saslLogin returns the login of a SASL protocol: sasl.username and
// sasl.password, or the username and password options of sasl.jaas.config
// (whose login module must be the mechanism's).
func saslLogin(values map[string]config.Value, protocol string) (credentials, error) {
	mech := values[SASLMechanism].Str()
	if mech == "" {
		return credentials{}, &config.ValueError{Name: SASLMechanism,
			Reason: "is required with security.protocol=" + protocol + ": PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"}
	}
	user, pass := values[SASLUsername].Str(), values[SASLPassword].Password()
	jaas := values[SASLJAASConfig].Password()
	switch {
	case jaas != "" && (user != "" || pass != ""):
		return credentials{}, &config.ValueError{Name: SASLJAASConfig,
			Reason: "set either sasl.jaas.config or sasl.username and sasl.password, not both"}
	case jaas != "":
		j, err := auth.ParseJAAS(jaas)
		if err != nil {
			// auth.ParseJAAS never quotes a value of the text.
			return credentials{}, &config.ValueError{Name: SASLJAASConfig, Reason: strings.TrimPrefix(err.Error(), SASLJAASConfig+": ")}
		}
		if want := loginModules[mech]; j.LoginModule != want {
			return credentials{}, &config.ValueError{Name: SASLJAASConfig,
				Reason: fmt.Sprintf("sasl.mechanism %s needs the login module %s, not %s", mech, want, j.LoginModule)}
		}
		user, pass = j.Options["username"], j.Options["password"]
		if user == "" || pass == "" {
			return credentials{}, &config.ValueError{Name: SASLJAASConfig, Reason: "needs the username and password options of the mirror's login"}
		}
	case user == "":
		return credentials{}, &config.ValueError{Name: SASLUsername,
			Reason: "is required with security.protocol=" + protocol + " (or give sasl.jaas.config)"}
	case pass == "":
		return credentials{}, &config.ValueError{Name: SASLPassword,
			Reason: "is required with security.protocol=" + protocol + " (or give sasl.jaas.config)"}
	}
	return credentials{user: user, pass: pass}, nil
}

// checkTLS refuses combinations of TLS properties kmirror cannot honour or
// that contradict each other.
func checkTLS(values map[string]config.Value) error {
	set := func(name string) bool { return values[name].Str() != "" }
	switch {
	case set(SSLCALocation) && set(SSLTruststoreLocation):
		return &config.ValueError{Name: SSLTruststoreLocation, Reason: "set either ssl.ca.location or ssl.truststore.location, not both"}
	case set(SSLTruststoreLocation) && !strings.EqualFold(values[SSLTruststoreType].Str(), "PEM"):
		return &config.ValueError{Name: SSLTruststoreType,
			Reason: values[SSLTruststoreType].Str() + " trust stores are not supported: convert it to PEM (ssl.truststore.type=PEM) or use ssl.ca.location"}
	case set(SSLKeystoreLocation) && (set(SSLCertificateLocation) || set(SSLKeyLocation)):
		return &config.ValueError{Name: SSLKeystoreLocation, Reason: "set either ssl.keystore.location or ssl.certificate.location and ssl.key.location, not both"}
	case set(SSLKeystoreLocation) && !strings.EqualFold(values[SSLKeystoreType].Str(), "PEM"):
		return &config.ValueError{Name: SSLKeystoreType,
			Reason: values[SSLKeystoreType].Str() + " key stores are not supported: convert it to PEM (ssl.keystore.type=PEM) or use ssl.certificate.location and ssl.key.location"}
	case set(SSLCertificateLocation) != set(SSLKeyLocation):
		missing := SSLKeyLocation
		if !set(SSLCertificateLocation) {
			missing = SSLCertificateLocation
		}
		return &config.ValueError{Name: missing, Reason: "is required for a client certificate: give both ssl.certificate.location and ssl.key.location"}
	}
	return nil
}

// saslMechanism returns the client mechanism of a SASL protocol.
func (c *Config) saslMechanism() (sasl.Mechanism, error) {
	login, err := saslLogin(c.values, c.SecurityProtocol)
	if err != nil {
		return nil, err
	}
	switch c.SASLMechanism {
	case "PLAIN":
		return plain.Auth{User: login.user, Pass: login.pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: login.user, Pass: login.pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: login.user, Pass: login.pass}.AsSha512Mechanism(), nil
	}
	return nil, &config.ValueError{Name: SASLMechanism, Value: c.SASLMechanism, Reason: "is not implemented"}
}

// tlsConfig returns the TLS settings of an SSL or SASL_SSL source: the
// trusted authorities (the system's when none is given), the client
// certificate for mutual TLS, and host name verification unless
// ssl.endpoint.identification.algorithm is empty (then only the chain is
// verified). franz-go sets the server name of each connection to the host
// it dials.
func (c *Config) tlsConfig() (*tls.Config, error) {
	if err := checkTLS(c.values); err != nil {
		return nil, err
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if from := firstSet(c.values, SSLCALocation, SSLTruststoreLocation); from != "" {
		b, err := readFile(from, c.values[from].Str())
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, &config.ValueError{Name: from, Reason: "holds no PEM certificate"}
		}
		tc.RootCAs = pool
	}
	cert, ok, err := c.clientCertificate()
	if err != nil {
		return nil, err
	}
	if ok {
		tc.Certificates = []tls.Certificate{cert}
	}
	if c.values[SSLEndpointIdentification].Str() == "" {
		// Verify the chain, not the name: crypto/tls checks both or
		// neither, so skip its check and do the chain here.
		roots := tc.RootCAs
		tc.InsecureSkipVerify = true
		tc.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChain(raw, roots)
		}
	}
	return tc, nil
}

// verifyChain checks that the peer's certificate chains to roots (the
// system's when nil) for server authentication, whatever names it holds.
func verifyChain(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return fmt.Errorf("the source broker sent no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, b := range raw {
		c, err := x509.ParseCertificate(b)
		if err != nil {
			return fmt.Errorf("the source broker's certificate does not parse: %w", err)
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

// clientCertificate loads the client certificate and key: from
// ssl.certificate.location and ssl.key.location, or from one PEM key store.
// ok is false when none is configured.
func (c *Config) clientCertificate() (cert tls.Certificate, ok bool, err error) {
	var certPEM, keyPEM []byte
	certFrom, keyFrom := SSLCertificateLocation, SSLKeyLocation
	switch {
	case c.values[SSLCertificateLocation].Str() != "":
		if certPEM, err = readFile(SSLCertificateLocation, c.values[SSLCertificateLocation].Str()); err != nil {
			return cert, false, err
		}
		if keyPEM, err = readFile(SSLKeyLocation, c.values[SSLKeyLocation].Str()); err != nil {
			return cert, false, err
		}
	case c.values[SSLKeystoreLocation].Str() != "":
		certFrom, keyFrom = SSLKeystoreLocation, SSLKeystoreLocation
		b, err := readFile(SSLKeystoreLocation, c.values[SSLKeystoreLocation].Str())
		if err != nil {
			return cert, false, err
		}
		certPEM, keyPEM = b, b
	default:
		return cert, false, nil
	}
	if encryptedKey(keyPEM) {
		return cert, false, &config.ValueError{Name: keyFrom,
			Reason: "holds an encrypted private key, which kmirror does not read: store it unencrypted (openssl pkcs8 -nocrypt) and protect the file with permissions"}
	}
	cert, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// crypto/tls describes the PEM structure, never key bytes.
		return cert, false, &config.ValueError{Name: certFrom, Reason: "client certificate and key: " + err.Error()}
	}
	return cert, true, nil
}

// encryptedKey reports whether a PEM text holds an encrypted private key
// (PKCS#8 "ENCRYPTED PRIVATE KEY", or a legacy block with a DEK-Info
// header).
func encryptedKey(b []byte) bool {
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return false
		}
		if blk.Type == "ENCRYPTED PRIVATE KEY" || (strings.HasSuffix(blk.Type, "PRIVATE KEY") && blk.Headers["DEK-Info"] != "") {
			return true
		}
	}
}

// firstSet returns the first of names whose value is set, "" if none.
func firstSet(values map[string]config.Value, names ...string) string {
	for _, n := range names {
		if values[n].Str() != "" {
			return n
		}
	}
	return ""
}

// readFile reads the file a property names; errors name the property and
// the file, never its contents.
func readFile(prop, path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &config.ValueError{Name: prop, Reason: err.Error()}
	}
	return b, nil
}
