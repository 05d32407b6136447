package mirror

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
)

// The ACL sync, so that after a failover the same principals have the
// same rights on the mirrored topics and groups. An ACL of the source is in
// the sync's scope when its principal passes acls.principals /
// acls.principals.exclude and its resource is
//   - a topic: a LITERAL name of a topic mirroring in this mirror, or a
//     PREFIXED pattern that matches at least one of them;
//   - a group: a LITERAL group id or a PREFIXED pattern whose name passes
//     groups / groups.exclude;
//   - a transactional id: any LITERAL id or PREFIXED pattern (of a principal
//     the filter passes), so that a transactional producer works after a
//     failover without new grants.
//
// The wildcard resource "*" is never in scope (it would reach every
// resource of this cluster), nor are cluster and other ACLs. ACLs in scope that this cluster lacks are created under their
// synced id (mirrorconfig.SyncedACLID); ACLs under this mirror's synced id
// that are in scope and no longer on the source are deleted. An ACL an
// operator created here is never deleted, and an ACL outside the scope
// (its topic paused or failed over, its principal filtered out) is kept as
// it is.

// aclInScope reports whether binding b is in the ACL sync's scope.
func aclInScope(cfg *mirrorconfig.Config, topics []string, b auth.Binding) bool {
	if !cfg.SyncsACLPrincipal(b.Principal) {
		return false
	}
	if b.PatternType == kmsg.ACLResourcePatternTypeLiteral && b.ResourceName == auth.WildcardResource {
		return false
	}
	switch b.ResourceType {
	case kmsg.ACLResourceTypeTopic:
		for _, t := range topics {
			switch b.PatternType {
			case kmsg.ACLResourcePatternTypeLiteral:
				if t == b.ResourceName {
					return true
				}
			case kmsg.ACLResourcePatternTypePrefixed:
				if strings.HasPrefix(t, b.ResourceName) {
					return true
				}
			}
		}
	case kmsg.ACLResourceTypeGroup:
		return cfg.SyncsGroup(b.ResourceName)
	case kmsg.ACLResourceTypeTransactionalId:
		return true
	}
	return false
}

// aclSyncPlan decides the ACL sync's writes: the in-scope source bindings
// this cluster lacks, and the ids of this mirror's synced ACLs that are in
// scope and gone from the source.
func aclSyncPlan(mirror string, cfg *mirrorconfig.Config, topics []string, source []auth.Binding, dest []metadata.ACLEntry) (create []auth.Binding, remove []auth.Binding) {
	onSource := map[auth.Binding]bool{}
	for _, b := range source {
		onSource[b] = true
	}
	here := map[auth.Binding]bool{}
	for _, e := range dest {
		b := auth.BindingOf(e)
		here[b] = true
		if metadata.Uuid(mirrorconfig.SyncedACLID(mirror, b)) == e.ID && !onSource[b] && aclInScope(cfg, topics, b) {
			remove = append(remove, b)
		}
	}
	for _, b := range source {
		if !here[b] && aclInScope(cfg, topics, b) {
			here[b] = true
			create = append(create, b)
		}
	}
	return create, remove
}

// sourceACLs reads every ACL of the source (DescribeAcls with ANY filters;
// the mirror's principal needs DESCRIBE on the source's cluster). ok is
// false when the source has no authorizer (SECURITY_DISABLED): then it has
// no ACLs to copy and nothing synced is taken away.
func sourceACLs(ctx context.Context, rd syncRound) (bindings []auth.Binding, ok bool, err error) {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeAny
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, rd.cl)
	if err != nil {
		return nil, false, fmt.Errorf("ACLs of the source: %w", err)
	}
	switch resp.ErrorCode {
	case 0:
	case kerr.SecurityDisabled.Code:
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("ACLs of the source: %s: %w", syncText(resp.ErrorMessage), kerr.ErrorForCode(resp.ErrorCode))
	}
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			bindings = append(bindings, auth.Binding{
				ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.ResourcePatternType,
				Principal: a.Principal, Host: a.Host, Operation: a.Operation, Permission: a.PermissionType,
			})
		}
	}
	return bindings, true, nil
}

// syncACLs copies the in-scope ACLs of the source.
func (s *mirrorSync) syncACLs(ctx context.Context, rd syncRound) error {
	source, ok, err := sourceACLs(ctx, rd)
	if err != nil || !ok {
		return err
	}
	create, remove := aclSyncPlan(s.name, rd.cfg, rd.topics, source, rd.img.ACLs())
	var errs []error
	if len(create) > 0 {
		results, err := s.r.m.deps.Sync.Controller.CreateSyncedACLs(ctx, s.name, create)
		if err != nil {
			return fmt.Errorf("create synced ACLs: %w", err)
		}
		n := 0
		for i, e := range results {
			if e != nil {
				errs = append(errs, fmt.Errorf("create ACL %s: %w", create[i], e))
				continue
			}
			n++
		}
		if n > 0 {
			s.log.Info("ACLs synced from the source", "created", n)
		}
	}
	if len(remove) > 0 {
		req := kmsg.NewPtrDeleteACLsRequest()
		req.Version = 2
		for _, b := range remove {
			f := kmsg.NewDeleteACLsRequestFilter()
			f.ResourceType, f.ResourceName, f.ResourcePatternType = b.ResourceType, kmsg.StringPtr(b.ResourceName), b.PatternType
			f.Principal, f.Host, f.Operation, f.PermissionType = kmsg.StringPtr(b.Principal), kmsg.StringPtr(b.Host), b.Operation, b.Permission
			req.Filters = append(req.Filters, f)
		}
		resp, err := s.r.m.deps.Sync.Controller.Send(ctx, req)
		if err != nil {
			return fmt.Errorf("delete synced ACLs: %w", err)
		}
		dr, ok := resp.(*kmsg.DeleteACLsResponse)
		if !ok {
			return fmt.Errorf("delete synced ACLs: unexpected answer %T", resp)
		}
		n := 0
		for i, r := range dr.Results {
			if r.ErrorCode != 0 && i < len(remove) {
				errs = append(errs, fmt.Errorf("delete ACL %s: %w", remove[i], kerr.ErrorForCode(r.ErrorCode)))
				continue
			}
			n += len(r.MatchingACLs)
		}
		if n > 0 {
			s.log.Info("synced ACLs gone from the source deleted", "deleted", n)
		}
	}
	return errJoin(errs)
}

// syncText is the text of an optional message.
func syncText(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
