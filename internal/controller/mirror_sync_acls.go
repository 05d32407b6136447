package controller

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
)

// ACLs created by a mirror's ACL sync. The sync copies ACLs from the source
// cluster and later deletes the ones that disappeared there, but never an
// ACL an operator created on this cluster. It tells them apart by id: a
// synced ACL is stored under mirrorconfig.SyncedACLID(mirror, binding),
// which only this path assigns. The sync sends an ordinary CreateAcls
// request (v2+, flexible) carrying kmirror's tagged field
// mirrorACLSyncTag, whose value is the mirror's name. Like the other
// internal tags it counts only from the cluster's own nodes (the controller
// listener, or this node's Channel): Channel.Send strips it from everything
// it forwards, and a tagged request from another listener is an ordinary
// CreateAcls.

// mirrorACLSyncOf returns the mirror named by a CreateAcls request's sync
// tag, if it carries one.
func mirrorACLSyncOf(req kmsg.Request) (string, bool) {
	if _, ok := req.(*kmsg.CreateACLsRequest); !ok {
		return "", false
	}
	v, ok := tagValue(req, mirrorACLSyncTag)
	return string(v), ok
}

// decideSyncedACLs is decideCreateACLs for a mirror's sync: each new ACL
// gets its synced id. The mirror must exist (RESOURCE_NOT_FOUND for every
// creation otherwise). An ACL whose binding exists already, under any id,
// succeeds without a record, as in CreateAcls: an ACL an operator created
// before the sync stays the operator's.
func decideSyncedACLs(v *view, mirror string, req *kmsg.CreateACLsRequest) ([]metadata.Record, *kmsg.CreateACLsResponse) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Version = req.Version
	var refuse error
	if !mirrorExists(v.img, mirror) {
		refuse = errf(kerr.ResourceNotFound, "mirror %q does not exist", mirror)
	}
	existing := map[auth.Binding]bool{}
	for _, e := range v.img.ACLs() {
		existing[auth.BindingOf(e)] = true
	}
	var recs []metadata.Record
	for _, c := range req.Creations {
		b := auth.Binding{
			ResourceType: c.ResourceType,
			ResourceName: c.ResourceName,
			PatternType:  c.ResourcePatternType,
			Principal:    c.Principal,
			Host:         c.Host,
			Operation:    c.Operation,
			Permission:   c.PermissionType,
		}
		r := kmsg.NewCreateACLsResponseResult()
		err := refuse
		if err == nil {
			err = b.Validate()
		}
		if err == nil {
			if _, taken := v.img.ACL(mirrorconfig.SyncedACLID(mirror, b)); taken && !existing[b] {
				// Another binding under this id: a hash collision, which
				// a record could not replay.
				err = errf(kerr.DuplicateResource, "the synced id of %s is taken", b)
			}
		}
		if err != nil {
			r.ErrorCode, r.ErrorMessage = codeOf(err), messageOf(err)
		} else if !existing[b] {
			existing[b] = true
			recs = append(recs, &metadata.AccessControlEntryRecord{ACLEntry: b.Entry(mirrorconfig.SyncedACLID(mirror, b))})
		}
		resp.Results = append(resp.Results, r)
	}
	return recs, resp
}

// serveSyncedACLs serves req if it is a tagged CreateAcls (from the
// cluster's own nodes: internal_tags.go); ok is false for anything else,
// which the ordinary CreateAcls path serves.
func (c *Controller) serveSyncedACLs(req kmsg.Request) (kmsg.Response, bool) {
	mirror, tagged := mirrorACLSyncOf(req)
	if !tagged {
		return nil, false
	}
	ca := req.(*kmsg.CreateACLsRequest)
	var resp *kmsg.CreateACLsResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideSyncedACLs(v, mirror, ca)
		if len(recs) == 0 {
			return nil
		}
		if _, err := c.propose(recs); err != nil {
			perr := proposeError(err)
			for i := range resp.Results {
				if resp.Results[i].ErrorCode == 0 {
					resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = codeOf(perr), messageOf(perr)
				}
			}
			return nil
		}
		c.log.Info("acls created by a mirror's sync", "mirror", mirror, "count", len(recs))
		return nil
	})
	if err != nil {
		return wireErrorResponse(req, err), true
	}
	return resp, true
}

// CreateSyncedACLs makes the active controller create bindings as ACLs
// synced by mirror (under their synced ids; see mirrorconfig.SyncedACLID)
// and returns one error per binding, nil where it was created or existed
// already. The error return means no controller answered before ctx ended.
func (c *Channel) CreateSyncedACLs(ctx context.Context, mirror string, bindings []auth.Binding) ([]error, error) {
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 2
	for _, b := range bindings {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		req.Creations = append(req.Creations, cr)
	}
	setTag(req, mirrorACLSyncTag, []byte(mirror))
	resp, err := c.send(ctx, req)
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.CreateACLsResponse)
	if !ok || len(r.Results) != len(bindings) {
		return nil, fmt.Errorf("create synced acls: unexpected answer %T: %w", resp, kerr.UnknownServerError)
	}
	errs := make([]error, len(bindings))
	for i, x := range r.Results {
		if x.ErrorCode != 0 {
			errs[i] = kerrOf(x.ErrorCode)
			if x.ErrorMessage != nil {
				errs[i] = fmt.Errorf("%s: %w", *x.ErrorMessage, errs[i])
			}
		}
	}
	return errs, nil
}
