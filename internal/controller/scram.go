package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/auth"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// decideAlterScram applies AlterUserScramCredentials with Kafka's rules:
// one result per user, in the order users first appear; a user whose
// deletions and upsertions name the same mechanism twice gets
// DUPLICATE_RESOURCE, a deletion of a missing credential RESOURCE_NOT_FOUND,
// an upsertion with an unknown mechanism, an empty name, salt or salted
// password, or iterations outside [4096, 16384] the error of
// auth.ScramCredentialFromUpsertion. A user with any failure changes
// nothing. The server keeps only the stored and server keys derived from
// the salted password the client sent.
func decideAlterScram(v *view, req *kmsg.AlterUserSCRAMCredentialsRequest) ([]metadata.Record, *kmsg.AlterUserSCRAMCredentialsResponse) {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	resp.Version = req.Version
	type userState struct {
		err  error
		recs []metadata.Record
		seen map[int8]bool
	}
	var order []string
	users := map[string]*userState{}
	state := func(name string) *userState {
		u, ok := users[name]
		if !ok {
			u = &userState{seen: map[int8]bool{}}
			users[name] = u
			order = append(order, name)
		}
		return u
	}
	dup := func(u *userState, mech int8) bool {
		if u.seen[mech] {
			u.err = errf(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
			return true
		}
		u.seen[mech] = true
		return false
	}
	for _, d := range req.Deletions {
		u := state(d.Name)
		if u.err != nil || dup(u, d.Mechanism) {
			continue
		}
		switch {
		case d.Name == "":
			u.err = errf(kerr.UnacceptableCredential, "Username must not be empty")
		case !validScramCode(d.Mechanism):
			u.err = errf(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		default:
			if _, ok := v.img.ScramCredential(d.Name, d.Mechanism); !ok {
				u.err = errf(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
				continue
			}
			u.recs = append(u.recs, &metadata.RemoveUserScramCredentialRecord{Name: d.Name, Mechanism: d.Mechanism})
		}
	}
	for _, up := range req.Upsertions {
		u := state(up.Name)
		if u.err != nil || dup(u, up.Mechanism) {
			continue
		}
		cred, err := auth.ScramCredentialFromUpsertion(up)
		if err != nil {
			u.err = errf(scramErrorCode(err), "%s", capitalize(err.Error()))
			continue
		}
		u.recs = append(u.recs, &metadata.UserScramCredentialRecord{ScramCredential: cred})
	}
	var recs []metadata.Record
	for _, name := range order {
		u := users[name]
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = name
		if u.err != nil {
			r.ErrorCode, r.ErrorMessage = codeOf(u.err), messageOf(u.err)
		} else {
			recs = append(recs, u.recs...)
		}
		resp.Results = append(resp.Results, r)
	}
	return recs, resp
}

func validScramCode(m int8) bool {
	_, ok := auth.ScramMechanismByCode(m)
	return ok
}

// scramErrorCode returns the Kafka error a credential validation error
// wraps.
func scramErrorCode(err error) *kerr.Error {
	if ke, ok := kerr.ErrorForCode(wire.ErrorCode(err)).(*kerr.Error); ok {
		return ke
	}
	return kerr.UnknownServerError
}

// capitalize starts a message with a capital, as Kafka's messages do.
func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// alterUserScramCredentials is the driver of AlterUserScramCredentials.
func (c *Controller) alterUserScramCredentials(req *kmsg.AlterUserSCRAMCredentialsRequest) (kmsg.Response, error) {
	var resp *kmsg.AlterUserSCRAMCredentialsResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideAlterScram(v, req)
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
		c.log.Info("scram credentials altered", "records", len(recs))
		return nil
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return resp, nil
}

// wireErrorResponse fails every item of req with err.
func wireErrorResponse(req kmsg.Request, err error) kmsg.Response {
	return wire.ErrorResponse(req, err)
}
