package metadata

import (
	"fmt"
	"strconv"
)

// RecordType identifies a metadata record. The values are Kafka's api keys
// for metadata records, so that a dump tool (ours or Kafka's) names them the
// same way.
type RecordType uint16

// Record types. Kafka's types that kmirror does not replay are named so that
// errors and dump tools can say what they saw; decoding them fails with an
// unsupported-type error.
const (
	TypeRegisterBroker            RecordType = 0
	TypeUnregisterBroker          RecordType = 1
	TypeTopic                     RecordType = 2
	TypePartition                 RecordType = 3
	TypeConfig                    RecordType = 4
	TypePartitionChange           RecordType = 5
	TypeFenceBroker               RecordType = 7
	TypeUnfenceBroker             RecordType = 8
	TypeRemoveTopic               RecordType = 9
	TypeDelegationToken           RecordType = 10
	TypeUserScramCredential       RecordType = 11
	TypeFeatureLevel              RecordType = 12
	TypeClientQuota               RecordType = 14
	TypeProducerIds               RecordType = 15
	TypeBrokerRegistrationChange  RecordType = 17
	TypeAccessControlEntry        RecordType = 18
	TypeRemoveAccessControlEntry  RecordType = 19
	TypeNoOp                      RecordType = 20
	TypeZkMigration               RecordType = 21
	TypeRemoveUserScramCredential RecordType = 22
	TypeBeginTransaction          RecordType = 23
	TypeEndTransaction            RecordType = 24
	TypeAbortTransaction          RecordType = 25
	TypeRemoveDelegationToken     RecordType = 26
	TypeRegisterController        RecordType = 27
)

var recordTypeNames = map[RecordType]string{
	TypeRegisterBroker:            "RegisterBrokerRecord",
	TypeUnregisterBroker:          "UnregisterBrokerRecord",
	TypeTopic:                     "TopicRecord",
	TypePartition:                 "PartitionRecord",
	TypeConfig:                    "ConfigRecord",
	TypePartitionChange:           "PartitionChangeRecord",
	TypeFenceBroker:               "FenceBrokerRecord",
	TypeUnfenceBroker:             "UnfenceBrokerRecord",
	TypeRemoveTopic:               "RemoveTopicRecord",
	TypeDelegationToken:           "DelegationTokenRecord",
	TypeUserScramCredential:       "UserScramCredentialRecord",
	TypeFeatureLevel:              "FeatureLevelRecord",
	TypeClientQuota:               "ClientQuotaRecord",
	TypeProducerIds:               "ProducerIdsRecord",
	TypeBrokerRegistrationChange:  "BrokerRegistrationChangeRecord",
	TypeAccessControlEntry:        "AccessControlEntryRecord",
	TypeRemoveAccessControlEntry:  "RemoveAccessControlEntryRecord",
	TypeNoOp:                      "NoOpRecord",
	TypeZkMigration:               "ZkMigrationRecord",
	TypeRemoveUserScramCredential: "RemoveUserScramCredentialRecord",
	TypeBeginTransaction:          "BeginTransactionRecord",
	TypeEndTransaction:            "EndTransactionRecord",
	TypeAbortTransaction:          "AbortTransactionRecord",
	TypeRemoveDelegationToken:     "RemoveDelegationTokenRecord",
	TypeRegisterController:        "RegisterControllerRecord",
}

// String returns Kafka's name for the record type, or "RecordType(n)".
func (t RecordType) String() string {
	if n, ok := recordTypeNames[t]; ok {
		return n
	}
	return "RecordType(" + strconv.Itoa(int(t)) + ")"
}

// frameVersion is the version of the record frame (Kafka's serde writes 1).
const frameVersion = 1

// Record is one metadata record. The concrete types are the *XxxRecord
// structs of this package; the interface is sealed so that every record has
// an encoding and replay rules.
type Record interface {
	// Type is the record's type, Kafka's metadata api key.
	Type() RecordType
	// Version is the schema version Encode writes for this record.
	Version() int16

	// appendFields writes the fields (including the trailing tagged-field
	// section) at Version.
	appendFields(b []byte) []byte
	// readFields reads the fields of the given schema version.
	readFields(r *reader, version int16)
}

// recordSpec says how to make an empty record of a type and which schema
// versions the decoder accepts.
type recordSpec struct {
	make                   func() Record
	minVersion, maxVersion int16
}

var recordSpecs = map[RecordType]recordSpec{
	TypeRegisterBroker:            {func() Record { return new(RegisterBrokerRecord) }, 0, 3},
	TypeUnregisterBroker:          {func() Record { return new(UnregisterBrokerRecord) }, 0, 0},
	TypeTopic:                     {func() Record { return new(TopicRecord) }, 0, 0},
	TypePartition:                 {func() Record { return new(PartitionRecord) }, 0, 2},
	TypeConfig:                    {func() Record { return new(ConfigRecord) }, 0, 0},
	TypePartitionChange:           {func() Record { return new(PartitionChangeRecord) }, 0, 2},
	TypeFenceBroker:               {func() Record { return new(FenceBrokerRecord) }, 0, 0},
	TypeUnfenceBroker:             {func() Record { return new(UnfenceBrokerRecord) }, 0, 0},
	TypeRemoveTopic:               {func() Record { return new(RemoveTopicRecord) }, 0, 0},
	TypeUserScramCredential:       {func() Record { return new(UserScramCredentialRecord) }, 0, 0},
	TypeFeatureLevel:              {func() Record { return new(FeatureLevelRecord) }, 0, 0},
	TypeProducerIds:               {func() Record { return new(ProducerIdsRecord) }, 0, 0},
	TypeBrokerRegistrationChange:  {func() Record { return new(BrokerRegistrationChangeRecord) }, 0, 2},
	TypeAccessControlEntry:        {func() Record { return new(AccessControlEntryRecord) }, 0, 0},
	TypeRemoveAccessControlEntry:  {func() Record { return new(RemoveAccessControlEntryRecord) }, 0, 0},
	TypeNoOp:                      {func() Record { return new(NoOpRecord) }, 0, 0},
	TypeRemoveUserScramCredential: {func() Record { return new(RemoveUserScramCredentialRecord) }, 0, 0},
	TypeClientQuota:               {func() Record { return new(ClientQuotaRecord) }, 0, 0},
}

// Encode appends the framed encoding of r to dst and returns the result:
// frame version, type and version as unsigned varints, then the fields.
func Encode(dst []byte, r Record) []byte {
	dst = appendUvarint(dst, frameVersion)
	dst = appendUvarint(dst, uint32(r.Type()))
	dst = appendUvarint(dst, uint32(r.Version()))
	return r.appendFields(dst)
}

// Decode decodes exactly one framed record from b. Malformed, truncated or
// unknown input returns an error (wrapping kerr.CorruptMessage, or
// kerr.UnsupportedVersion for a known type at a version this build cannot
// read) that names the record type and the byte offset; Decode never panics
// and allocates no more than the bytes present.
func Decode(b []byte) (Record, error) { return decodeAt(b, 0) }

// decodeAt decodes a record that starts at byte off of an enclosing buffer,
// so that error offsets point into that buffer.
func decodeAt(b []byte, off int) (Record, error) {
	r := newReader(b, off)
	fv := r.uvarint("frame version")
	typ := r.uvarint("record type")
	ver := r.uvarint("record version")
	if r.err != nil {
		return nil, fmt.Errorf("decode metadata record header: %w", r.err)
	}
	if fv != frameVersion {
		r.pos = 0
		r.fail("frame version %d, want %d", fv, frameVersion)
		return nil, fmt.Errorf("decode metadata record: %w", r.err)
	}
	if typ > 0xffff {
		r.fail("record type %d out of range", typ)
		return nil, fmt.Errorf("decode metadata record: %w", r.err)
	}
	rt := RecordType(typ)
	spec, ok := recordSpecs[rt]
	if !ok {
		r.fail("unsupported record type %s", rt)
		return nil, fmt.Errorf("decode metadata record: %w", r.err)
	}
	if ver > uint32(spec.maxVersion) || int16(ver) < spec.minVersion {
		return nil, fmt.Errorf("decode %s at byte %d: version %d outside %d-%d: %w",
			rt, off, ver, spec.minVersion, spec.maxVersion, errUnsupportedVersion)
	}
	rec := spec.make()
	rec.readFields(r, int16(ver))
	if err := r.done(rt.String()); err != nil {
		return nil, fmt.Errorf("decode %s v%d: %w", rt, ver, err)
	}
	return rec, nil
}
