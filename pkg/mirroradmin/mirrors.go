package mirroradmin

import (
	"context"
	"maps"
	"slices"

	"github.com/kmirror/kmirror/internal/wire"
)

// CreateMirror creates a mirror named name whose source cluster is
// described by configs: Kafka client properties, bootstrap.servers
// required (see docs/mirroring.md for the list). The first mirror also
// creates the internal topic __mirror_state. Secrets (sasl.password, ...)
// are stored but never returned by DescribeMirrors.
func (c *Client) CreateMirror(ctx context.Context, name string, configs map[string]string) error {
	return c.createMirror(ctx, name, configs, false)
}

// ValidateCreateMirror checks a CreateMirror without creating anything.
func (c *Client) ValidateCreateMirror(ctx context.Context, name string, configs map[string]string) error {
	return c.createMirror(ctx, name, configs, true)
}

func (c *Client) createMirror(ctx context.Context, name string, configs map[string]string, validateOnly bool) error {
	if c.missing != nil {
		return c.missing
	}
	req := &wire.CreateMirrorRequest{MirrorName: name, ValidateOnly: validateOnly, TimeoutMillis: c.timeoutMillis}
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		v := configs[k]
		req.Configs = append(req.Configs, wire.CreateMirrorRequestConfig{Name: k, Value: &v})
	}
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return err
	}
	return errorFor(resp.ErrorCode, resp.ErrorMessage)
}

// DeleteMirror deletes a mirror. It is refused while any of its topics is
// mirroring or paused, or still failing over; the name can be used again
// afterwards.
func (c *Client) DeleteMirror(ctx context.Context, name string) error {
	if c.missing != nil {
		return c.missing
	}
	req := &wire.DeleteMirrorRequest{MirrorName: name, TimeoutMillis: c.timeoutMillis}
	resp, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return err
	}
	return errorFor(resp.ErrorCode, resp.ErrorMessage)
}

// MirrorListing is one mirror as ListMirrors reports it.
type MirrorListing struct {
	// Name is the mirror's name.
	Name string `json:"name"`
	// SourceBootstrapServers is the mirror's bootstrap.servers.
	SourceBootstrapServers string `json:"source_bootstrap_servers"`
	// TopicCount counts the topics in the mirror, paused and removed ones
	// included.
	TopicCount int `json:"topic_count"`
}

// MirrorListings are the mirrors of a cluster, sorted by name.
type MirrorListings []MirrorListing

// Names returns the mirrors' names.
func (ls MirrorListings) Names() []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.Name)
	}
	return out
}

// ListMirrors lists the cluster's mirrors.
func (c *Client) ListMirrors(ctx context.Context) (MirrorListings, error) {
	if c.missing != nil {
		return nil, c.missing
	}
	resp, err := new(wire.ListMirrorsRequest).RequestWith(ctx, c.cl)
	if err != nil {
		return nil, err
	}
	if err := errorFor(resp.ErrorCode, nil); err != nil {
		return nil, err
	}
	out := make(MirrorListings, 0, len(resp.Mirrors))
	for _, m := range resp.Mirrors {
		out = append(out, MirrorListing{Name: m.Name, SourceBootstrapServers: m.SourceBootstrapServers, TopicCount: int(m.TopicCount)})
	}
	return out, nil
}
