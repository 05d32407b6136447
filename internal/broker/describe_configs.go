package broker

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// handleDescribeConfigs serves DescribeConfigs v0–v4 for topics (the
// topic's overrides over the broker defaults, with each value's source),
// this broker (static and dynamic configs) and the cluster-wide dynamic
// broker defaults (an empty broker name). Synonyms (v1+) and documentation
// (v3+) come when asked for; sensitive values are never returned. Each
// resource needs DESCRIBE_CONFIGS on its ACL resource (see
// authorizeConfigResource).
func (b *Broker) handleDescribeConfigs(ctx context.Context, rc *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.DescribeConfigsRequest)
	if !ok {
		return nil, requestTypeError("DescribeConfigs", kreq)
	}
	img := b.image()
	cfg := b.rm.Config()
	self := strconv.Itoa(int(b.cfg.NodeID))
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	synonyms := req.Version >= 1 && req.IncludeSynonyms
	docs := req.Version >= 3 && req.IncludeDocumentation
	for _, res := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		var resolved []config.ResolvedConfig
		var err error
		if aerr := authorizeConfigResource(rc, res.ResourceType, res.ResourceName, kmsg.ACLOperationDescribeConfigs); aerr != nil {
			rr.ErrorCode = aerr.Code
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		switch int8(res.ResourceType) {
		case metadata.ResourceTopic:
			if e := validateTopicName(res.ResourceName); e != nil {
				err = e
			} else if _, ok := img.Topic(res.ResourceName); !ok {
				err = errf(kerr.UnknownTopicOrPartition, "topic %s does not exist", res.ResourceName)
			} else {
				resolved = cfg.ResolveTopic(img.Configs(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: res.ResourceName}))
			}
		case metadata.ResourceBroker:
			switch res.ResourceName {
			case "":
				resolved = dynamicDefaultBrokerConfigs(img.Configs(metadata.ConfigResource{Type: metadata.ResourceBroker, Name: ""}))
			case self:
				resolved = cfg.ResolveBroker(img.Configs(metadata.ConfigResource{Type: metadata.ResourceBroker, Name: self}))
			default:
				err = errf(kerr.InvalidRequest, "unexpected broker id, expected %s or the empty string, but received %s", self, res.ResourceName)
			}
		case metadata.ResourceBrokerLogger:
			if res.ResourceName != self {
				err = errf(kerr.InvalidRequest, "unexpected broker id, expected %s, but received %s", self, res.ResourceName)
			}
		default:
			err = errf(kerr.InvalidRequest, "unsupported resource type %d", res.ResourceType)
		}
		if err != nil {
			rr.ErrorCode, rr.ErrorMessage = errorCode(err), errorMessage(err)
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		rr.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
		for _, c := range resolved {
			if res.ConfigNames != nil && !slices.Contains(res.ConfigNames, c.Name) {
				continue
			}
			rr.Configs = append(rr.Configs, describeConfigEntry(c, synonyms, docs))
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

// describeConfigEntry turns a resolved config into a response entry.
func describeConfigEntry(c config.ResolvedConfig, synonyms, docs bool) kmsg.DescribeConfigsResponseResourceConfig {
	e := kmsg.NewDescribeConfigsResponseResourceConfig()
	e.Name = c.Name
	if !c.Sensitive {
		e.Value = c.Value
	}
	e.ReadOnly = c.ReadOnly
	e.IsDefault = c.Source == config.SourceDefault
	e.Source = kmsg.ConfigSource(c.Source)
	e.IsSensitive = c.Sensitive
	e.ConfigType = kmsg.ConfigType(c.Type)
	if docs && c.Doc != "" {
		d := c.Doc
		e.Documentation = &d
	}
	if synonyms {
		for _, s := range c.Synonyms {
			sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			sy.Name, sy.Source = s.Name, kmsg.ConfigSource(s.Source)
			if !c.Sensitive {
				sy.Value = s.Value
			}
			e.ConfigSynonyms = append(e.ConfigSynonyms, sy)
		}
	}
	return e
}

// dynamicDefaultBrokerConfigs describes the cluster-wide dynamic broker
// configs, which is all Kafka reports for the empty broker name.
func dynamicDefaultBrokerConfigs(set map[string]string) []config.ResolvedConfig {
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]config.ResolvedConfig, 0, len(names))
	for _, n := range names {
		rc := config.ResolvedConfig{Name: n, Source: config.SourceDynamicDefaultBroker, Type: config.TypeString}
		if def, ok := config.BrokerDefinition(n); ok {
			rc.Type, rc.Doc, rc.Sensitive = def.Type, def.Doc, def.Sensitive
			rc.ReadOnly = def.Update == config.ReadOnly
		}
		if !rc.Sensitive {
			v := set[n]
			rc.Value = &v
		}
		rc.Synonyms = []config.Synonym{{Name: n, Value: rc.Value, Source: config.SourceDynamicDefaultBroker}}
		out = append(out, rc)
	}
	return out
}
