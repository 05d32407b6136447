package controller

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
	"github.com/kmirror/kmirror/internal/wire"
)

// mirrorStateConfigs are the configs __mirror_state is created with: the
// latest state of each key is all that matters.
var mirrorStateConfigs = map[string]string{"cleanup.policy": "compact"}

// decideCreateMirror validates a CreateMirror request and returns the
// records that create the mirror: one ConfigRecord per property of the
// MIRROR resource, preceded by the records that create __mirror_state when
// it does not exist yet (the first mirror), so that both land in one entry.
//
// A property with a null value is skipped (its default applies). Errors:
// INVALID_REQUEST for a bad name, DUPLICATE_RESOURCE when the mirror exists,
// INVALID_CONFIG naming the property (unknown, invalid, missing
// bootstrap.servers, a security protocol not supported yet, or given twice).
// Secrets never appear in the error messages; they are stored encrypted
// when the node has password.encoder.secret (mirrorconfig.SecretCodec),
// else as given.
func decideCreateMirror(v *view, req *wire.CreateMirrorRequest) ([]metadata.Record, error) {
	if err := validateMirrorName(req.MirrorName); err != nil {
		return nil, err
	}
	if mirrorExists(v.img, req.MirrorName) {
		return nil, errf(kerr.DuplicateResource, "mirror %q already exists", req.MirrorName)
	}
	props := map[string]string{}
	for _, c := range req.Configs {
		if c.Value == nil {
			continue
		}
		if _, dup := props[c.Name]; dup {
			return nil, errf(kerr.InvalidConfig, "mirror property %s is given more than once", c.Name)
		}
		props[c.Name] = *c.Value
	}
	parsed, err := mirrorconfig.Parse(props)
	if err != nil {
		return nil, errf(kerr.InvalidConfig, "mirror %q: %s", req.MirrorName, err.Error())
	}
	if _, err := parsed.ClientOpts(); err != nil {
		return nil, errf(kerr.InvalidConfig, "mirror %q: %s", req.MirrorName, err.Error())
	}

	var recs []metadata.Record
	if _, ok := v.img.Topic(MirrorStateTopic); !ok {
		trecs, resp := decideCreateTopics(v, internalTopicRequest(MirrorStateTopic, 0, mirrorStateConfigs), true)
		if t := resp.Topics[0]; t.ErrorCode != 0 {
			msg := ""
			if t.ErrorMessage != nil {
				msg = ": " + *t.ErrorMessage
			}
			ke, _ := kerr.ErrorForCode(t.ErrorCode).(*kerr.Error)
			if ke == nil {
				ke = kerr.UnknownServerError
			}
			return nil, errf(ke, "mirror %q: cannot create %s%s", req.MirrorName, MirrorStateTopic, msg)
		}
		recs = append(recs, trecs...)
	}
	stored, err := mirrorconfig.SecretCodecOf(v.cfg).SealSecrets(props)
	if err != nil {
		return nil, errf(kerr.UnknownServerError, "mirror %q: encrypting its secrets: %s", req.MirrorName, err.Error())
	}
	res := metadata.ConfigResource{Type: metadata.ResourceMirror, Name: req.MirrorName}
	for _, k := range slices.Sorted(maps.Keys(stored)) {
		recs = append(recs, metadata.SetConfig(res, k, stored[k]))
	}
	return recs, nil
}

// createMirror is the driver of CreateMirror.
func (c *Controller) createMirror(req *wire.CreateMirrorRequest) *wire.CreateMirrorResponse {
	resp := &wire.CreateMirrorResponse{Version: req.Version}
	err := c.decide(func(v *view) error {
		recs, err := decideCreateMirror(v, req)
		if err != nil || req.ValidateOnly {
			return err
		}
		if _, err := c.propose(recs); err != nil {
			return proposeError(err)
		}
		names := make([]string, 0, len(req.Configs))
		for _, cfg := range req.Configs {
			if cfg.Value != nil {
				names = append(names, cfg.Name)
			}
		}
		slices.Sort(names)
		// Property names only: values may be secrets.
		c.log.Info("mirror created", "mirror", req.MirrorName, "properties", names, "records", len(recs))
		return nil
	})
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = codeOf(err), messageOf(err)
	}
	return resp
}
