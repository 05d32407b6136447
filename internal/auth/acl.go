package auth

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// Wildcards of ACLs: a literal resource name "*" matches every resource of
// its type, principal "User:*" every principal and host "*" every host.
const (
	WildcardResource  = "*"
	WildcardPrincipal = "User:*"
	WildcardHost      = "*"
)

// ClusterResourceName is the only valid name of the cluster resource.
const ClusterResourceName = wire.ClusterResourceName

// Binding is one ACL: a resource pattern (type, name, literal or prefixed)
// and an access control entry (principal, host, operation, allow or deny).
type Binding struct {
	ResourceType kmsg.ACLResourceType
	ResourceName string
	PatternType  kmsg.ACLResourcePatternType
	Principal    string
	Host         string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// BindingOf returns the binding a stored ACL entry holds.
func BindingOf(e metadata.ACLEntry) Binding {
	return Binding{
		ResourceType: kmsg.ACLResourceType(e.ResourceType),
		ResourceName: e.ResourceName,
		PatternType:  kmsg.ACLResourcePatternType(e.PatternType),
		Principal:    e.Principal,
		Host:         e.Host,
		Operation:    kmsg.ACLOperation(e.Operation),
		Permission:   kmsg.ACLPermissionType(e.Permission),
	}
}

// Entry returns the metadata entry that stores b under id.
func (b Binding) Entry(id metadata.Uuid) metadata.ACLEntry {
	return metadata.ACLEntry{
		ID:           id,
		ResourceType: int8(b.ResourceType),
		ResourceName: b.ResourceName,
		PatternType:  int8(b.PatternType),
		Principal:    b.Principal,
		Host:         b.Host,
		Operation:    int8(b.Operation),
		Permission:   int8(b.Permission),
	}
}

// String formats b as Kafka's tools print an ACL.
func (b Binding) String() string {
	return fmt.Sprintf("(pattern=ResourcePattern(resourceType=%s, name=%s, patternType=%s), entry=(principal=%s, host=%s, operation=%s, permissionType=%s))",
		b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Host, OperationName(b.Operation), b.Permission)
}

// operationTwoPhaseCommit is Kafka 4's TWO_PHASE_COMMIT operation, which
// kmsg does not name yet.
const operationTwoPhaseCommit kmsg.ACLOperation = 15

// Validate checks a binding a CreateAcls request asks to create, with
// Kafka's rules and messages. Errors wrap kerr.InvalidRequest.
func (b Binding) Validate() error {
	switch {
	case b.ResourceType < kmsg.ACLResourceTypeTopic || b.ResourceType > kmsg.ACLResourceTypeUser:
		return fmt.Errorf("invalid resourceType %s: %w", b.ResourceType, kerr.InvalidRequest)
	case b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed:
		return fmt.Errorf("invalid patternType %s: %w", b.PatternType, kerr.InvalidRequest)
	case b.Operation < kmsg.ACLOperationAll || b.Operation > operationTwoPhaseCommit:
		return fmt.Errorf("invalid operation %s: %w", OperationName(b.Operation), kerr.InvalidRequest)
	case b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny:
		return fmt.Errorf("invalid permissionType %s: %w", b.Permission, kerr.InvalidRequest)
	case b.ResourceName == "":
		return fmt.Errorf("resource name should not be empty: %w", kerr.InvalidRequest)
	case b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterResourceName:
		return fmt.Errorf("the only valid name for the CLUSTER resource is %s: %w", ClusterResourceName, kerr.InvalidRequest)
	case !strings.Contains(b.Principal, ":"):
		return fmt.Errorf("could not parse principal from `%s` (no colon is present separating the principal type from the principal name): %w",
			b.Principal, kerr.InvalidRequest)
	case b.Host == "":
		return fmt.Errorf("host should not be empty: %w", kerr.InvalidRequest)
	}
	return nil
}

// Filter selects ACLs for DescribeAcls and DeleteAcls. A nil name,
// principal or host matches any; ANY matches any value of an enum; pattern
// type MATCH selects the bindings that would apply to a resource of that
// name (literal equal or "*", and prefixes of it).
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Validate rejects filters with an UNKNOWN element, as Kafka does. Errors
// wrap kerr.InvalidRequest.
func (f Filter) Validate() error {
	switch {
	case f.ResourceType == kmsg.ACLResourceTypeUnknown || f.ResourceType > kmsg.ACLResourceTypeUser || f.ResourceType < 0:
		return fmt.Errorf("invalid resource type in filter: %w", kerr.InvalidRequest)
	case f.PatternType == kmsg.ACLResourcePatternTypeUnknown || f.PatternType > kmsg.ACLResourcePatternTypePrefixed || f.PatternType < 0:
		return fmt.Errorf("invalid pattern type in filter: %w", kerr.InvalidRequest)
	case f.Operation == kmsg.ACLOperationUnknown || f.Operation > operationTwoPhaseCommit || f.Operation < 0:
		return fmt.Errorf("invalid operation in filter: %w", kerr.InvalidRequest)
	case f.Permission == kmsg.ACLPermissionTypeUnknown || f.Permission > kmsg.ACLPermissionTypeAllow || f.Permission < 0:
		return fmt.Errorf("invalid permission type in filter: %w", kerr.InvalidRequest)
	}
	return nil
}

// Matches reports whether b is selected by f.
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	if f.PatternType != kmsg.ACLResourcePatternTypeAny && f.PatternType != kmsg.ACLResourcePatternTypeMatch && f.PatternType != b.PatternType {
		return false
	}
	if f.ResourceName != nil {
		name := *f.ResourceName
		switch {
		case f.PatternType == kmsg.ACLResourcePatternTypeAny || f.PatternType == b.PatternType:
			if name != b.ResourceName {
				return false
			}
		case b.PatternType == kmsg.ACLResourcePatternTypeLiteral:
			if name != b.ResourceName && b.ResourceName != WildcardResource {
				return false
			}
		case b.PatternType == kmsg.ACLResourcePatternTypePrefixed:
			if !strings.HasPrefix(name, b.ResourceName) {
				return false
			}
		default:
			return false
		}
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation {
		return false
	}
	if f.Permission != kmsg.ACLPermissionTypeAny && f.Permission != b.Permission {
		return false
	}
	return true
}

// OperationName returns Kafka's name of an operation (READ,
// DESCRIBE_CONFIGS, TWO_PHASE_COMMIT).
func OperationName(op kmsg.ACLOperation) string {
	if op == operationTwoPhaseCommit {
		return "TWO_PHASE_COMMIT"
	}
	return op.String()
}

// ParseOperation parses an operation name as Kafka's tools accept it
// (case-insensitive, with or without underscores).
func ParseOperation(s string) (kmsg.ACLOperation, error) {
	if n := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(strings.TrimSpace(s))); n == "twophasecommit" {
		return operationTwoPhaseCommit, nil
	}
	return kmsg.ParseACLOperation(s)
}
