package metadata

import "github.com/twmb/franz-go/pkg/kerr"

// config returns the value of one config as the delta sees it.
func (d *Delta) config(res ConfigResource, name string) (string, bool) {
	if cd, ok := d.configs[res]; ok {
		if ch, ok := cd.set[name]; ok {
			return ch.value, !ch.remove
		}
		if cd.cleared {
			return "", false
		}
	}
	v, ok := d.base.configs[res][name]
	return v, ok
}

func (d *Delta) replayConfig(x *ConfigRecord, off uint64) error {
	if !knownResourceType(x.ResourceType) {
		return replayErr(x, off, kerr.InvalidRequest, "config resource type %d is unknown", x.ResourceType)
	}
	if x.Name == "" {
		return replayErr(x, off, kerr.InvalidConfig, "%s: empty config name", x.Resource())
	}
	if x.ResourceName == "" && x.ResourceType != ResourceBroker {
		// Only BROKER has a resource with an empty name: the cluster default.
		return replayErr(x, off, kerr.InvalidConfig, "%s resource with an empty name", ResourceTypeName(x.ResourceType))
	}
	res := x.Resource()
	cd, ok := d.configs[res]
	if !ok {
		cd = &configDelta{set: map[string]configChange{}}
		d.configs[res] = cd
	}
	if x.Remove {
		cd.set[x.Name] = configChange{remove: true}
	} else {
		cd.set[x.Name] = configChange{value: x.Value}
	}
	return nil
}
