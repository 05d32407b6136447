package metadata

import "strconv"

// Config resource types: Kafka's ConfigResource.Type values, plus
// ResourceMirror, kmirror's own.
const (
	ResourceUnknown       int8 = 0
	ResourceTopic         int8 = 2
	ResourceBroker        int8 = 4
	ResourceBrokerLogger  int8 = 8
	ResourceClientMetrics int8 = 16
	ResourceGroup         int8 = 32
	// ResourceMirror holds a cluster mirror's configuration (source
	// bootstrap servers, security, sync options), one resource per mirror
	// name. 64 is unused by Kafka; Kafka's values are powers of two, and a
	// Kafka tool that meets 64 reports an unknown resource type rather than
	// misreading it.
	ResourceMirror int8 = 64
)

// MirrorNameConfig is the topic config that makes a topic a member of a
// mirror: its value is the mirror's name (DESIGN §5).
const MirrorNameConfig = "mirror.name"

// ConfigResource names a set of configs: a topic, a broker (Name is the
// broker id in decimal, or "" for the cluster-wide default), a mirror, ...
type ConfigResource struct {
	Type int8
	Name string
}

// String returns a readable form such as "TOPIC:orders".
func (c ConfigResource) String() string {
	return ResourceTypeName(c.Type) + ":" + c.Name
}

// ResourceTypeName returns Kafka's name of a config resource type.
func ResourceTypeName(t int8) string {
	switch t {
	case ResourceTopic:
		return "TOPIC"
	case ResourceBroker:
		return "BROKER"
	case ResourceBrokerLogger:
		return "BROKER_LOGGER"
	case ResourceClientMetrics:
		return "CLIENT_METRICS"
	case ResourceGroup:
		return "GROUP"
	case ResourceMirror:
		return "MIRROR"
	}
	return "UNKNOWN(" + strconv.Itoa(int(t)) + ")"
}

func knownResourceType(t int8) bool {
	switch t {
	case ResourceTopic, ResourceBroker, ResourceBrokerLogger, ResourceClientMetrics, ResourceGroup, ResourceMirror:
		return true
	}
	return false
}

// ConfigRecord sets one config key of a resource, or removes it when Remove
// is set (a null value on the wire).
type ConfigRecord struct {
	ResourceType int8
	ResourceName string
	Name         string
	Value        string // ignored when Remove
	Remove       bool
}

// SetConfig returns a record that sets name=value on res.
func SetConfig(res ConfigResource, name, value string) *ConfigRecord {
	return &ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: name, Value: value}
}

// RemoveConfig returns a record that removes name from res.
func RemoveConfig(res ConfigResource, name string) *ConfigRecord {
	return &ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: name, Remove: true}
}

// Resource returns the resource the record changes.
func (x *ConfigRecord) Resource() ConfigResource {
	return ConfigResource{Type: x.ResourceType, Name: x.ResourceName}
}

// Type implements Record.
func (*ConfigRecord) Type() RecordType { return TypeConfig }

// Version implements Record.
func (*ConfigRecord) Version() int16 { return 0 }

func (x *ConfigRecord) appendFields(b []byte) []byte {
	b = appendInt8(b, x.ResourceType)
	b = appendCompactString(b, x.ResourceName)
	b = appendCompactString(b, x.Name)
	if x.Remove {
		b = appendUvarint(b, 0)
	} else {
		b = appendCompactString(b, x.Value)
	}
	return appendTags(b)
}

func (x *ConfigRecord) readFields(r *reader, _ int16) {
	x.ResourceType = r.int8("ResourceType")
	x.ResourceName = r.string("ResourceName")
	x.Name = r.string("Name")
	v, ok := r.nullableStringPtr("Value")
	x.Value, x.Remove = v, !ok
	if r.err != nil {
		x.Value, x.Remove = "", false
	}
	r.tags("ConfigRecord", nil)
}
