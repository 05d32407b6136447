package broker

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// Quota filter match types (DescribeClientQuotas).
const (
	quotaMatchExact     = 0 // the component's name is Match
	quotaMatchDefault   = 1 // the component is its type's default
	quotaMatchSpecified = 2 // any named (not default) component of the type
)

// describeClientQuotas answers DescribeClientQuotas (key 48) from this
// broker's metadata image, with Kafka's filter rules: each filter
// component selects entities that have a component of its type matching it
// (an exact name, the default, or any name); with Strict an entity must
// have no other components. A type filtered twice, an unknown match type,
// an exact match without a name, or an ip filter combined with another
// type is INVALID_REQUEST.
func (s securityService) describeClientQuotas(_ context.Context, _ *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.DescribeClientQuotasRequest)
	if !ok {
		return nil, requestTypeError("DescribeClientQuotas", kreq)
	}
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	resp.Version = req.Version
	if err := validateQuotaFilter(req.Components); err != nil {
		resp.ErrorCode, resp.ErrorMessage = wire.ErrorCode(err), wire.ErrorMessage(err)
		return resp, nil
	}
	// Entries is nullable: null means the request failed, so a success
	// with no match is an empty array (Kafka's Admin client counts on it).
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, q := range s.b.rm.Image().ClientQuotas() {
		if !quotaFilterMatches(req.Components, req.Strict, q.Entity) {
			continue
		}
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, c := range q.Entity {
			ec := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ec.Type = c.Type
			if !c.Default {
				ec.Name = kmsg.StringPtr(c.Name)
			}
			e.Entity = append(e.Entity, ec)
		}
		keys := make([]string, 0, len(q.Values))
		for k := range q.Values {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, q.Values[k]
			e.Values = append(e.Values, v)
		}
		resp.Entries = append(resp.Entries, e)
	}
	return resp, nil
}

func validateQuotaFilter(cs []kmsg.DescribeClientQuotasRequestComponent) error {
	seen := map[string]bool{}
	for _, c := range cs {
		switch c.EntityType {
		case metadata.QuotaEntityUser, metadata.QuotaEntityClientID, metadata.QuotaEntityIP:
		default:
			return errf(kerr.InvalidRequest, "Custom entity type '%s' not supported", c.EntityType)
		}
		if seen[c.EntityType] {
			return errf(kerr.InvalidRequest, "Entity type %s cannot appear more than once in the filter.", c.EntityType)
		}
		seen[c.EntityType] = true
		switch int8(c.MatchType) {
		case quotaMatchExact:
			if c.Match == nil {
				return errf(kerr.InvalidRequest, "Entity type %s match with exact name requires a name", c.EntityType)
			}
		case quotaMatchDefault, quotaMatchSpecified:
		default:
			return errf(kerr.InvalidRequest, "Unknown match type %d", c.MatchType)
		}
	}
	if seen[metadata.QuotaEntityIP] && len(seen) > 1 {
		return errf(kerr.InvalidRequest, "Invalid entity filter component combination, IP filter component should not be used with user or clientId filter component.")
	}
	return nil
}

// quotaFilterMatches says whether an entity passes a (valid) filter.
func quotaFilterMatches(cs []kmsg.DescribeClientQuotasRequestComponent, strict bool, e metadata.QuotaEntity) bool {
	if strict && len(e) != len(cs) {
		return false
	}
	for _, c := range cs {
		i := slices.IndexFunc(e, func(x metadata.QuotaComponent) bool { return x.Type == c.EntityType })
		if i < 0 {
			return false
		}
		ec := e[i]
		switch int8(c.MatchType) {
		case quotaMatchExact:
			if ec.Default || ec.Name != *c.Match {
				return false
			}
		case quotaMatchDefault:
			if !ec.Default {
				return false
			}
		case quotaMatchSpecified:
			if ec.Default {
				return false
			}
		}
	}
	return true
}
