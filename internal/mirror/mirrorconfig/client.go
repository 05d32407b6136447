package mirrorconfig

import (
	"github.com/twmb/franz-go/pkg/kgo"
)

// SourceClientOpts validates a mirror's properties and returns the options
// of a franz-go client to the source cluster: seed brokers, client id,
// timeouts and the security settings (TLS with the configured authorities
// and client certificate, SASL PLAIN or SCRAM with the mirror's login).
// Callers add what their use needs (e.g. kgo.RequestRetries, or the
// consumer options of a fetcher).
//
// It reads the certificate and key files the properties name, so it fails
// (with a *config.ValueError wrapping kerr.InvalidConfig that names the
// property, never a secret) when one is missing or unusable here.
func SourceClientOpts(props map[string]string) ([]kgo.Opt, error) {
	c, err := Parse(props)
	if err != nil {
		return nil, err
	}
	return c.ClientOpts()
}

// ClientOpts is SourceClientOpts for a parsed configuration.
func (c *Config) ClientOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(c.BootstrapServers...),
		kgo.ClientID(c.ClientID),
		kgo.DialTimeout(c.DialTimeout),
		kgo.ConnIdleTimeout(c.ConnectionsMaxIdle),
		kgo.MetadataMaxAge(c.MetadataMaxAge),
	}
	if usesTLS(c.SecurityProtocol) {
		tc, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if usesSASL(c.SecurityProtocol) {
		m, err := c.saslMechanism()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}
