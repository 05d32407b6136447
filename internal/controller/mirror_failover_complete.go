package controller

import (
	"context"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// Recording a complete failover. RemoveTopicsFromMirror sets a topic's
// mirror.name to "<m>.removed"; each partition's leader then fails the
// partition over (STOPPING) and persists STOPPED in __mirror_state. While
// the topic is REMOVED, a partition's new leader learns that it is STOPPED
// (and may take writes) only by reading __mirror_state, and the controller
// refuses deleting or growing the topic. Once every partition is STOPPED
// the failover is over for good, so the controller records it in the
// metadata: mirror.name becomes "<m>.stopped", and from then on the topic
// is an ordinary one that depends on no mirror coordinator.
//
// A partition leader whose partition reaches STOPPED (or that starts
// leading a STOPPED one) reports it with Channel.CompleteFailover: an
// IncrementalAlterConfigs (v1) setting the topic's mirror.name to
// "<m>.stopped", tagged with failoverCompleteTag (the topic's id). The
// controller reads the persisted state of every partition of the topic and
// writes the change only if all are STOPPED; otherwise it answers
// INVALID_REQUEST naming the partitions still failing over (the last
// partition to stop reports again). Each leader persists STOPPED before it
// reports, so the report whose states are read last sees every partition
// STOPPED.

// failoverReport is what a tagged IncrementalAlterConfigs reports: the
// topic and its id.
type failoverReport struct {
	topic string
	id    metadata.Uuid
}

// failoverReportOf returns the report a request carries, if it is one.
func failoverReportOf(req kmsg.Request) (failoverReport, bool) {
	r, ok := req.(*kmsg.IncrementalAlterConfigsRequest)
	if !ok {
		return failoverReport{}, false
	}
	v, tagged := tagValue(req, failoverCompleteTag)
	if !tagged || len(v) != 16 || len(r.Resources) != 1 || r.Resources[0].ResourceType != kmsg.ConfigResourceTypeTopic {
		return failoverReport{}, false
	}
	return failoverReport{topic: r.Resources[0].ResourceName, id: metadata.Uuid(v)}, true
}

// decideFailoverComplete decides a report on img: the record that marks the
// topic STOPPED, none when it is marked already, or why not.
func decideFailoverComplete(img *metadata.Image, rep failoverReport, states map[stateKey]wire.MirrorPartitionState, statesErr error) ([]metadata.Record, error) {
	ti, ok := img.Topic(rep.topic)
	if !ok || ti.ID != rep.id {
		return nil, errf(kerr.UnknownTopicID, "topic %q with id %s does not exist", rep.topic, rep.id)
	}
	mirror, m := topicMembership(img, rep.topic)
	switch m {
	case stopped:
		return nil, nil
	case removed:
	default:
		return nil, errf(kerr.InvalidRequest, "topic %q is %s, not REMOVED from a mirror", rep.topic, m)
	}
	if statesErr != nil {
		return nil, statesErr
	}
	var failing []string
	for _, k := range partitionKeys(mirror, ti) {
		st, ok := states[k]
		switch {
		case !ok:
			return nil, errf(kerr.RequestTimedOut, "topic %q changed while its mirror states were read; retry", rep.topic)
		case st != wire.MirrorStateStopped:
			failing = append(failing, fmt.Sprintf("%d (%s)", k.Partition, st))
		}
	}
	if len(failing) > 0 {
		return nil, errf(kerr.InvalidRequest, "topic %q is still failing over from mirror %q: partitions %s", rep.topic, mirror, strings.Join(failing, ", "))
	}
	res := metadata.ConfigResource{Type: metadata.ResourceTopic, Name: rep.topic}
	return []metadata.Record{metadata.SetConfig(res, config.MirrorNameConfig, wire.MirrorNameValue(mirror, stopped))}, nil
}

// serveFailoverComplete serves req if it is a failover report (from the
// cluster's own nodes: internal_tags.go); ok is false for anything else.
// The states are read outside the decision lock, and decided on the latest
// image.
func (c *Controller) serveFailoverComplete(ctx context.Context, req kmsg.Request) (kmsg.Response, bool) {
	rep, ok := failoverReportOf(req)
	if !ok {
		return nil, false
	}
	r := req.(*kmsg.IncrementalAlterConfigsRequest)
	answer := func(err error) (kmsg.Response, bool) {
		resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		resp.Version = r.Version
		res := kmsg.NewIncrementalAlterConfigsResponseResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, rep.topic
		if err != nil {
			res.ErrorCode, res.ErrorMessage = codeOf(err), messageOf(err)
		}
		resp.Resources = append(resp.Resources, res)
		return resp, true
	}
	if !c.IsActive() {
		return answer(errNotActive)
	}
	pre := c.q.Image()
	if _, err := decideFailoverComplete(pre, rep, map[stateKey]wire.MirrorPartitionState{}, nil); err != nil && !isRetryAfterStates(err) {
		return answer(err)
	}
	var states map[stateKey]wire.MirrorPartitionState
	var statesErr error
	if ti, ok := pre.Topic(rep.topic); ok {
		mirror, _ := topicMembership(pre, rep.topic)
		qctx, cancel := context.WithTimeout(ctx, sourceQueryTimeout(0))
		states, statesErr = c.mirror.stateReader(c)(qctx, pre, partitionKeys(mirror, ti))
		cancel()
	}
	return answer(c.decide(func(v *view) error {
		recs, err := decideFailoverComplete(v.img, rep, states, statesErr)
		if err != nil || len(recs) == 0 {
			return err
		}
		if _, err := c.propose(recs); err != nil {
			return proposeError(err)
		}
		c.log.Info("mirror failover complete: every partition STOPPED", "topic", rep.topic, "topic_id", rep.id)
		return nil
	}))
}

// CompleteFailover reports to the active controller that the partitions of
// a topic removed from its mirror may all be STOPPED (see above). It
// returns nil once the topic is recorded as STOPPED, an error wrapping
// INVALID_REQUEST while some partition still fails over (another
// partition's report completes it), and other errors when no controller
// answered or the states could not be read (retry).
func (c *Channel) CompleteFailover(ctx context.Context, topic string, topicID metadata.Uuid, mirror string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	rc.Name, rc.Op, rc.Value = config.MirrorNameConfig, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(wire.MirrorNameValue(mirror, stopped))
	rr.Configs = append(rr.Configs, rc)
	req.Resources = append(req.Resources, rr)
	setTag(req, failoverCompleteTag, topicID[:])
	resp, err := c.send(ctx, req)
	if err != nil {
		return fmt.Errorf("report the failover of %q complete: %w", topic, err)
	}
	r, ok := resp.(*kmsg.IncrementalAlterConfigsResponse)
	if !ok || len(r.Resources) != 1 {
		return fmt.Errorf("report the failover of %q complete: unexpected answer %T: %w", topic, resp, kerr.UnknownServerError)
	}
	if code := r.Resources[0].ErrorCode; code != 0 {
		if m := r.Resources[0].ErrorMessage; m != nil {
			return fmt.Errorf("%s: %w", *m, kerrOf(code))
		}
		return kerrOf(code)
	}
	return nil
}
