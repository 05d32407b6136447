package controller

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// membership is where a topic stands towards its mirror, as its mirror.name
// config says. The controller moves topics between these; the mirror data
// plane on each partition leader turns them into partition states
// (mirroring → PREPARING/MIRRORING, paused → PAUSING/PAUSED, removed →
// STOPPING/STOPPED).
type membership int8

const (
	// notMirrored: no mirror.name.
	notMirrored membership = iota
	// mirroring: mirror.name = "<m>".
	mirroring
	// paused: mirror.name = "<m>.paused".
	paused
	// removed: mirror.name = "<m>.removed", failover requested or done.
	removed
)

// String names a membership as the error messages of the mirror APIs do.
func (m membership) String() string {
	switch m {
	case mirroring:
		return "MIRRORING"
	case paused:
		return "PAUSED"
	case removed:
		return "REMOVED"
	}
	return "NOT MIRRORED"
}

// parseMirrorName splits a mirror.name value into the mirror and the
// membership. Mirror names cannot end in the suffixes, so the split is
// unambiguous.
func parseMirrorName(v string) (string, membership) {
	switch {
	case v == "":
		return "", notMirrored
	case strings.HasSuffix(v, wire.PausedSuffix):
		return strings.TrimSuffix(v, wire.PausedSuffix), paused
	case strings.HasSuffix(v, wire.RemovedSuffix):
		return strings.TrimSuffix(v, wire.RemovedSuffix), removed
	}
	return v, mirroring
}

// mirrorNameValue is the mirror.name value of a membership of mirror.
func mirrorNameValue(mirror string, m membership) string {
	switch m {
	case paused:
		return mirror + wire.PausedSuffix
	case removed:
		return mirror + wire.RemovedSuffix
	case mirroring:
		return mirror
	}
	return ""
}

// topicMembership returns a topic's mirror and membership from the image.
func topicMembership(img *metadata.Image, topic string) (string, membership) {
	v, _ := img.Config(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: topic}, config.MirrorNameConfig)
	return parseMirrorName(v)
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
	for _, m := range []membership{mirroring, paused, removed} {
		for _, t := range img.MirrorTopics(mirrorNameValue(mirror, m)) {
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
