package mirror

import (
	"crypto/tls"
	"crypto/x509"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A source that refuses the mirror's connection for security reasons —
// wrong credentials, an untrusted or mismatched certificate, a principal
// without the rights it needs, unusable security properties — does not
// change its mind when asked again with the same properties. Such errors
// put a partition in FAILED at once (not in PREPARING's quick retries),
// with a message that names the cause and the properties to check; FAILED
// retries after its backoff, and a change of the mirror's properties
// (IncrementalAlterConfigs on the MIRROR resource) starts the partitions
// over with the new ones at once. Messages come from the source's answer
// or the TLS stack: neither holds a password.

// sourceSecurityCause returns what the source's refusal means, "" when err
// is not a security refusal.
func sourceSecurityCause(err error) string {
	if err == nil {
		return ""
	}
	var (
		unknownCA  x509.UnknownAuthorityError
		hostname   x509.HostnameError
		invalid    x509.CertificateInvalidError
		verify     *tls.CertificateVerificationError
		alert      tls.AlertError
		recordHead tls.RecordHeaderError
	)
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return "the source refused the mirror's SASL login (check sasl.username and sasl.password, or sasl.jaas.config, and sasl.mechanism)"
	case errors.Is(err, kerr.UnsupportedSaslMechanism), errors.Is(err, kerr.IllegalSaslState):
		return "the source does not accept the mirror's SASL mechanism (check sasl.mechanism and security.protocol)"
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		return "the source refused the mirror's principal access to a topic (it needs READ and DESCRIBE on the mirrored topics)"
	case errors.Is(err, kerr.ClusterAuthorizationFailed):
		return "the source refused the mirror's principal a cluster operation (it needs DESCRIBE on the source's cluster)"
	case errors.Is(err, kerr.GroupAuthorizationFailed):
		return "the source refused the mirror's principal access to a group (the offset sync needs DESCRIBE on the groups)"
	case errors.As(err, &unknownCA):
		return "the source's certificate is not signed by an authority the mirror trusts (check ssl.ca.location)"
	case errors.As(err, &hostname):
		return "the source's certificate does not name the host the mirror connected to (check bootstrap.servers, or ssl.endpoint.identification.algorithm)"
	case errors.As(err, &invalid):
		return "the source's certificate is not valid (expired, not yet valid, or not for server use)"
	case errors.As(err, &verify):
		return "the source's certificate could not be verified (check ssl.ca.location)"
	case errors.As(err, &alert):
		return "the source refused the TLS handshake (a client certificate it requires or does not trust: check ssl.certificate.location and ssl.key.location)"
	case errors.As(err, &recordHead):
		return "the source did not answer with TLS (check security.protocol and bootstrap.servers)"
	case errors.Is(err, kerr.InvalidConfig):
		return "the mirror's properties cannot be used on this broker"
	}
	return ""
}

// explainSourceError returns err's message, preceded by its cause when it
// is a security refusal.
func explainSourceError(err error) string {
	if cause := sourceSecurityCause(err); cause != "" {
		return cause + ": " + err.Error()
	}
	return err.Error()
}

// failIfRefused fails every partition the source fetches for when err is a
// security refusal: a MIRRORING partition that resumed with new properties
// (or whose source changed its mind) learns of it from the source link,
// not from PREPARING.
func (s *source) failIfRefused(err error) {
	if sourceSecurityCause(err) == "" {
		return
	}
	msg := explainSourceError(err)
	s.mu.Lock()
	drivers := make([]*driver, 0, len(s.fetching))
	for _, e := range s.fetching {
		drivers = append(drivers, e.d)
	}
	s.mu.Unlock()
	for _, d := range drivers {
		d.post(Event{Kind: EvFailed, Err: msg})
	}
}
