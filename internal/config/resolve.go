package config

import (
	"maps"
	"slices"
	"strconv"
)

// Synonym is one source of a config's value, as DescribeConfigs reports it.
type Synonym struct {
	Name string
	// Value is the synonym's text at that source, nil for sensitive
	// configs.
	Value  *string
	Source ConfigSource
}

// ResolvedConfig is one config entry as DescribeConfigs reports it.
type ResolvedConfig struct {
	Name string
	// Value is the effective value's text; nil when null or sensitive.
	Value  *string
	Source ConfigSource
	// Sensitive values are never returned (Value nil).
	Sensitive bool
	// ReadOnly configs cannot be altered with AlterConfigs.
	ReadOnly bool
	Type     Type
	Doc      string
	// Synonyms list where the value could come from, most specific first,
	// in Kafka's order (the first entry is the one in effect).
	Synonyms []Synonym
}

// unitFactor converts a broker synonym's unit to its topic config's
// milliseconds.
var unitFactor = map[string]int64{
	"log.roll.hours":        3600000,
	"log.roll.jitter.hours": 3600000,
	"log.retention.minutes": 60000,
	"log.retention.hours":   3600000,
}

// brokerSynonymChain returns the broker configs that can supply a broker
// config's value, in precedence order: the name itself, then the coarser
// units Kafka falls back to.
func brokerSynonymChain(name string) []string {
	switch name {
	case "log.retention.ms":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	case "log.retention.minutes":
		return []string{"log.retention.minutes", "log.retention.hours"}
	case "log.roll.ms":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	}
	return []string{name}
}

// synonyms lists, for the broker configs names (in precedence order), every
// layer that sets them: this broker's dynamic configs (perBroker overlays
// c's), the cluster-wide dynamic defaults, the static configs, then the
// defaults, each layer in names order. This is Kafka's order, so the first
// entry is the one in effect.
func (c *Config) synonyms(names []string, perBroker map[string]string, sensitive bool) []Synonym {
	dyn := c.dynBroker
	if len(perBroker) > 0 {
		dyn = maps.Clone(c.dynBroker)
		if dyn == nil {
			dyn = map[string]string{}
		}
		maps.Copy(dyn, perBroker)
	}
	defaults := func(name string) (string, bool) {
		if v, ok := c.profile[name]; ok {
			return v, true
		}
		if d := brokerDef(name); d != nil && d.Default != nil {
			return *d.Default, true
		}
		return "", false
	}
	layers := []struct {
		get func(string) (string, bool)
		src ConfigSource
	}{
		{func(n string) (string, bool) { v, ok := dyn[n]; return v, ok }, SourceDynamicBroker},
		{func(n string) (string, bool) { v, ok := c.dynDefault[n]; return v, ok }, SourceDynamicDefaultBroker},
		{func(n string) (string, bool) { v, ok := c.static[n]; return v, ok }, SourceStaticBroker},
		{defaults, SourceDefault},
	}
	var out []Synonym
	for _, l := range layers {
		for _, n := range names {
			raw, ok := l.get(n)
			if !ok {
				continue
			}
			s := Synonym{Name: n, Source: l.src}
			if !sensitive {
				s.Value = canonical(n, raw)
			}
			out = append(out, s)
		}
	}
	return out
}

// canonical returns the canonical text of a broker config's raw value.
func canonical(name, raw string) *string {
	d := brokerDef(name)
	if d == nil {
		return &raw
	}
	v, err := parseValue(d.Type, raw)
	if err != nil {
		return &raw
	}
	return v.Text()
}

// topicValue returns a topic config's effective value for a topic with the
// given overrides, its source, and the synonyms behind it.
func (c *Config) topicValue(td *Definition, overrides map[string]string) (Value, ConfigSource, []Synonym) {
	syns := c.synonyms(td.Synonyms, nil, td.Sensitive)
	if raw, ok := overrides[td.Name]; ok {
		v, err := td.Parse(raw)
		if err == nil {
			s := Synonym{Name: td.Name, Source: SourceDynamicTopic}
			if !td.Sensitive {
				s.Value = v.Text()
			}
			return v, SourceDynamicTopic, append([]Synonym{s}, syns...)
		}
	}
	if len(syns) == 0 {
		return td.DefaultValue(), SourceDefault, nil
	}
	first := syns[0]
	raw, _ := c.rawAt(first.Name, first.Source)
	return convertSynonym(td, first.Name, raw), first.Source, syns
}

// rawAt returns the raw value of broker config name at one source layer.
func (c *Config) rawAt(name string, src ConfigSource) (string, bool) {
	var m map[string]string
	switch src {
	case SourceDynamicBroker:
		m = c.dynBroker
	case SourceDynamicDefaultBroker:
		m = c.dynDefault
	case SourceStaticBroker:
		m = c.static
	default:
		if v, ok := c.profile[name]; ok {
			return v, true
		}
		if d := brokerDef(name); d != nil && d.Default != nil {
			return *d.Default, true
		}
		return "", false
	}
	v, ok := m[name]
	return v, ok
}

// convertSynonym turns a broker synonym's raw value into the topic config's
// value, converting hours and minutes to milliseconds. A negative retention
// means unlimited, -1, as in Kafka.
func convertSynonym(td *Definition, synName, raw string) Value {
	sd := brokerDef(synName)
	if sd == nil {
		return td.DefaultValue()
	}
	sv, err := parseValue(sd.Type, raw)
	if err != nil {
		return td.DefaultValue()
	}
	switch td.Type {
	case TypeLong, TypeInt, TypeShort:
		n := sv.Long()
		if f, ok := unitFactor[synName]; ok {
			n *= f
		}
		if td.Name == "retention.ms" && n < 0 {
			n = -1
		}
		v, err := parseValue(td.Type, strconv.FormatInt(n, 10))
		if err != nil {
			return td.DefaultValue()
		}
		return v
	}
	v, err := parseValue(td.Type, sv.text)
	if err != nil {
		return td.DefaultValue()
	}
	return v
}

// ResolveTopic returns every topic config's effective value and source for a
// topic with these overrides (as stored for the topic), sorted by name, with
// the broker synonyms as DescribeConfigs reports them: the topic override
// first if any, then each broker synonym set at a layer, layer by layer
// (dynamic per broker, dynamic default, static, default) in Kafka's synonym
// order. Sensitive values are nil.
func (c *Config) ResolveTopic(overrides map[string]string) []ResolvedConfig {
	loadTables()
	out := make([]ResolvedConfig, 0, len(topicIndex))
	for _, name := range slices.Sorted(maps.Keys(topicIndex)) {
		td := topicIndex[name]
		v, src, syns := c.topicValue(td, overrides)
		rc := ResolvedConfig{
			Name: name, Source: src, Sensitive: td.Sensitive, ReadOnly: td.Internal,
			Type: td.Type, Doc: td.Doc, Synonyms: syns,
		}
		if !td.Sensitive {
			rc.Value = v.Text()
		}
		out = append(out, rc)
	}
	return out
}

// ResolveBroker returns every broker config of this node, sorted by name,
// as DescribeConfigs reports them: the value in effect and its source, with
// the synonyms that set the same setting (e.g. log.retention.ms lists itself
// and log.retention.hours) starting from the config's own name. dynamic
// holds this broker's dynamic configs from the metadata log; they take
// precedence over any applied with WithDynamic. Static listener overrides
// that are set are included. Sensitive values are nil.
func (c *Config) ResolveBroker(dynamic map[string]string) []ResolvedConfig {
	loadTables()
	names := slices.Sorted(maps.Keys(c.values))
	out := make([]ResolvedConfig, 0, len(names))
	for _, name := range names {
		def := brokerDef(name)
		override := false
		if def == nil {
			_, base, ok := BaseName(name)
			if !ok {
				continue
			}
			def, override = &base, true
		}
		syns := c.synonyms(brokerSynonymChain(name), dynamic, def.Sensitive)
		// Kafka drops the coarser synonyms that precede the config's own
		// name in the list (they belong to other configs).
		i := slices.IndexFunc(syns, func(s Synonym) bool { return s.Name == name })
		if i < 0 {
			syns = nil
		} else {
			syns = syns[i:]
		}
		rc := ResolvedConfig{
			Name: name, Source: SourceDefault, Sensitive: def.Sensitive,
			ReadOnly: def.Update == ReadOnly, Type: def.Type, Doc: def.Doc, Synonyms: syns,
		}
		if override {
			rc.Source = SourceStaticBroker
		}
		if len(syns) > 0 {
			rc.Source = syns[0].Source
		}
		v := c.values[name]
		if raw, ok := dynamic[name]; ok {
			if dv, err := def.Parse(raw); err == nil {
				v = dv
			}
		}
		if !def.Sensitive {
			rc.Value = v.Text()
		}
		out = append(out, rc)
	}
	return out
}
