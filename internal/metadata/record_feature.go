package metadata

// MetadataVersionFeature is the feature that versions the metadata records
// themselves (Kafka's metadata.version).
const MetadataVersionFeature = "metadata.version"

// FeatureLevelRecord sets the finalized level of a cluster feature; level 0
// removes the feature, as in Kafka.
type FeatureLevelRecord struct {
	Name  string
	Level int16
}

// Type implements Record.
func (*FeatureLevelRecord) Type() RecordType { return TypeFeatureLevel }

// Version implements Record.
func (*FeatureLevelRecord) Version() int16 { return 0 }

func (x *FeatureLevelRecord) appendFields(b []byte) []byte {
	b = appendCompactString(b, x.Name)
	b = appendInt16(b, x.Level)
	return appendTags(b)
}

func (x *FeatureLevelRecord) readFields(r *reader, _ int16) {
	x.Name = r.string("Name")
	x.Level = r.int16("FeatureLevel")
	r.tags("FeatureLevelRecord", nil)
}

// NoOpRecord changes nothing. A controller writes one to advance the log
// (and so every node's applied offset) when it has nothing else to say.
type NoOpRecord struct{}

// Type implements Record.
func (*NoOpRecord) Type() RecordType { return TypeNoOp }

// Version implements Record.
func (*NoOpRecord) Version() int16 { return 0 }

func (*NoOpRecord) appendFields(b []byte) []byte { return appendTags(b) }

func (*NoOpRecord) readFields(r *reader, _ int16) { r.tags("NoOpRecord", nil) }
