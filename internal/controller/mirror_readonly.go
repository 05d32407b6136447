package controller

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
	"github.com/kmirror/kmirror/internal/mirror/readonly"
	"github.com/kmirror/kmirror/internal/wire"
)

// The controller's part of the read-only rule of mirrored topics (package
// readonly): while a topic is MIRRORING, PAUSED or failing over (REMOVED),
// it cannot be deleted or grown, and the configs its mirror's config sync
// owns cannot be changed, except by that mirror's own sync, whose
// IncrementalAlterConfigs and CreatePartitions requests carry
// mirrorSyncTag with the mirror's name (internal_tags.go).

// syncingMirror returns the mirror a request's sync tag names ("" for
// anyone else's request).
func syncingMirror(req kmsg.Request) string {
	v, _ := tagValue(req, mirrorSyncTag)
	return string(v)
}

// mirroredTopicRefusal returns the refusal of what (a change of a topic's
// data or shape) while the topic is read-only, nil when it may go ahead:
// the topic is in no mirror or failed over, or syncMirror (a tagged sync's
// mirror) is the mirror it is MIRRORING from.
func mirroredTopicRefusal(img *metadata.Image, topic, what, syncMirror string) error {
	raw, _ := img.Config(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: topic}, config.MirrorNameConfig)
	mirror, m := wire.ParseMirrorName(raw)
	if !m.ReadOnly() || (syncMirror != "" && syncMirror == mirror && m == mirroring) {
		return nil
	}
	return readonly.Refusal(topic, raw, what, kerr.PolicyViolation)
}

// syncedConfigRefusal checks the records of a topic config change: a
// read-only topic whose mirror syncs topic configs
// (sync.topic.configs.enabled) refuses a change of a config the sync owns
// (mirrorconfig.ManagedTopicConfig), which the next sync round would undo
// anyway. Other configs (min.insync.replicas, the throttled-replica lists)
// stay the operator's.
func syncedConfigRefusal(img *metadata.Image, res metadata.ConfigResource, recs []metadata.Record, syncMirror string) error {
	if res.Type != metadata.ResourceTopic {
		return nil
	}
	raw, _ := img.Config(res, config.MirrorNameConfig)
	mirror, m := wire.ParseMirrorName(raw)
	if !m.ReadOnly() {
		return nil
	}
	if v, ok := img.Config(metadata.ConfigResource{Type: metadata.ResourceMirror, Name: mirror}, mirrorconfig.SyncTopicConfigsEnabled); ok && strings.EqualFold(v, "false") {
		return nil
	}
	var managed []string
	for _, r := range recs {
		if cr, ok := r.(*metadata.ConfigRecord); ok && mirrorconfig.ManagedTopicConfig(cr.Name) {
			managed = append(managed, cr.Name)
		}
	}
	if len(managed) == 0 {
		return nil
	}
	return mirroredTopicRefusal(img, res.Name, fmt.Sprintf("changing %s (the mirror's config sync copies it from the source)", strings.Join(managed, ", ")), syncMirror)
}
