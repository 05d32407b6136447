package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// decideDeleteMirror validates a DeleteMirror request and returns the
// records that delete the mirror: the removal of every property of its
// MIRROR resource and of the mirror.name of its REMOVED and STOPPED topics,
// in one entry. It is refused (INVALID_REQUEST, naming them) while topics
// are MIRRORING or PAUSED in the mirror, or while a partition of a REMOVED
// topic is not STOPPED; states holds the persisted states of those
// partitions (statesErr when they could not be read). An unknown mirror is
// RESOURCE_NOT_FOUND.
//
// The mirror's __mirror_state records are not the controller's: the mirror
// coordinators tombstone them when they see the mirror gone.
func decideDeleteMirror(img *metadata.Image, name string, states map[stateKey]wire.MirrorPartitionState, statesErr error) ([]metadata.Record, error) {
	if err := validateMirrorName(name); err != nil {
		return nil, err
	}
	props := img.Configs(metadata.ConfigResource{Type: metadata.ResourceMirror, Name: name})
	if len(props) == 0 {
		return nil, errf(kerr.ResourceNotFound, "mirror %q does not exist", name)
	}
	members := mirrorMembers(img, name)
	var active []string
	for _, t := range slices.Sorted(maps.Keys(members)) {
		if m := members[t]; m != removed && m != stopped {
			active = append(active, fmt.Sprintf("%q (%s)", t, m))
		}
	}
	if len(active) > 0 {
		return nil, errf(kerr.InvalidRequest, "mirror %q still has topics: %s; remove them from the mirror (failover) before deleting it", name, strings.Join(active, ", "))
	}
	var recs []metadata.Record
	var notStopped []string
	for _, t := range slices.Sorted(maps.Keys(members)) {
		ti, _ := img.Topic(t)
		if members[t] == stopped {
			// Recorded as complete: no state to check.
			recs = append(recs, metadata.RemoveConfig(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: t}, config.MirrorNameConfig))
			continue
		}
		for _, k := range partitionKeys(name, ti) {
			if statesErr != nil {
				return nil, statesErr
			}
			st, ok := states[k]
			switch {
			case !ok:
				return nil, errf(kerr.RequestTimedOut, "the topics of mirror %q changed while their states were read; retry", name)
			case st != wire.MirrorStateStopped:
				notStopped = append(notStopped, fmt.Sprintf("%s-%d (%s)", t, k.Partition, st))
			}
		}
		recs = append(recs, metadata.RemoveConfig(metadata.ConfigResource{Type: metadata.ResourceTopic, Name: t}, config.MirrorNameConfig))
	}
	if len(notStopped) > 0 {
		return nil, errf(kerr.InvalidRequest, "mirror %q has partitions still failing over: %s; delete it once they are STOPPED", name, strings.Join(notStopped, ", "))
	}
	res := metadata.ConfigResource{Type: metadata.ResourceMirror, Name: name}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		recs = append(recs, metadata.RemoveConfig(res, k))
	}
	return recs, nil
}

// deleteMirror is the driver of DeleteMirror: it reads the states of the
// REMOVED topics' partitions from the mirror coordinators outside the
// decision lock, then decides on the latest image.
func (c *Controller) deleteMirror(ctx context.Context, req *wire.DeleteMirrorRequest) *wire.DeleteMirrorResponse {
	resp := &wire.DeleteMirrorResponse{Version: req.Version}
	fail := func(err error) *wire.DeleteMirrorResponse {
		resp.ErrorCode, resp.ErrorMessage = codeOf(err), messageOf(err)
		return resp
	}
	if !c.IsActive() {
		return fail(errNotActive)
	}
	pre := c.q.Image()
	// A refusal the image alone decides needs no coordinator.
	if _, err := decideDeleteMirror(pre, req.MirrorName, map[stateKey]wire.MirrorPartitionState{}, nil); err != nil && !isRetryAfterStates(err) {
		return fail(err)
	}
	var keys []stateKey
	for t, m := range mirrorMembers(pre, req.MirrorName) {
		if ti, ok := pre.Topic(t); ok && m == removed {
			keys = append(keys, partitionKeys(req.MirrorName, ti)...)
		}
	}
	var states map[stateKey]wire.MirrorPartitionState
	var statesErr error
	if len(keys) > 0 {
		qctx, cancel := context.WithTimeout(ctx, sourceQueryTimeout(req.TimeoutMillis))
		states, statesErr = c.mirror.stateReader(c)(qctx, pre, keys)
		cancel()
	}
	err := c.decide(func(v *view) error {
		recs, err := decideDeleteMirror(v.img, req.MirrorName, states, statesErr)
		if err != nil {
			return err
		}
		if _, err := c.propose(recs); err != nil {
			return proposeError(err)
		}
		c.log.Info("mirror deleted", "mirror", req.MirrorName, "removed_topics_released", len(keys) > 0)
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return resp
}

// isRetryAfterStates reports whether a decision failed only for lack of
// coordinator states (the pre-check passes no states).
func isRetryAfterStates(err error) bool {
	return codeOf(err) == kerr.RequestTimedOut.Code
}
