package mirrorconfig

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kmirror/kmirror/internal/config"
)

// Config is a mirror's validated properties with the defaults applied.
type Config struct {
	// BootstrapServers are the source brokers to start from.
	BootstrapServers []string
	// ClientID is what the mirror's source connections call themselves.
	ClientID string
	// SecurityProtocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, upper
	// case.
	SecurityProtocol string
	// SASLMechanism is "" when unset.
	SASLMechanism string
	// ConnectionsMaxIdle, MetadataMaxAge and DialTimeout tune the source
	// client.
	ConnectionsMaxIdle, MetadataMaxAge, DialTimeout time.Duration
	// SyncTopicConfigs, SyncTopicPartitions, SyncGroupOffsets and
	// SyncTopicACLs switch the periodic syncs on or off.
	SyncTopicConfigs, SyncTopicPartitions, SyncGroupOffsets, SyncTopicACLs bool
	// Groups and GroupsExclude select the groups whose offsets (and ACLs)
	// are synced; each expression matches a whole group id.
	Groups, GroupsExclude []*regexp.Regexp
	// ACLPrincipals and ACLPrincipalsExclude select the principals whose
	// ACLs are synced; each expression matches a whole principal.
	ACLPrincipals, ACLPrincipalsExclude []*regexp.Regexp
	// values holds every property, defaults included, for the security
	// settings that SourceClientOpts reads.
	values map[string]config.Value
}

// Parse validates a mirror's properties and returns them with the defaults
// applied. An unknown property, a value that does not parse or validate, and
// a missing bootstrap.servers are errors that wrap kerr.InvalidConfig and
// name the property (never a secret's value). Properties are checked in
// name order and the first problem is returned.
func Parse(props map[string]string) (*Config, error) {
	values := map[string]config.Value{}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		d, ok := Lookup(name)
		if !ok {
			return nil, &config.ValueError{Name: name, Reason: "unknown mirror property" + hint(name)}
		}
		v, err := d.Parse(props[name])
		if err != nil {
			return nil, err
		}
		values[name] = v
	}
	if _, ok := values[BootstrapServers]; !ok {
		return nil, &config.ValueError{Name: BootstrapServers, Reason: "is required: the source cluster's brokers as host:port,..."}
	}
	for _, d := range Definitions() {
		if _, set := values[d.Name]; !set {
			values[d.Name] = d.DefaultValue()
		}
	}
	ms := func(name string) time.Duration { return time.Duration(values[name].Long()) * time.Millisecond }
	c := &Config{
		BootstrapServers:     values[BootstrapServers].List(),
		ClientID:             values[ClientID].Str(),
		SecurityProtocol:     strings.ToUpper(values[SecurityProtocol].Str()),
		SASLMechanism:        values[SASLMechanism].Str(),
		ConnectionsMaxIdle:   ms(ConnectionsMaxIdleMs),
		MetadataMaxAge:       ms(MetadataMaxAgeMs),
		DialTimeout:          ms(SocketConnectionSetupTimeoutMs),
		SyncTopicConfigs:     values[SyncTopicConfigsEnabled].Bool(),
		SyncTopicPartitions:  values[SyncTopicPartitionsEnabled].Bool(),
		SyncGroupOffsets:     values[SyncGroupOffsetsEnabled].Bool(),
		SyncTopicACLs:        values[SyncTopicACLsEnabled].Bool(),
		Groups:               compileAll(values[Groups].List()),
		GroupsExclude:        compileAll(values[GroupsExclude].List()),
		ACLPrincipals:        compileAll(values[ACLPrincipals].List()),
		ACLPrincipalsExclude: compileAll(values[ACLPrincipalsExclude].List()),
		values:               values,
	}
	if err := checkSecurity(values, c.SecurityProtocol); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate checks a mirror's properties as Parse does.
func Validate(props map[string]string) error {
	_, err := Parse(props)
	return err
}

// SyncsGroup reports whether the offsets of group are synced: it matches
// Groups and not GroupsExclude.
func (c *Config) SyncsGroup(group string) bool {
	return matchAny(c.Groups, group) && !matchAny(c.GroupsExclude, group)
}

// SyncsACLPrincipal reports whether the ACLs of principal (e.g.
// "User:alice") are synced: it matches ACLPrincipals and not
// ACLPrincipalsExclude.
func (c *Config) SyncsACLPrincipal(principal string) bool {
	return matchAny(c.ACLPrincipals, principal) && !matchAny(c.ACLPrincipalsExclude, principal)
}

func matchAny(rs []*regexp.Regexp, s string) bool {
	return slices.ContainsFunc(rs, func(r *regexp.Regexp) bool { return r.MatchString(s) })
}

// compileAll compiles whole-name expressions the table's validator already
// accepted.
func compileAll(patterns []string) []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, p := range patterns {
		if p == "" {
			continue
		}
		if r, err := regexp.Compile("^(?:" + p + ")$"); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// hint suggests the property a misspelt or prefixed name probably meant.
func hint(name string) string {
	trimmed := strings.TrimPrefix(strings.TrimPrefix(name, "mirror."), "source.")
	if trimmed != name {
		if _, ok := Lookup(trimmed); ok {
			return "; did you mean " + trimmed + "?"
		}
	}
	return ""
}

// Entry is one stored property as a Describe call reports it.
type Entry struct {
	// Name is the property name.
	Name string
	// Value is the stored text; nil for a secret.
	Value *string
	// Sensitive marks a secret, whose value is never returned.
	Sensitive bool
}

// Describe returns a mirror's stored properties, sorted by name, with every
// secret's value nil: what DescribeMirrors returns.
func Describe(props map[string]string) []Entry {
	out := make([]Entry, 0, len(props))
	for _, name := range slices.Sorted(maps.Keys(props)) {
		e := Entry{Name: name, Sensitive: IsSensitive(name)}
		if !e.Sensitive {
			v := props[name]
			e.Value = &v
		}
		out = append(out, e)
	}
	return out
}

// Hidden replaces a secret's value in Redact's output.
const Hidden = "[hidden]"

// Redact returns a copy of props with every secret's value replaced by
// Hidden, for logs and messages.
func Redact(props map[string]string) map[string]string {
	out := make(map[string]string, len(props))
	for k, v := range props {
		if IsSensitive(k) {
			v = Hidden
		}
		out[k] = v
	}
	return out
}
