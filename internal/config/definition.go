package config

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Definition describes one config: everything the loader, the validators,
// DescribeConfigs and the documentation generator need.
type Definition struct {
	// Name is the config's name, Kafka's where Kafka has the setting.
	Name string
	// Scope says whether this is a broker or a topic config.
	Scope Scope
	// Type is the value type.
	Type Type
	// Default is the default text, nil when the config has no default
	// (its value is null unless set).
	Default *string
	// Validator checks non-null values; nil accepts any value of Type.
	Validator Validator
	// Importance ranks the config in the documentation.
	Importance Importance
	// Doc explains what the config does, for operators.
	Doc string
	// Sensitive values (passwords, JAAS configs, private keys) are never
	// returned by DescribeConfigs nor printed.
	Sensitive bool
	// Update is how a broker config can change at run time. Topic configs
	// are always alterable per topic and leave it ReadOnly.
	Update UpdateMode
	// Synonyms are, for a topic config, the broker configs that supply its
	// default, in Kafka's precedence (the first one set wins), e.g.
	// retention.ms ← log.retention.ms, log.retention.minutes,
	// log.retention.hours.
	Synonyms []string
	// Internal marks a topic config that only kmirror itself sets
	// (mirror.name, set by the mirror APIs): CreateTopics and AlterConfigs
	// from clients may not set it.
	Internal bool
	// Kmirror marks a config that Apache Kafka does not have.
	Kmirror bool
}

// DefaultValue returns the parsed default (null when Default is nil).
func (d *Definition) DefaultValue() Value {
	if d.Default == nil {
		return Null(d.Type)
	}
	v, err := parseValue(d.Type, *d.Default)
	if err != nil {
		return Null(d.Type) // impossible for the table; a test checks every default
	}
	return v
}

// Parse parses raw as this config's value and validates it. The error is a
// *ValueError naming the config, the value and the rule.
func (d *Definition) Parse(raw string) (Value, error) {
	v, err := parseValue(d.Type, raw)
	if err != nil {
		return v, &ValueError{Name: d.Name, Value: raw, Reason: err.Error(), Sensitive: d.Sensitive}
	}
	if d.Validator != nil {
		if err := d.Validator.Validate(v); err != nil {
			return v, &ValueError{Name: d.Name, Value: raw, Reason: err.Error(), Sensitive: d.Sensitive}
		}
	}
	return v, nil
}

// ValidValues describes the accepted values for the documentation ("" when
// any value of the type is accepted).
func (d *Definition) ValidValues() string {
	if d.Validator == nil {
		return ""
	}
	return d.Validator.String()
}

func str(s string) *string { return &s }

var (
	tableOnce   sync.Once
	brokerIndex map[string]*Definition
	topicIndex  map[string]*Definition
	allDefs     []Definition
)

func loadTables() {
	tableOnce.Do(func() {
		allDefs = append(append([]Definition(nil), brokerDefinitions()...), topicDefinitions()...)
		brokerIndex = make(map[string]*Definition)
		topicIndex = make(map[string]*Definition)
		for i := range allDefs {
			d := &allDefs[i]
			if d.Type == TypePassword {
				d.Sensitive = true
			}
			idx := brokerIndex
			if d.Scope == TopicScope {
				idx = topicIndex
			}
			if _, dup := idx[d.Name]; dup {
				panic("config: duplicate definition " + d.Name) // table bug, caught by any test
			}
			idx[d.Name] = d
		}
	})
}

// Definitions returns every definition, broker configs then topic configs,
// each group sorted by name. The slice is a copy, but Default and Synonyms
// point into the table and must not be modified.
func Definitions() []Definition {
	loadTables()
	out := slices.Clone(allDefs)
	slices.SortStableFunc(out, func(a, b Definition) int {
		if a.Scope != b.Scope {
			return int(a.Scope) - int(b.Scope)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// BrokerDefinition returns the broker config called name. Listener-prefixed
// names (listener.name.<listener>.<config>) are not definitions of their
// own; see BaseName.
func BrokerDefinition(name string) (Definition, bool) {
	loadTables()
	d, ok := brokerIndex[name]
	if !ok {
		return Definition{}, false
	}
	return *d, true
}

// TopicDefinition returns the topic config called name.
func TopicDefinition(name string) (Definition, bool) {
	loadTables()
	d, ok := topicIndex[name]
	if !ok {
		return Definition{}, false
	}
	return *d, true
}

func brokerDef(name string) *Definition {
	loadTables()
	return brokerIndex[name]
}

func topicDef(name string) *Definition {
	loadTables()
	return topicIndex[name]
}

// listenerPrefix starts a per-listener override.
const listenerPrefix = "listener.name."

// BaseName splits a per-listener override "listener.name.<listener>.<config>"
// (optionally "listener.name.<listener>.<mechanism>.<sasl config>") into the
// listener name (upper-cased, as listener names are compared) and the
// broker definition it overrides. ok is false when name is not such an
// override or the config part is not a broker config.
func BaseName(name string) (listener string, def Definition, ok bool) {
	rest, found := strings.CutPrefix(name, listenerPrefix)
	if !found {
		return "", Definition{}, false
	}
	l, key, found := strings.Cut(rest, ".")
	if !found || l == "" {
		return "", Definition{}, false
	}
	if d := brokerDef(key); d != nil {
		return strings.ToUpper(l), *d, true
	}
	// SASL settings may be scoped to a mechanism: <mechanism>.sasl.*.
	if _, saslKey, found := strings.Cut(key, "."); found && strings.HasPrefix(saslKey, "sasl.") {
		if d := brokerDef(saslKey); d != nil {
			return strings.ToUpper(l), *d, true
		}
	}
	return "", Definition{}, false
}

// ValueError is an invalid config value. It names the config, the value (not
// for sensitive configs) and the rule, and wraps kerr.InvalidConfig so that a
// handler can answer with Kafka's INVALID_CONFIG code.
type ValueError struct {
	Name      string
	Value     string
	Reason    string
	Sensitive bool
	// Origin says where the value was set when not in the file, e.g.
	// "environment KMIRROR_LOG_SEGMENT_BYTES"; empty otherwise.
	Origin string
}

// Error returns e.g. "log.segment.bytes: 12 is below the minimum 14".
func (e *ValueError) Error() string {
	reason := e.Reason
	if e.Sensitive {
		reason = "invalid value (hidden: sensitive config)"
	}
	s := fmt.Sprintf("%s: %s", e.Name, reason)
	if e.Origin != "" {
		s += " (set by " + e.Origin + ")"
	}
	return s
}

// Unwrap returns kerr.InvalidConfig.
func (e *ValueError) Unwrap() error { return errInvalidConfig }
