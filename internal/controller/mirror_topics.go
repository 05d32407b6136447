package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/wire"
)

// mirrorTopicsOp is one of the membership changes of an existing mirror
// topic: pause, resume, remove (failover).
type mirrorTopicsOp int8

const (
	opPause mirrorTopicsOp = iota
	opResume
	opRemove
)

// transition returns the membership a topic moves to from cur, or false when
// the operation is not allowed from cur: pause only from mirroring, resume
// only from paused, remove from mirroring or paused.
func (op mirrorTopicsOp) transition(cur membership) (membership, bool) {
	switch {
	case op == opPause && cur == mirroring:
		return paused, true
	case op == opResume && cur == paused:
		return mirroring, true
	case op == opRemove && (cur == mirroring || cur == paused):
		return removed, true
	}
	return cur, false
}

// refusal says why op does not apply to a topic in membership cur, in the
// form docs/protocol.md gives.
func (op mirrorTopicsOp) refusal(topic string, cur membership) string {
	switch op {
	case opPause:
		return `topic "` + topic + `" is ` + cur.String() + `; only MIRRORING topics can be paused`
	case opResume:
		return `topic "` + topic + `" is ` + cur.String() + `; only PAUSED topics can be resumed`
	}
	return `topic "` + topic + `" is ` + cur.String() + ` (already failed over or failing over); only MIRRORING or PAUSED topics can be removed from a mirror`
}

// verb names op in log lines.
func (op mirrorTopicsOp) verb() string {
	switch op {
	case opPause:
		return "paused"
	case opResume:
		return "resumed"
	}
	return "removed from mirror (failover)"
}

// decideMirrorTopics validates a Pause, Resume or RemoveTopicsFrom mirror
// request and returns the ConfigRecords that move each accepted topic's
// mirror.name, and the response. Topics succeed or fail on their own:
// UNKNOWN_TOPIC_OR_PARTITION for a topic the cluster lacks, INVALID_REQUEST
// for a topic in no mirror or in another mirror (the message names it), in
// a membership the operation does not allow (the message gives it), or
// named twice. An unknown mirror is RESOURCE_NOT_FOUND for the request.
func decideMirrorTopics(img *metadata.Image, op mirrorTopicsOp, req *wire.MirrorTopicsRequest) ([]metadata.Record, *wire.MirrorTopicsResponse) {
	if err := validateMirrorName(req.MirrorName); err != nil {
		return nil, mirrorTopicsFailure(req, err)
	}
	if !mirrorExists(img, req.MirrorName) {
		return nil, mirrorTopicsFailure(req, errf(kerr.ResourceNotFound, "mirror %q does not exist", req.MirrorName))
	}
	resp := &wire.MirrorTopicsResponse{Version: req.Version}
	counts := map[string]int{}
	for _, t := range req.Topics {
		counts[t.Name]++
	}
	var recs []metadata.Record
	answered := map[string]bool{}
	for _, t := range req.Topics {
		if answered[t.Name] {
			continue
		}
		answered[t.Name] = true
		res := wire.MirrorTopicsResponseTopic{Name: t.Name}
		rec, id, err := decideMirrorTopic(img, op, req.MirrorName, t.Name, counts[t.Name])
		res.TopicID = id
		if err != nil {
			res.ErrorCode, res.ErrorMessage = codeOf(err), messageOf(err)
		} else if rec != nil {
			recs = append(recs, rec)
		}
		resp.Topics = append(resp.Topics, res)
	}
	return recs, resp
}

// decideMirrorTopic decides one topic of decideMirrorTopics.
func decideMirrorTopic(img *metadata.Image, op mirrorTopicsOp, mirror, topic string, count int) (metadata.Record, [16]byte, error) {
	if count > 1 {
		return nil, [16]byte{}, errf(kerr.InvalidRequest, "topic %q is named more than once", topic)
	}
	ti, ok := img.Topic(topic)
	if !ok {
		return nil, [16]byte{}, errf(kerr.UnknownTopicOrPartition, "topic %q does not exist", topic)
	}
	id := [16]byte(ti.ID)
	in, cur := topicMembership(img, topic)
	switch {
	case cur == notMirrored:
		return nil, id, errf(kerr.InvalidRequest, "topic %q is in no mirror, not %q", topic, mirror)
	case in != mirror:
		return nil, id, errf(kerr.InvalidRequest, "topic %q is in mirror %q, not %q", topic, in, mirror)
	}
	next, ok := op.transition(cur)
	if !ok {
		return nil, id, errf(kerr.InvalidRequest, "%s", op.refusal(topic, cur))
	}
	res := metadata.ConfigResource{Type: metadata.ResourceTopic, Name: topic}
	return metadata.SetConfig(res, config.MirrorNameConfig, wire.MirrorNameValue(mirror, next)), id, nil
}

// changeMirrorTopics is the driver of Pause, Resume and RemoveTopicsFrom
// mirror.
func (c *Controller) changeMirrorTopics(op mirrorTopicsOp, req *wire.MirrorTopicsRequest) *wire.MirrorTopicsResponse {
	var resp *wire.MirrorTopicsResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideMirrorTopics(v.img, op, req)
		if len(recs) == 0 || req.ValidateOnly {
			return nil
		}
		if _, err := c.propose(recs); err != nil {
			failAccepted(resp, proposeError(err))
			return nil
		}
		for _, t := range resp.Topics {
			if t.ErrorCode == 0 {
				c.log.Info("mirror topic "+op.verb(), "mirror", req.MirrorName, "topic", t.Name)
			}
		}
		return nil
	})
	if err != nil {
		return mirrorTopicsFailure(req, err)
	}
	return resp
}

// failAccepted turns every successful topic of resp into err (its records
// were not committed).
func failAccepted(resp *wire.MirrorTopicsResponse, err error) {
	for i := range resp.Topics {
		if t := &resp.Topics[i]; t.ErrorCode == 0 {
			t.ErrorCode, t.ErrorMessage = codeOf(err), messageOf(err)
		}
	}
}
