package controller

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
)

// This file holds what AlterConfigs and IncrementalAlterConfigs share:
// resolving the resource, validating the configs it would end up with, and
// turning the change into ConfigRecords.

// configResource checks a request's resource and returns it. TOPIC
// resources must name an existing topic; BROKER resources are the cluster
// default ("") or a broker id (registered or not, as in Kafka, so that a
// broker's configs can be set before it first starts). MIRROR resources must
// name an existing mirror (mirror_alter_configs.go). Other types are not
// stored by the controller: BROKER_LOGGER is per node.
func configResource(img *metadata.Image, typ kmsg.ConfigResourceType, name string) (metadata.ConfigResource, error) {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if _, ok := img.Topic(name); !ok {
			return metadata.ConfigResource{}, errf(kerr.UnknownTopicOrPartition, "Topic '%s' does not exist.", name)
		}
		return metadata.ConfigResource{Type: metadata.ResourceTopic, Name: name}, nil
	case kmsg.ConfigResourceTypeBroker:
		if name != "" {
			id, err := strconv.ParseInt(name, 10, 32)
			if err != nil {
				return metadata.ConfigResource{}, errf(kerr.InvalidRequest, "Unable to parse broker name %q as a base 10 number.", name)
			}
			if id < 0 {
				return metadata.ConfigResource{}, errf(kerr.InvalidRequest, "Invalid negative broker ID.")
			}
		}
		return metadata.ConfigResource{Type: metadata.ResourceBroker, Name: name}, nil
	case kmsg.ConfigResourceType(metadata.ResourceMirror):
		return mirrorConfigResource(img, name)
	}
	return metadata.ConfigResource{}, errf(kerr.InvalidRequest, "Unknown resource type %d", int8(typ))
}

// configDefinition returns the definition of a config of a resource, or
// false when the name is unknown.
func configDefinition(res metadata.ConfigResource, name string) (config.Definition, bool) {
	switch res.Type {
	case metadata.ResourceTopic:
		return config.TopicDefinition(name)
	case metadata.ResourceMirror:
		return mirrorconfig.Lookup(name)
	}
	if d, ok := config.BrokerDefinition(name); ok {
		return d, true
	}
	if _, d, ok := config.BaseName(name); ok {
		return d, true
	}
	return config.Definition{}, false
}

// configRecords validates changes (name → new value, nil to remove) to res
// on top of its current configs and returns the ConfigRecords. Topic
// configs emit a record only for values that change; broker configs always
// do, so that brokers reload them (Kafka's rule).
//
// Topic configs: mirror.name is refused (only SetMirrorNames changes it),
// the configs the topic ends up with must pass config.ValidateTopicConfigs
// (INVALID_CONFIG otherwise), and a mirrored topic's synced configs change
// only through its mirror's sync (syncMirror names the mirror of a tagged
// sync request; syncedConfigRefusal). Broker configs:
// the values set must pass config.ValidateBrokerConfigs, which also refuses
// read-only configs, per-broker configs set as the cluster default and
// (unlike Kafka, which ignores them) unknown names; like Kafka, every such
// failure is INVALID_REQUEST.
func configRecords(v *view, res metadata.ConfigResource, changes map[string]*string, syncMirror string) ([]metadata.Record, error) {
	if res.Type == metadata.ResourceMirror {
		return mirrorConfigRecords(v, res, changes)
	}
	img := v.img
	current := img.Configs(res)
	names := slices.Sorted(maps.Keys(changes))
	if res.Type == metadata.ResourceTopic {
		if _, ok := changes[config.MirrorNameConfig]; ok {
			return nil, errMirrorNameManaged
		}
		final := maps.Clone(current)
		for _, n := range names {
			if v := changes[n]; v != nil {
				final[n] = *v
			} else {
				delete(final, n)
			}
		}
		delete(final, config.MirrorNameConfig) // set by kmirror, valid by construction
		if err := config.ValidateTopicConfigs(final); err != nil {
			return nil, err
		}
	} else {
		perBroker := res.Name != ""
		set := map[string]string{}
		var readOnly, notDefault []string
		for _, n := range names {
			v := changes[n]
			if v == nil {
				// Removing a config that is set is always allowed (even
				// one a newer node defined); removing an unknown name that
				// is not set is a mistake.
				if _, had := current[n]; !had {
					if _, known := configDefinition(res, n); !known {
						return nil, errf(kerr.InvalidRequest, "%s: unknown broker config", n)
					}
				}
				continue
			}
			set[n] = *v
			if d, ok := configDefinition(res, n); ok {
				switch {
				case d.Update == config.ReadOnly:
					readOnly = append(readOnly, n)
				case d.Update == config.PerBroker && !perBroker:
					notDefault = append(notDefault, n)
				}
			}
		}
		if len(readOnly) > 0 {
			return nil, errf(kerr.InvalidRequest, "Invalid config value for resource %s: Cannot update these configs dynamically: %s", res, strings.Join(readOnly, ","))
		}
		if len(notDefault) > 0 {
			return nil, errf(kerr.InvalidRequest, "Invalid config value for resource %s: Cannot update these configs at default cluster level, broker id must be specified: %s", res, strings.Join(notDefault, ","))
		}
		if err := config.ValidateBrokerConfigs(set, perBroker); err != nil {
			// Kafka answers a broker config that does not validate with
			// INVALID_REQUEST (KAFKA-13609 keeps it for compatibility).
			return nil, errf(kerr.InvalidRequest, "%v", err)
		}
	}
	var recs []metadata.Record
	for _, n := range names {
		v := changes[n]
		old, had := current[n]
		if res.Type == metadata.ResourceTopic && ((v == nil && !had) || (v != nil && had && old == *v)) {
			continue
		}
		if v == nil {
			recs = append(recs, metadata.RemoveConfig(res, n))
		} else {
			recs = append(recs, metadata.SetConfig(res, n, *v))
		}
	}
	if err := syncedConfigRefusal(img, res, recs, syncMirror); err != nil {
		return nil, err
	}
	return recs, nil
}

// duplicateResources counts the resources of a request by (type, name):
// a resource that appears twice fails everywhere it appears.
func duplicateResources[T any](items []T, key func(T) metadata.ConfigResource) map[metadata.ConfigResource]bool {
	seen := map[metadata.ConfigResource]int{}
	for _, it := range items {
		seen[key(it)]++
	}
	dup := map[metadata.ConfigResource]bool{}
	for k, n := range seen {
		if n > 1 {
			dup[k] = true
		}
	}
	return dup
}

// errDuplicateResource answers every entry of a resource given twice.
var errDuplicateResource = errf(kerr.InvalidRequest, "Each resource must appear at most once.")
