package controller

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// membership is where a topic stands towards its mirror
// (wire.MirrorMembership). The controller moves topics between these; the
// mirror data plane on each partition leader turns them into partition
// states (mirroring → PREPARING/MIRRORING, paused → PAUSING/PAUSED, removed
// → STOPPING/STOPPED) and reports a removed topic whose partitions are all
// STOPPED, which the controller then records as stopped.
type membership = wire.MirrorMembership

// The memberships under the names the controller's decisions use.
const (
	notMirrored = wire.NotMirrored
	mirroring   = wire.MembershipMirroring
	paused      = wire.MembershipPaused
	removed     = wire.MembershipRemoved
	stopped     = wire.MembershipStopped
)

// allMemberships are the memberships of a topic that has a mirror.
var allMemberships = []membership{mirroring, paused, removed, stopped}

// topicMembership returns a topic's mirror and membership from the image.
func topicMembership(img *metadata.Image, topic string) (string, membership) {
	v, _ := img.Config(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: topic}, config.MirrorNameConfig)
	return wire.ParseMirrorName(v)
}

// mirrorExists reports whether the image has a mirror of that name (a MIRROR
// config resource with at least one key; bootstrap.servers is required).
func mirrorExists(img *metadata.Image, name string) bool {
	return len(img.Configs(metadata.ConfigResource{Type: metadata.ResourceMirror, Name: name})) > 0
}

// mirrorMembers returns the topics whose mirror.name refers to mirror, in any
// membership, with their membership.
func mirrorMembers(img *metadata.Image, mirror string) map[string]membership {
	out := map[string]membership{}
	for _, m := range allMemberships {
		for _, t := range img.MirrorTopics(wire.MirrorNameValue(mirror, m)) {
			out[t] = m
		}
	}
	return out
}

// validateMirrorName checks a mirror name (wire.ValidateMirrorName) and
// returns an INVALID_REQUEST whose message is the rule alone, without the
// Kafka error's name appended.
func validateMirrorName(name string) error {
	err := wire.ValidateMirrorName(name)
	if err == nil {
		return nil
	}
	return errf(kerr.InvalidRequest, "%s", strings.TrimSuffix(err.Error(), ": "+kerr.InvalidRequest.Message))
}
