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
// that change.
func mirrorConfigRecords(img *metadata.Image, res metadata.ConfigResource, changes map[string]*string) ([]metadata.Record, error) {
	current := img.Configs(res)
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
			recs = append(recs, metadata.SetConfig(res, n, *v))
		}
	}
	return recs, nil
}
