package auth

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// StandardAuthorizerClass is Kafka's class name for its built-in KRaft
// authorizer; kmirror accepts it in authorizer.class.name as a synonym of
// its own ACL authorizer.
const StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// AuthorizerClass is kmirror's own value of authorizer.class.name.
const AuthorizerClass = "kmirror.acl"

// AuthorizerEnabled reports whether authorizer.class.name asks for ACL
// authorization. An empty value disables it (everything is allowed).
func AuthorizerEnabled(className string) (bool, error) {
	switch strings.TrimSpace(className) {
	case "":
		return false, nil
	case AuthorizerClass, StandardAuthorizerClass, "kafka.security.authorizer.AclAuthorizer":
		return true, nil
	}
	return false, &config.ValueError{Name: "authorizer.class.name", Value: className,
		Reason: "unknown authorizer; use " + AuthorizerClass + " (or Kafka's " + StandardAuthorizerClass + ")"}
}

// AuthorizerConfig configures an Authorizer.
type AuthorizerConfig struct {
	// SuperUsers are principals allowed everything (super.users).
	SuperUsers []string
	// AllowEveryoneIfNoACLFound opens resources that have no ACL at all
	// (allow.everyone.if.no.acl.found).
	AllowEveryoneIfNoACLFound bool
	// Logger receives denials at debug level; nil means slog.Default().
	Logger *slog.Logger
}

// Authorizer decides ACL checks with Kafka's StandardAuthorizer semantics:
//
//   - super users are allowed everything;
//   - the ACLs that apply are those whose pattern matches the resource
//     (literal equal, literal "*", or a prefix of its name), whose principal
//     is the request's or "User:*" and whose host is the client's or "*";
//   - a DENY for the operation (or ALL) wins over any ALLOW;
//   - an ALLOW for the operation or ALL allows it, and ALLOWs for READ,
//     WRITE, DELETE or ALTER imply DESCRIBE, ALTER_CONFIGS implies
//     DESCRIBE_CONFIGS (DENYs imply nothing);
//   - a resource with no ACL at all is allowed only with
//     allow.everyone.if.no.acl.found; one with ACLs, none matching, is denied.
//
// It follows the metadata log as a metadata.Publisher and rebuilds its index
// when ACLs change. Until the first image arrives only super users are
// allowed. It implements wire.Authorizer and is safe for concurrent use.
type Authorizer struct {
	superUsers    map[string]bool
	allowEveryone bool
	log           *slog.Logger
	idx           atomic.Pointer[aclIndex]
}

var _ wire.Authorizer = (*Authorizer)(nil)
var _ metadata.Publisher = (*Authorizer)(nil)

// NewAuthorizer returns an authorizer with no ACLs loaded yet.
func NewAuthorizer(cfg AuthorizerConfig) *Authorizer {
	a := &Authorizer{superUsers: map[string]bool{}, allowEveryone: cfg.AllowEveryoneIfNoACLFound, log: cfg.Logger}
	if a.log == nil {
		a.log = slog.Default()
	}
	for _, u := range cfg.SuperUsers {
		if u = strings.TrimSpace(u); u != "" {
			a.superUsers[u] = true
		}
	}
	return a
}

// Name implements metadata.Publisher.
func (a *Authorizer) Name() string { return "acl-authorizer" }

// OnMetadataUpdate implements metadata.Publisher: the index is rebuilt from
// img when the delta changed ACLs (and on the first update).
func (a *Authorizer) OnMetadataUpdate(delta *metadata.Delta, img *metadata.Image) {
	if a.idx.Load() != nil && delta != nil && len(delta.ChangedACLs()) == 0 {
		return
	}
	a.Load(img)
}

// Load replaces the ACLs with those of img.
func (a *Authorizer) Load(img *metadata.Image) {
	x := newACLIndex(img.ACLs())
	a.idx.Store(x)
	a.log.Debug("acl authorizer loaded", "acls", x.count, "metadata_offset", img.Offset())
}

// Ready reports whether the authorizer has loaded ACLs.
func (a *Authorizer) Ready() bool { return a.idx.Load() != nil }

// IsSuperUser reports whether principal is in super.users.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.superUsers[principal] }

// Authorize implements wire.Authorizer.
func (a *Authorizer) Authorize(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if a.superUsers[principal] {
		return true
	}
	x := a.idx.Load()
	if x == nil {
		return false
	}
	found, allowed, denied := false, false, false
	x.forResource(rt, name, func(b Binding) bool {
		found = true
		switch applies(b, principal, host, op) {
		case kmsg.ACLPermissionTypeDeny:
			denied = true
			return false
		case kmsg.ACLPermissionTypeAllow:
			allowed = true
		}
		return true
	})
	var ok bool
	switch {
	case denied:
		ok = false
	case allowed:
		ok = true
	default:
		ok = !found && a.allowEveryone
	}
	if !ok && a.log.Enabled(context.Background(), slog.LevelDebug) {
		a.log.Debug("authorization denied", "principal", principal, "host", host,
			"operation", OperationName(op), "resource_type", rt.String(), "resource", name)
	}
	return ok
}

// impliesDescribe and impliesDescribeConfigs are the operations whose ALLOW
// ACLs also allow DESCRIBE and DESCRIBE_CONFIGS.
var (
	impliesDescribe = map[kmsg.ACLOperation]bool{
		kmsg.ACLOperationDescribe: true, kmsg.ACLOperationRead: true, kmsg.ACLOperationWrite: true,
		kmsg.ACLOperationDelete: true, kmsg.ACLOperationAlter: true,
	}
	impliesDescribeConfigs = map[kmsg.ACLOperation]bool{
		kmsg.ACLOperationDescribeConfigs: true, kmsg.ACLOperationAlterConfigs: true,
	}
)

// applies returns the permission of b for the request (principal, host, op)
// on a resource b's pattern matches, or UNKNOWN when b does not apply.
func applies(b Binding, principal, host string, op kmsg.ACLOperation) kmsg.ACLPermissionType {
	if b.Principal != principal && b.Principal != WildcardPrincipal {
		return kmsg.ACLPermissionTypeUnknown
	}
	if b.Host != WildcardHost && b.Host != host {
		return kmsg.ACLPermissionTypeUnknown
	}
	if b.Operation != kmsg.ACLOperationAll {
		match := b.Operation == op
		if b.Permission == kmsg.ACLPermissionTypeAllow {
			switch op {
			case kmsg.ACLOperationDescribe:
				match = impliesDescribe[b.Operation]
			case kmsg.ACLOperationDescribeConfigs:
				match = impliesDescribeConfigs[b.Operation]
			}
		}
		if !match {
			return kmsg.ACLPermissionTypeUnknown
		}
	}
	return b.Permission
}

// hardcodedName is the resource name Kafka's authorizeByResourceType checks
// first, so that super users, wildcard ALLOWs and
// allow.everyone.if.no.acl.found answer at once.
const hardcodedName = "hardcode"

// AuthorizeAny implements wire.Authorizer with Kafka's
// authorizeByResourceType: allowed when some literal or prefixed ALLOW for op
// (or ALL) applies to the principal and host and no DENY covers it (a DENY
// on "*", on the same literal name, or on a prefix of the allowed name).
func (a *Authorizer) AuthorizeAny(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if a.Authorize(principal, host, op, rt, hardcodedName) {
		return true
	}
	x := a.idx.Load()
	if x == nil {
		return false
	}
	matchesEntry := func(b Binding) bool {
		return (b.Principal == principal || b.Principal == WildcardPrincipal) &&
			(b.Host == WildcardHost || b.Host == host) &&
			(b.Operation == op || b.Operation == kmsg.ACLOperationAll)
	}
	var denyLiteral = map[string]bool{}
	var denyPrefixes []string
	for _, b := range x.byType[rt] {
		if b.Permission != kmsg.ACLPermissionTypeDeny || !matchesEntry(b) {
			continue
		}
		if b.PatternType == kmsg.ACLResourcePatternTypeLiteral {
			if b.ResourceName == WildcardResource {
				return false
			}
			denyLiteral[b.ResourceName] = true
		} else {
			denyPrefixes = append(denyPrefixes, b.ResourceName)
		}
	}
	deniedByPrefix := func(name string) bool {
		for _, p := range denyPrefixes {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	for _, b := range x.byType[rt] {
		if b.Permission != kmsg.ACLPermissionTypeAllow || !matchesEntry(b) {
			continue
		}
		if b.PatternType == kmsg.ACLResourcePatternTypeLiteral {
			if b.ResourceName == WildcardResource || (!denyLiteral[b.ResourceName] && !deniedByPrefix(b.ResourceName)) {
				return true
			}
			continue
		}
		if !deniedByPrefix(b.ResourceName) {
			return true
		}
	}
	return false
}
