package mirroradmin

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kmirror/kmirror/internal/wire"
)

// DefaultTimeoutMillis is how long, by default, the cluster may take for a
// change (adding topics includes asking the source cluster about them).
const DefaultTimeoutMillis = 30000

// ClientOpts returns the options a *kgo.Client needs to send the mirror
// APIs: its stable version table plus the mirror keys at version 0. Append
// your own options (seed brokers, TLS, ...) after them; a later
// kgo.MaxVersions would replace this one.
func ClientOpts() []kgo.Opt {
	return []kgo.Opt{kgo.MaxVersions(wire.MirrorClientVersions(nil))}
}

// Client issues mirror admin requests through a franz-go client.
type Client struct {
	cl            *kgo.Client
	owned         bool
	timeoutMillis int32
	missing       error
}

// NewClient returns a Client on cl, which must have been built with
// ClientOpts (its requests fail with a clear error otherwise). Closing
// the Client does not close cl.
func NewClient(cl *kgo.Client) *Client {
	c := &Client{cl: cl, timeoutMillis: DefaultTimeoutMillis}
	v, _ := cl.OptValue(kgo.MaxVersions).(*kversion.Versions)
	if v != nil {
		for k := wire.MinMirrorKey; k <= wire.MaxMirrorKey; k++ {
			if max, ok := v.LookupMaxKeyVersion(k); !ok || max < 0 {
				c.missing = errors.New("mirroradmin: the kgo client cannot send the mirror APIs; build it with mirroradmin.ClientOpts()")
				break
			}
		}
	}
	return c
}

// NewFromAddrs returns a Client with its own franz-go client bootstrapped
// from addrs (host:port of any brokers of the destination cluster), plus
// opts. Close closes it.
func NewFromAddrs(addrs []string, opts ...kgo.Opt) (*Client, error) {
	all := append(ClientOpts(), kgo.SeedBrokers(addrs...))
	cl, err := kgo.NewClient(append(all, opts...)...)
	if err != nil {
		return nil, err
	}
	c := NewClient(cl)
	c.owned = true
	return c, nil
}

// Close closes the franz-go client if NewFromAddrs created it.
func (c *Client) Close() {
	if c.owned {
		c.cl.Close()
	}
}

// SetTimeoutMillis sets how long the cluster may take for each change
// (DefaultTimeoutMillis by default).
func (c *Client) SetTimeoutMillis(millis int32) { c.timeoutMillis = millis }
