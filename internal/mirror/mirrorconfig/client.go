package mirrorconfig

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/config"
)

// SourceClientOpts validates a mirror's properties and returns the options
// of a franz-go client to the source cluster: seed brokers, client id,
// timeouts and the security settings. Callers add what their use needs
// (e.g. kgo.RequestRetries, or the consumer options of a fetcher).
//
// Only PLAINTEXT is implemented so far: another security.protocol is a
// *config.ValueError (wrapping kerr.InvalidConfig) that says so, rather than a client that
// would connect without the security the operator asked for.
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
	switch c.SecurityProtocol {
	case "PLAINTEXT":
		return opts, nil
	default:
		return nil, &config.ValueError{Name: SecurityProtocol, Value: c.SecurityProtocol,
			Reason: c.SecurityProtocol + " is not supported yet: kmirror connects to source clusters with PLAINTEXT only (TLS and SASL arrive with the security work)"}
	}
}
