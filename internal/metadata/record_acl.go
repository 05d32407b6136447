package metadata

// ACL resource types (Kafka's ResourceType codes). Only concrete values are
// stored; ANY (1) is a filter value and is rejected on replay.
const (
	ACLResourceTopic           int8 = 2
	ACLResourceGroup           int8 = 3
	ACLResourceCluster         int8 = 4
	ACLResourceTransactionalID int8 = 5
	ACLResourceDelegationToken int8 = 6
	ACLResourceUser            int8 = 7
)

// ACL pattern types (Kafka's PatternType codes). ANY and MATCH are filter
// values and are rejected on replay.
const (
	ACLPatternLiteral  int8 = 3
	ACLPatternPrefixed int8 = 4
)

// ACL operations (Kafka's AclOperation codes) run from ACLOperationAll to
// ACLOperationTwoPhaseCommit; UNKNOWN (0) and ANY (1) are rejected on replay.
const (
	ACLOperationAll             int8 = 2
	ACLOperationRead            int8 = 3
	ACLOperationWrite           int8 = 4
	ACLOperationCreate          int8 = 5
	ACLOperationDelete          int8 = 6
	ACLOperationAlter           int8 = 7
	ACLOperationDescribe        int8 = 8
	ACLOperationClusterAction   int8 = 9
	ACLOperationDescribeConfigs int8 = 10
	ACLOperationAlterConfigs    int8 = 11
	ACLOperationIdempotentWrite int8 = 12
	ACLOperationCreateTokens    int8 = 13
	ACLOperationDescribeTokens  int8 = 14
	ACLOperationTwoPhaseCommit  int8 = 15
)

// ACL permission types (Kafka's AclPermissionType codes).
const (
	ACLPermissionDeny  int8 = 2
	ACLPermissionAllow int8 = 3
)

// ACLEntry is one access control entry, identified by a random ID so that it
// can be removed exactly.
type ACLEntry struct {
	ID           Uuid
	ResourceType int8 // ACLResource*
	ResourceName string
	PatternType  int8 // ACLPattern*
	Principal    string
	Host         string
	Operation    int8 // ACLOperation*
	Permission   int8 // ACLPermission*
}

// AccessControlEntryRecord adds an ACL entry.
type AccessControlEntryRecord struct {
	ACLEntry
}

// Type implements Record.
func (*AccessControlEntryRecord) Type() RecordType { return TypeAccessControlEntry }

// Version implements Record.
func (*AccessControlEntryRecord) Version() int16 { return 0 }

func (x *AccessControlEntryRecord) appendFields(b []byte) []byte {
	b = appendUUID(b, x.ID)
	b = appendInt8(b, x.ResourceType)
	b = appendCompactString(b, x.ResourceName)
	b = appendInt8(b, x.PatternType)
	b = appendCompactString(b, x.Principal)
	b = appendCompactString(b, x.Host)
	b = appendInt8(b, x.Operation)
	b = appendInt8(b, x.Permission)
	return appendTags(b)
}

func (x *AccessControlEntryRecord) readFields(r *reader, _ int16) {
	x.ID = r.uuid("Id")
	x.ResourceType = r.int8("ResourceType")
	x.ResourceName = r.string("ResourceName")
	x.PatternType = r.int8("PatternType")
	x.Principal = r.string("Principal")
	x.Host = r.string("Host")
	x.Operation = r.int8("Operation")
	x.Permission = r.int8("PermissionType")
	r.tags("AccessControlEntryRecord", nil)
}

// RemoveAccessControlEntryRecord removes the ACL entry with this ID.
type RemoveAccessControlEntryRecord struct {
	ID Uuid
}

// Type implements Record.
func (*RemoveAccessControlEntryRecord) Type() RecordType { return TypeRemoveAccessControlEntry }

// Version implements Record.
func (*RemoveAccessControlEntryRecord) Version() int16 { return 0 }

func (x *RemoveAccessControlEntryRecord) appendFields(b []byte) []byte {
	return appendTags(appendUUID(b, x.ID))
}

func (x *RemoveAccessControlEntryRecord) readFields(r *reader, _ int16) {
	x.ID = r.uuid("Id")
	r.tags("RemoveAccessControlEntryRecord", nil)
}
