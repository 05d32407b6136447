package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/metadata"
)

// decideCreateACLs validates each creation with Kafka's rules and returns
// the records of the new ACLs. An ACL equal to one that exists (or to an
// earlier creation of the request) succeeds without a new record, as in
// Kafka, so creating the same ACL twice never stores it twice.
func decideCreateACLs(v *view, req *kmsg.CreateACLsRequest) ([]metadata.Record, *kmsg.CreateACLsResponse) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Version = req.Version
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
		if err := b.Validate(); err != nil {
			r.ErrorCode, r.ErrorMessage = codeOf(err), messageOf(err)
		} else if !existing[b] {
			existing[b] = true
			recs = append(recs, &metadata.AccessControlEntryRecord{ACLEntry: b.Entry(v.newID())})
		}
		resp.Results = append(resp.Results, r)
	}
	return recs, resp
}

// createACLs is the driver of CreateAcls.
func (c *Controller) createACLs(req *kmsg.CreateACLsRequest) (kmsg.Response, error) {
	var resp *kmsg.CreateACLsResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideCreateACLs(v, req)
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
		c.log.Info("acls created", "count", len(recs))
		return nil
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return resp, nil
}

// filterOfDeletion returns the ACL filter of a DeleteAcls request's filter.
func filterOfDeletion(f kmsg.DeleteACLsRequestFilter) auth.Filter {
	return auth.Filter{
		ResourceType: f.ResourceType,
		ResourceName: f.ResourceName,
		PatternType:  f.ResourcePatternType,
		Principal:    f.Principal,
		Host:         f.Host,
		Operation:    f.Operation,
		Permission:   f.PermissionType,
	}
}

// decideDeleteACLs removes, for each filter, the ACLs it matches. An ACL
// several filters match is removed once and reported under the first, as
// Kafka does; a filter with an UNKNOWN element is INVALID_REQUEST.
func decideDeleteACLs(v *view, req *kmsg.DeleteACLsRequest) ([]metadata.Record, *kmsg.DeleteACLsResponse) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Version = req.Version
	acls := v.img.ACLs()
	deleted := map[metadata.Uuid]bool{}
	var recs []metadata.Record
	for _, rf := range req.Filters {
		r := kmsg.NewDeleteACLsResponseResult()
		f := filterOfDeletion(rf)
		if err := f.Validate(); err != nil {
			r.ErrorCode, r.ErrorMessage = codeOf(err), messageOf(err)
			resp.Results = append(resp.Results, r)
			continue
		}
		for _, e := range acls {
			b := auth.BindingOf(e)
			if deleted[e.ID] || !f.Matches(b) {
				continue
			}
			deleted[e.ID] = true
			recs = append(recs, &metadata.RemoveAccessControlEntryRecord{ID: e.ID})
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			m.Principal, m.Host, m.Operation, m.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
			r.MatchingACLs = append(r.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, r)
	}
	return recs, resp
}

// deleteACLs is the driver of DeleteAcls.
func (c *Controller) deleteACLs(req *kmsg.DeleteACLsRequest) (kmsg.Response, error) {
	var resp *kmsg.DeleteACLsResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideDeleteACLs(v, req)
		if len(recs) == 0 {
			return nil
		}
		if _, err := c.propose(recs); err != nil {
			perr := proposeError(err)
			for i := range resp.Results {
				if resp.Results[i].ErrorCode == 0 {
					resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = codeOf(perr), messageOf(perr)
					resp.Results[i].MatchingACLs = nil
				}
			}
			return nil
		}
		c.log.Info("acls deleted", "count", len(recs))
		return nil
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return resp, nil
}

// serveSecurity dispatches an ACL or SCRAM request; ok is false for any
// other request.
func (c *Controller) serveSecurity(req kmsg.Request) (kmsg.Response, bool, error) {
	var resp kmsg.Response
	var err error
	switch r := req.(type) {
	case *kmsg.CreateACLsRequest:
		resp, err = c.createACLs(r)
	case *kmsg.DeleteACLsRequest:
		resp, err = c.deleteACLs(r)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		resp, err = c.alterUserScramCredentials(r)
	case *kmsg.AlterClientQuotasRequest:
		resp, err = c.alterClientQuotas(r)
	default:
		return nil, false, nil
	}
	return resp, true, err
}

// securityErrorResponse is errorResponse for the ACL and SCRAM requests.
func securityErrorResponse(req kmsg.Request, err error) (kmsg.Response, bool) {
	switch req.(type) {
	case *kmsg.CreateACLsRequest, *kmsg.DeleteACLsRequest, *kmsg.AlterUserSCRAMCredentialsRequest, *kmsg.AlterClientQuotasRequest:
		return wireErrorResponse(req, err), true
	}
	return nil, false
}

// securityHasNotController is hasNotController for the ACL and SCRAM
// responses.
func securityHasNotController(resp kmsg.Response) bool {
	nc := kerr.NotController.Code
	switch r := resp.(type) {
	case *kmsg.CreateACLsResponse:
		for _, x := range r.Results {
			if x.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.DeleteACLsResponse:
		for _, x := range r.Results {
			if x.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		for _, x := range r.Results {
			if x.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.AlterClientQuotasResponse:
		for _, x := range r.Entries {
			if x.ErrorCode == nc {
				return true
			}
		}
	}
	return false
}
