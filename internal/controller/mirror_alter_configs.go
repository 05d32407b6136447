package controller

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
)

// A mirror's properties change through IncrementalAlterConfigs (and the
// legacy AlterConfigs) on resource type MIRROR (64), named after the
// mirror, as a topic's configs do: the operator fixes a password, rotates a
// certificate path or switches a sync off without deleting the mirror. The
// properties the mirror ends up with must pass mirrorconfig.Validate, so a
// stored mirror configuration is always valid; errors name properties,
// never a secret's value. Brokers see the change in their metadata and
// reconnect to the source with the new properties.

// mirrorConfigResource checks a MIRROR resource of a config request.
func mirrorConfigResource(img *metadata.Image, name string) (metadata.ConfigResource, error) {
	if !mirrorExists(img, name) {
		return metadata.ConfigResource{}, errf(kerr.ResourceNotFound, "mirror %q does not exist", name)
	}
	return metadata.ConfigResource{Type: metadata.ResourceMirror, Name: name}, nil
}

// mirrorConfigRecords validates changes (name → new value, nil to remove)
// to a mirror's properties and returns the ConfigRecords of the values
// that change, secrets stored as decideCreateMirror stores them.
func mirrorConfigRecords(v *view, res metadata.ConfigResource, changes map[string]*string) ([]metadata.Record, error) {
	secrets := mirrorconfig.SecretCodecOf(v.cfg)
	current, err := secrets.Reveal(v.img.Configs(res))
	if err != nil {
		return nil, errf(kerr.InvalidConfig, "mirror %q: %s", res.Name, err.Error())
	}
	final := maps.Clone(current)
	for n, v := range changes {
		if v != nil {
			final[n] = *v
		} else {
			delete(final, n)
		}
	}
	if err := mirrorconfig.Validate(final); err != nil {
		return nil, err
	}
	var recs []metadata.Record
	for _, n := range slices.Sorted(maps.Keys(changes)) {
		v := changes[n]
		old, had := current[n]
		switch {
		case v == nil && had:
			recs = append(recs, metadata.RemoveConfig(res, n))
		case v != nil && (!had || old != *v):
			value := *v
			if mirrorconfig.IsSensitive(n) {
				if value, err = secrets.Seal(n, value); err != nil {
					return nil, errf(kerr.UnknownServerError, "mirror %q: encrypting %s: %s", res.Name, n, err.Error())
				}
			}
			recs = append(recs, metadata.SetConfig(res, n, value))
		}
	}
	return recs, nil
}
