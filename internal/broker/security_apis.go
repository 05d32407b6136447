package broker

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/wire"
)

// SecurityService returns the broker's ACL, SCRAM and client quota APIs as a
// service of their own: CreateAcls, DeleteAcls, AlterUserScramCredentials
// and AlterClientQuotas are forwarded to the active controller, which
// writes the records; DescribeAcls, DescribeUserScramCredentials and
// DescribeClientQuotas are answered from this broker's metadata image. The server attaches it next to the broker.
//
// Who may call them is checked before dispatch (CLUSTER ALTER, CLUSTER
// DESCRIBE: auth.RequiredFor), so the handlers do not check again.
func (b *Broker) SecurityService() wire.Service { return securityService{b: b} }

type securityService struct{ b *Broker }

// APIs implements wire.Service.
func (s securityService) APIs() []wire.API {
	return []wire.API{
		{Key: int16(kmsg.DescribeACLs), MinVersion: 0, MaxVersion: 3, Handle: s.describeACLs},
		{Key: int16(kmsg.CreateACLs), MinVersion: 0, MaxVersion: 3, Handle: s.forward},
		{Key: int16(kmsg.DeleteACLs), MinVersion: 0, MaxVersion: 3, Handle: s.forward},
		{Key: int16(kmsg.DescribeUserSCRAMCredentials), MinVersion: 0, MaxVersion: 0, Handle: s.describeScram},
		{Key: int16(kmsg.AlterUserSCRAMCredentials), MinVersion: 0, MaxVersion: 0, Handle: s.forward},
		{Key: int16(kmsg.DescribeClientQuotas), MinVersion: 0, MaxVersion: 1, Handle: s.describeClientQuotas},
		{Key: int16(kmsg.AlterClientQuotas), MinVersion: 0, MaxVersion: 1, Handle: s.forward},
	}
}

// forward sends a request to the active controller unchanged and returns its
// answer at the request's version; when no controller answers, every item
// fails with NOT_CONTROLLER (REQUEST_TIMED_OUT once the request's context
// ended), which clients retry.
func (s securityService) forward(ctx context.Context, _ *wire.RequestContext, req kmsg.Request) (wire.Response, error) {
	resp, code, msg := s.b.sendToController(ctx, req)
	if code == nil {
		return resp, nil
	}
	return wire.ErrorResponse(req, fmt.Errorf("%s: %w", msg, code)), nil
}

// describeACLs lists the ACLs a filter matches, grouped by resource pattern
// and sorted (type, pattern type, name; then principal, host, operation,
// permission), as DescribeAcls reports them.
func (s securityService) describeACLs(_ context.Context, _ *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.DescribeACLsRequest)
	if !ok {
		return nil, requestTypeError("DescribeAcls", kreq)
	}
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.Version = req.Version
	f := auth.Filter{
		ResourceType: req.ResourceType,
		ResourceName: req.ResourceName,
		PatternType:  req.ResourcePatternType,
		Principal:    req.Principal,
		Host:         req.Host,
		Operation:    req.Operation,
		Permission:   req.PermissionType,
	}
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = wire.ErrorCode(err), wire.ErrorMessage(err)
		return resp, nil
	}
	var matched []auth.Binding
	for _, e := range s.b.rm.Image().ACLs() {
		if b := auth.BindingOf(e); f.Matches(b) {
			matched = append(matched, b)
		}
	}
	slices.SortFunc(matched, func(x, y auth.Binding) int {
		return cmp.Or(
			cmp.Compare(x.ResourceType, y.ResourceType),
			cmp.Compare(x.PatternType, y.PatternType),
			cmp.Compare(x.ResourceName, y.ResourceName),
			cmp.Compare(x.Principal, y.Principal),
			cmp.Compare(x.Host, y.Host),
			cmp.Compare(x.Operation, y.Operation),
			cmp.Compare(x.Permission, y.Permission),
		)
	})
	for _, b := range matched {
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != b.ResourceType || resp.Resources[n-1].ResourceName != b.ResourceName ||
			resp.Resources[n-1].ResourcePatternType != b.PatternType {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			resp.Resources = append(resp.Resources, r)
			n++
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, a)
	}
	return resp, nil
}

// describeScram lists users' SCRAM mechanisms and iterations (never salts or
// keys): all users when the request names none, else each named user, with
// RESOURCE_NOT_FOUND for a user without credentials and DUPLICATE_RESOURCE
// for a user named twice, as Kafka answers.
func (s securityService) describeScram(_ context.Context, _ *wire.RequestContext, kreq kmsg.Request) (wire.Response, error) {
	req, ok := kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	if !ok {
		return nil, requestTypeError("DescribeUserScramCredentials", kreq)
	}
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	resp.Version = req.Version
	byUser := map[string][]kmsg.DescribeUserSCRAMCredentialsResponseResultCredentialInfo{}
	var users []string
	for _, c := range s.b.rm.Image().ScramCredentials() {
		if _, seen := byUser[c.Name]; !seen {
			users = append(users, c.Name)
		}
		info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
		info.Mechanism, info.Iterations = c.Mechanism, c.Iterations
		byUser[c.Name] = append(byUser[c.Name], info)
	}
	result := func(user string) kmsg.DescribeUserSCRAMCredentialsResponseResult {
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User, r.CredentialInfos = user, byUser[user]
		return r
	}
	if len(req.Users) == 0 {
		for _, u := range users {
			resp.Results = append(resp.Results, result(u))
		}
		return resp, nil
	}
	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	done := map[string]bool{}
	for _, u := range req.Users {
		if done[u.Name] {
			continue
		}
		done[u.Name] = true
		r := result(u.Name)
		switch {
		case count[u.Name] > 1:
			r.CredentialInfos = nil
			r.ErrorCode = kerr.DuplicateResource.Code
			msg := "Cannot describe SCRAM credentials for the same user twice in a single request: " + u.Name
			r.ErrorMessage = &msg
		case len(r.CredentialInfos) == 0:
			r.ErrorCode = kerr.ResourceNotFound.Code
			msg := "Attempt to describe a user credential that does not exist: " + u.Name
			r.ErrorMessage = &msg
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}
