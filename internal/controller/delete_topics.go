package controller

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// decideDeleteTopics validates a DeleteTopics request (names up to v5;
// names or topic ids from v6) and returns a RemoveTopicRecord per topic to
// delete and the response. Each topic fails or succeeds on its own:
//
//   - delete.topic.enable=false refuses every topic: TOPIC_DELETION_DISABLED,
//     or INVALID_REQUEST before v3, which predates that code (Kafka's rule);
//   - internal topics are refused the same way: the coordinators that own
//     them would lose their state;
//   - a mirrored topic (MIRRORING, PAUSED, or failing over) is refused
//     with POLICY_VIOLATION (package readonly);
//   - a name or id given twice, or an entry with both or neither, is
//     INVALID_REQUEST; an unknown name is UNKNOWN_TOPIC_OR_PARTITION and an
//     unknown id UNKNOWN_TOPIC_ID.
func decideDeleteTopics(v *view, req *kmsg.DeleteTopicsRequest) ([]metadata.Record, *kmsg.DeleteTopicsResponse) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	resp.Version = req.Version

	type entry struct {
		name *string
		id   metadata.Uuid
	}
	var entries []entry
	if req.Version >= 6 {
		for _, t := range req.Topics {
			entries = append(entries, entry{name: t.Topic, id: metadata.Uuid(t.TopicID)})
		}
	} else {
		for _, n := range req.TopicNames {
			entries = append(entries, entry{name: &n})
		}
	}
	nameCount := map[string]int{}
	idCount := map[metadata.Uuid]int{}
	for _, e := range entries {
		if e.name != nil && e.id.IsZero() {
			nameCount[*e.name]++
		}
		if e.name == nil && !e.id.IsZero() {
			idCount[e.id]++
		}
	}

	disabled := func() error {
		if req.Version < 3 {
			return errf(kerr.InvalidRequest, "Topic deletion is disabled (delete.topic.enable=false).")
		}
		return errf(kerr.TopicDeletionDisabled, "Topic deletion is disabled (delete.topic.enable=false).")
	}
	if !v.cfg.DeleteTopicEnable {
		// Kafka refuses the whole request before looking any topic up.
		for _, e := range entries {
			res := kmsg.NewDeleteTopicsResponseTopic()
			res.Topic, res.TopicID = e.name, e.id
			err := disabled()
			res.ErrorCode, res.ErrorMessage = codeOf(err), messageOf(err)
			resp.Topics = append(resp.Topics, res)
		}
		return nil, resp
	}
	var recs []metadata.Record
	deleting := map[metadata.Uuid]bool{}
	answeredName := map[string]bool{}
	answeredID := map[metadata.Uuid]bool{}
	for _, e := range entries {
		res := kmsg.NewDeleteTopicsResponseTopic()
		res.Topic = e.name
		res.TopicID = e.id
		var err error
		var t *metadata.TopicImage
		switch {
		case e.name == nil && e.id.IsZero():
			err = errf(kerr.InvalidRequest, "Neither topic name nor id were specified.")
		case e.name != nil && !e.id.IsZero():
			err = errf(kerr.InvalidRequest, "You may not specify both topic name and topic id.")
		case e.name != nil:
			if answeredName[*e.name] {
				continue
			}
			answeredName[*e.name] = true
			if nameCount[*e.name] > 1 {
				err = errf(kerr.InvalidRequest, "Duplicate topic name.")
				break
			}
			var ok bool
			if t, ok = v.img.Topic(*e.name); !ok {
				err = errf(kerr.UnknownTopicOrPartition, "Topic '%s' does not exist.", *e.name)
			}
		default:
			if answeredID[e.id] {
				continue
			}
			answeredID[e.id] = true
			if idCount[e.id] > 1 {
				err = errf(kerr.InvalidRequest, "Duplicate topic id.")
				break
			}
			var ok bool
			if t, ok = v.img.TopicByID(e.id); !ok {
				err = errf(kerr.UnknownTopicID, "Topic id %s does not exist.", e.id)
			} else {
				name := t.Name
				res.Topic = &name
			}
		}
		if err == nil {
			res.TopicID = t.ID
			switch {
			case IsInternalTopic(t.Name):
				if req.Version < 3 {
					err = errf(kerr.InvalidRequest, "Topic '%s' is an internal topic and cannot be deleted.", t.Name)
				} else {
					err = errf(kerr.TopicDeletionDisabled, "Topic '%s' is an internal topic and cannot be deleted.", t.Name)
				}
			case deleting[t.ID]:
				err = errf(kerr.InvalidRequest, "The provided topic name maps to an ID that was already supplied.")
			default:
				err = mirroredTopicRefusal(v.img, t.Name, "deleting the topic", "")
			}
		}
		if err != nil {
			res.ErrorCode = codeOf(err)
			res.ErrorMessage = messageOf(err)
		} else {
			deleting[t.ID] = true
			recs = append(recs, &metadata.RemoveTopicRecord{ID: t.ID})
		}
		resp.Topics = append(resp.Topics, res)
	}
	return recs, resp
}

// deleteTopics is the driver of DeleteTopics.
func (c *Controller) deleteTopics(req *kmsg.DeleteTopicsRequest) (kmsg.Response, error) {
	var resp *kmsg.DeleteTopicsResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideDeleteTopics(v, req)
		if len(recs) == 0 {
			return nil
		}
		if _, err := c.propose(recs); err != nil {
			perr := proposeError(err)
			for i := range resp.Topics {
				if t := &resp.Topics[i]; t.ErrorCode == 0 {
					t.ErrorCode, t.ErrorMessage = codeOf(perr), messageOf(perr)
				}
			}
			return nil
		}
		for _, t := range resp.Topics {
			if t.ErrorCode == 0 && t.Topic != nil {
				c.log.Info("topic deleted", "topic", *t.Topic, "topic_id", metadata.Uuid(t.TopicID))
			}
		}
		return nil
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return resp, nil
}
