package controller

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

// The explicit leader epoch bump. Failing a mirrored partition over needs
// its leader epoch above every epoch in its log, which are the source's
// epochs and may be far above the destination's own. The partition leader
// asks the controller with an AlterPartition request (v2+) whose partition
// entry carries kmirror's tagged field leaderEpochBumpTag: the least leader
// epoch wanted (int32). The controller then writes a PartitionChangeRecord
// with the same leader and ISR and the minimum-leader-epoch tag. The tag is
// honoured only from the cluster's own nodes (the controller listener, or
// this node's Channel): Channel.Send strips it from everything it forwards,
// and a tagged request from another listener is an ordinary AlterPartition.

// leaderEpochBumpTag is the AlterPartition partition tag of the bump; it has
// the number of the PartitionChangeRecord field it turns into.
const leaderEpochBumpTag = metadata.MinLeaderEpochTag

// leaderEpochBumpOf returns the minimum leader epoch a partition entry asks
// for, if it carries the tag (a malformed value counts as absent).
func leaderEpochBumpOf(rp *kmsg.AlterPartitionRequestTopicPartition) (int32, bool) {
	var v []byte
	found := false
	rp.UnknownTags.Each(func(k uint32, b []byte) {
		if k == leaderEpochBumpTag {
			v, found = b, true
		}
	})
	if !found || len(v) != 4 {
		return 0, false
	}
	return int32(binary.BigEndian.Uint32(v)), true
}

// isLeaderEpochBump reports whether req is an AlterPartition carrying the
// bump tag on any partition.
func isLeaderEpochBump(req kmsg.Request) bool {
	ap, ok := req.(*kmsg.AlterPartitionRequest)
	if !ok {
		return false
	}
	for i := range ap.Topics {
		for j := range ap.Topics[i].Partitions {
			if _, ok := leaderEpochBumpOf(&ap.Topics[i].Partitions[j]); ok {
				return true
			}
		}
	}
	return false
}

// stripLeaderEpochBump removes the bump tag from an AlterPartition request,
// keeping other unknown tags.
func stripLeaderEpochBump(req kmsg.Request) {
	ap, ok := req.(*kmsg.AlterPartitionRequest)
	if !ok {
		return
	}
	for i := range ap.Topics {
		for j := range ap.Topics[i].Partitions {
			rp := &ap.Topics[i].Partitions[j]
			var kept kmsg.Tags
			rp.UnknownTags.Each(func(k uint32, v []byte) {
				if k != leaderEpochBumpTag {
					kept.Set(k, v)
				}
			})
			rp.UnknownTags = kept
		}
	}
}

// decideLeaderEpochBump decides one partition's bump: the record to write
// (nil when the epoch is already high enough, which makes a retry after a
// lost response succeed) and the partition's state after it.
// senderEpoch is the leader epoch the sender knows: a newer one means this
// controller lags (NOT_CONTROLLER), an older one that the sender lags
// (FENCED_LEADER_EPOCH; it retries once its metadata caught up).
func decideLeaderEpochBump(img *metadata.Image, topic *metadata.TopicImage, partition, senderEpoch, minEpoch int32) (*metadata.PartitionChangeRecord, metadata.PartitionState, error) {
	st, ok := topic.Partition(partition)
	switch {
	case !ok:
		return nil, st, errf(kerr.UnknownTopicOrPartition, "%s-%d does not exist", topic.Name, partition)
	case minEpoch < 0:
		return nil, st, errf(kerr.InvalidRequest, "minimum leader epoch %d is negative", minEpoch)
	case st.Leader == metadata.NoLeader:
		return nil, st, errf(kerr.LeaderNotAvailable, "%s-%d has no leader", topic.Name, partition)
	case st.LeaderEpoch >= minEpoch:
		return nil, st, nil
	case senderEpoch > st.LeaderEpoch:
		return nil, st, errf(kerr.NotController, "%s-%d: leader epoch %d is newer than this controller's %d", topic.Name, partition, senderEpoch, st.LeaderEpoch)
	case senderEpoch < st.LeaderEpoch:
		return nil, st, errf(kerr.FencedLeaderEpoch, "%s-%d: leader epoch %d is older than the current %d", topic.Name, partition, senderEpoch, st.LeaderEpoch)
	}
	min := minEpoch
	rec := &metadata.PartitionChangeRecord{TopicID: topic.ID, Partition: partition, LeaderEpoch: &min}
	st.LeaderEpoch = max(st.LeaderEpoch+1, minEpoch)
	st.PartitionEpoch++
	return rec, st, nil
}

// decideLeaderEpochBumps decides a tagged AlterPartition request: every
// tagged partition is bumped; untagged entries are refused (a bump request
// is not also an ISR change).
func decideLeaderEpochBumps(img *metadata.Image, req *kmsg.AlterPartitionRequest) ([]metadata.Record, *kmsg.AlterPartitionResponse) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	resp.Version = req.Version
	var recs []metadata.Record
	for _, rt := range req.Topics {
		out := kmsg.NewAlterPartitionResponseTopic()
		out.Topic, out.TopidID = rt.Topic, rt.TopicID
		var topic *metadata.TopicImage
		var ok bool
		if req.Version >= 2 {
			topic, ok = img.TopicByID(metadata.Uuid(rt.TopicID))
		} else {
			topic, ok = img.Topic(rt.Topic)
		}
		for i := range rt.Partitions {
			rp := &rt.Partitions[i]
			res := kmsg.NewAlterPartitionResponseTopicPartition()
			res.Partition = rp.Partition
			minEpoch, tagged := leaderEpochBumpOf(rp)
			var rec *metadata.PartitionChangeRecord
			var st metadata.PartitionState
			var err error
			switch {
			case !ok && req.Version >= 2:
				err = errf(kerr.UnknownTopicID, "topic id %s does not exist", metadata.Uuid(rt.TopicID))
			case !ok:
				err = errf(kerr.UnknownTopicOrPartition, "topic %s does not exist", rt.Topic)
			case !tagged:
				err = errf(kerr.InvalidRequest, "a leader epoch bump request may not also change an ISR")
			default:
				rec, st, err = decideLeaderEpochBump(img, topic, rp.Partition, rp.LeaderEpoch, minEpoch)
			}
			if err != nil {
				res.ErrorCode = codeOf(err)
			} else {
				if rec != nil {
					recs = append(recs, rec)
				}
				res.LeaderID, res.LeaderEpoch, res.ISR = st.Leader, st.LeaderEpoch, slices.Clone(st.ISR)
				res.LeaderRecoveryState, res.PartitionEpoch = int8(st.LeaderRecoveryState), st.PartitionEpoch
			}
			out.Partitions = append(out.Partitions, res)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return recs, resp
}

// serveLeaderEpochBump serves req if it is a bump (from the cluster's own
// nodes: internal_tags.go); ok is false for anything else, which the ordinary
// AlterPartition path serves.
func (c *Controller) serveLeaderEpochBump(req kmsg.Request) (kmsg.Response, bool) {
	ap, isAP := req.(*kmsg.AlterPartitionRequest)
	if !isAP || ap.Version < 2 || ap.Version > 3 || !isLeaderEpochBump(ap) {
		return nil, false
	}
	var resp *kmsg.AlterPartitionResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideLeaderEpochBumps(v.img, ap)
		if len(recs) == 0 {
			return nil
		}
		if _, err := c.propose(recs); err != nil {
			failed := ap.ResponseKind().(*kmsg.AlterPartitionResponse)
			failed.Version, failed.ErrorCode = ap.Version, codeOf(proposeError(err))
			resp = failed
			return nil
		}
		for _, r := range recs {
			pc := r.(*metadata.PartitionChangeRecord)
			c.log.Info("leader epoch bumped for a mirror failover", "topic_id", pc.TopicID, "partition", pc.Partition, "min_leader_epoch", *pc.LeaderEpoch)
		}
		return nil
	})
	if err != nil {
		resp = ap.ResponseKind().(*kmsg.AlterPartitionResponse)
		resp.Version, resp.ErrorCode = ap.Version, codeOf(err)
	}
	return resp, true
}

// bumpRetryBackoff paces BumpLeaderEpoch while this node's metadata catches
// up with the controller's.
const bumpRetryBackoff = 20 * time.Millisecond

// BumpLeaderEpoch makes the active controller raise the leader epoch of a
// partition to at least minEpoch, keeping its leader and ISR, and returns
// the resulting epoch. A partition already at minEpoch or above is left as
// it is (so a retry after a lost answer succeeds). The mirror data plane
// calls it on the leader of a mirrored partition in STOPPING; it then waits
// for the new epoch in its own metadata.
//
// The request states the leader epoch of this node's metadata image; while
// the controller answers that it is stale (FENCED_LEADER_EPOCH) or that the
// controller lags, BumpLeaderEpoch waits and retries with a newer image,
// until ctx ends. Other refusals are errors wrapping the Kafka error
// (kerr.UnknownTopicID, kerr.LeaderNotAvailable, ...).
func (c *Channel) BumpLeaderEpoch(ctx context.Context, topicID metadata.Uuid, partition int32, minEpoch int32) (int32, error) {
	for {
		req, err := bumpRequest(c.q.Image(), topicID, partition, minEpoch)
		if err != nil {
			return 0, err
		}
		resp, err := c.send(ctx, req)
		if err != nil {
			return 0, fmt.Errorf("bump leader epoch of %s-%d: %w", topicID, partition, err)
		}
		epoch, err := bumpResult(resp, partition)
		if err == nil {
			return epoch, nil
		}
		if !kerr.IsRetriable(err) && codeOf(err) != kerr.FencedLeaderEpoch.Code && codeOf(err) != kerr.NotController.Code {
			return 0, fmt.Errorf("bump leader epoch of %s-%d to %d: %w", topicID, partition, minEpoch, err)
		}
		timer := time.NewTimer(bumpRetryBackoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return 0, fmt.Errorf("bump leader epoch of %s-%d to %d: %w (last answer: %v)", topicID, partition, minEpoch, ctx.Err(), err)
		case <-c.closing:
			timer.Stop()
			return 0, ErrChannelClosed
		case <-timer.C:
		}
	}
}

// bumpRequest builds the tagged AlterPartition of a bump from img: the
// partition's leader, its broker epoch, and the leader and partition
// epochs as this node knows them.
func bumpRequest(img *metadata.Image, topicID metadata.Uuid, partition, minEpoch int32) (*kmsg.AlterPartitionRequest, error) {
	topic, ok := img.TopicByID(topicID)
	if !ok {
		return nil, fmt.Errorf("bump leader epoch: topic id %s: %w", topicID, kerr.UnknownTopicID)
	}
	st, ok := topic.Partition(partition)
	if !ok {
		return nil, fmt.Errorf("bump leader epoch: %s-%d: %w", topic.Name, partition, kerr.UnknownTopicOrPartition)
	}
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 2
	req.BrokerID, req.BrokerEpoch = st.Leader, -1
	if reg, ok := img.Broker(st.Leader); ok {
		req.BrokerEpoch = reg.Epoch
	}
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic, rt.TopicID = topic.Name, topicID
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = partition, st.LeaderEpoch, st.PartitionEpoch
	rp.NewISR = slices.Clone(st.ISR)
	rp.LeaderRecoveryState = int8(st.LeaderRecoveryState)
	rp.UnknownTags.Set(leaderEpochBumpTag, binary.BigEndian.AppendUint32(nil, uint32(minEpoch)))
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req, nil
}

// bumpResult reads a bump's answer for partition.
func bumpResult(resp kmsg.Response, partition int32) (int32, error) {
	r, ok := resp.(*kmsg.AlterPartitionResponse)
	if !ok {
		return 0, fmt.Errorf("unexpected answer %T: %w", resp, kerr.UnknownServerError)
	}
	if r.ErrorCode != 0 {
		return 0, kerrOf(r.ErrorCode)
	}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			if p.Partition != partition {
				continue
			}
			if p.ErrorCode != 0 {
				return 0, kerrOf(p.ErrorCode)
			}
			return p.LeaderEpoch, nil
		}
	}
	return 0, fmt.Errorf("no answer for partition %d: %w", partition, kerr.UnknownServerError)
}
