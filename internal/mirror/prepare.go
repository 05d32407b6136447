package mirror

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/wire"
)

// errPermanent marks a PREPARING error that retrying right away cannot fix:
// the partition goes FAILED (and tries again after the backoff).
var errPermanent = errors.New("permanent")

// errFinal marks an error that no retry fixes until the mirror or the
// source changes: the partition goes FAILED without a retry (Event.Final).
var errFinal = errors.New("final")

// errSourceChanged is the final error of a partition whose log holds a
// copy of cluster had's data while the mirror's bootstrap.servers now lead
// to cluster got: another cluster, even one with the same topic ids (another
// mirror of the same source), is not mirrored into that log.
func errSourceChanged(mirror, had, got string) error {
	return fmt.Errorf("mirror %s's source is now cluster %s, but this partition holds a copy of cluster %s: point bootstrap.servers back at %s, or remove the topic from the mirror and add it again to copy the new cluster from scratch: %w",
		mirror, got, had, had, errFinal)
}

// prepare is PREPARING's job: learn what the source holds of this
// cluster's epochs (the Last Mirrored Epoch), truncate the local log so
// that it is a prefix of the source's, and wait until the replicas that
// could become leader have truncated too. Transient failures (the source
// unreachable, a coordinator moving) are retried here with a growing
// pause; only permanent ones end in EvFailed.
//
// logSource is the cluster whose data the log holds a consistent copy of
// ("" if none). The truncation:
//   - the log holds this source's data (a recovery from FAILED, or a new
//     leader), whatever the LME: none; the LME cut belongs to the first
//     PREPARING after a failover, and the fetch's LastFetchedEpoch and the
//     source's DivergingEpoch answer find any divergence.
//   - LME -1 otherwise: the whole log goes, and it restarts at the source's
//     log start offset.
//   - LME >= 0: the log is cut where the LME ends, in the local log and on
//     the source (the smaller), so that the first local epoch above the LME
//     and anything of the LME the source does not have go.
func (d *driver) prepare(ctx context.Context, logSource string) Event {
	backoff := 100 * time.Millisecond
	for {
		src, err := d.prepareOnce(ctx, logSource)
		if err == nil {
			return Event{Kind: EvPrepared, Source: src}
		}
		if ctx.Err() != nil {
			return Event{}
		}
		d.stats.setError(err.Error())
		if errors.Is(err, errFinal) {
			return Event{Kind: EvFailed, Err: err.Error(), Final: true}
		}
		if errors.Is(err, errPermanent) {
			return Event{Kind: EvFailed, Err: err.Error()}
		}
		if sourceSecurityCause(err) != "" {
			return Event{Kind: EvFailed, Err: explainSourceError(err)}
		}
		d.log.Info("preparing the mirror partition failed; retrying", "error", err, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return Event{}
		case <-t.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// prepareOnce makes one attempt; it returns the source cluster id when
// done.
func (d *driver) prepareOnce(ctx context.Context, logSource string) (string, error) {
	rctx, cancel := context.WithTimeout(ctx, d.m.cfg.RequestTimeout)
	defer cancel()
	cl, info, err := d.source.client(rctx)
	if err != nil {
		return "", err
	}
	if logSource != "" && info.clusterID != logSource {
		return "", errSourceChanged(d.key.Mirror, logSource, info.clusterID)
	}
	md, err := sourceMetadata(rctx, cl, []string{d.tp.Topic})
	if err != nil {
		return "", err
	}
	t, ok := md.topics[d.tp.Topic]
	switch {
	case !ok || t.err == kerr.UnknownTopicOrPartition.Code:
		return "", fmt.Errorf("topic %q does not exist on the source cluster %s: %w", d.tp.Topic, info.clusterID, errPermanent)
	case t.err != 0:
		return "", fmt.Errorf("source metadata of %q: %w", d.tp.Topic, kerr.ErrorForCode(t.err))
	case t.id != d.topicID:
		return "", fmt.Errorf("topic %q has id %s on the source cluster %s, not %s: it was deleted and created again there, and the mirror does not copy another topic into this one: %w",
			d.tp.Topic, fmtID(t.id), info.clusterID, fmtID(d.topicID), errFinal)
	}
	sp, ok := t.parts[d.tp.Partition]
	if !ok {
		return "", fmt.Errorf("partition %d of %q does not exist on the source cluster: %w", d.tp.Partition, d.tp.Topic, errPermanent)
	}
	if sp.leader < 0 {
		return "", fmt.Errorf("partition %d of %q has no leader on the source cluster", d.tp.Partition, d.tp.Topic)
	}

	lme, lmeEnd, err := d.readLME(rctx, cl, info)
	if err != nil {
		return "", err
	}
	log := d.part.Log()
	if log == nil {
		return "", fmt.Errorf("%s has no local log", d.tp)
	}
	switch {
	case logSource == info.clusterID:
		// A retry (FAILED → PREPARING) or a new leader: the log already
		// holds a consistent copy of this source's data, mirrored after
		// any Last Mirrored Epoch cut. Cutting at the LME again would
		// throw away what was legitimately mirrored since (and move the
		// high watermark back under consumers); the fetch's
		// LastFetchedEpoch and the source's DivergingEpoch answer find
		// any divergence instead.
		d.log.Info("mirror partition resumes without truncation: its log holds the source's data", "source_cluster_id", info.clusterID, "last_mirrored_epoch", lme)
	case lme < 0:
		start, err := d.sourceLogStart(rctx, cl)
		if err != nil {
			return "", err
		}
		d.log.Info("mirror partition starts from scratch: truncating fully", "source_cluster_id", info.clusterID,
			"source_log_start_offset", start, "log_end_offset", log.LogEndOffset())
		if err := d.part.TruncateFullyInEpoch(start, d.leaderEpoch); err != nil {
			return "", fmt.Errorf("truncate %s fully to start at %d: %w", d.tp, start, err)
		}
	default:
		e, end := log.EndOffsetForEpoch(lme)
		if e < 0 {
			start, err := d.sourceLogStart(rctx, cl)
			if err != nil {
				return "", err
			}
			d.log.Warn("the source's last mirrored epoch is unknown to the local log: truncating fully", "last_mirrored_epoch", lme, "source_log_start_offset", start)
			if err := d.part.TruncateFullyInEpoch(start, d.leaderEpoch); err != nil {
				return "", fmt.Errorf("truncate %s fully to start at %d: %w", d.tp, start, err)
			}
			break
		}
		if lmeEnd >= 0 {
			end = min(end, lmeEnd)
		}
		if leo := log.LogEndOffset(); end < leo {
			d.log.Info("mirror partition truncates to the source's last mirrored epoch", "last_mirrored_epoch", lme,
				"end_offset", end, "log_end_offset", leo)
			if err := d.part.TruncateInEpoch(end, d.leaderEpoch); err != nil {
				return "", fmt.Errorf("truncate %s to %d: %w", d.tp, end, err)
			}
		}
	}
	if err := d.waitReplicasTruncated(ctx); err != nil {
		return "", err
	}
	return info.clusterID, nil
}

// readLME asks the source for this partition's Last Mirrored Epoch of this
// cluster: -1 when the source does not know ReadLastMirroredEpochs (not a
// kmirror) or recorded none.
func (d *driver) readLME(ctx context.Context, cl kmsg.Requestor, info sourceInfo) (int32, int64, error) {
	if !info.supportsLME {
		return -1, -1, nil
	}
	req := &wire.ReadLastMirroredEpochsRequest{ClusterID: d.m.cfg.ClusterID, Topics: []wire.ReadLastMirroredEpochsRequestTopic{
		{TopicID: d.topicID, Name: d.tp.Topic, Partitions: []int32{d.tp.Partition}},
	}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, -1, fmt.Errorf("read last mirrored epochs from the source: %w", err)
	}
	if resp.ErrorCode != 0 {
		return -1, -1, fmt.Errorf("read last mirrored epochs from the source: %w", kerr.ErrorForCode(resp.ErrorCode))
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.Partition != d.tp.Partition {
				continue
			}
			switch {
			case p.ErrorCode == 0:
				return p.LastMirroredEpoch, p.EndOffset, nil
			case p.ErrorCode == kerr.UnknownTopicID.Code || p.ErrorCode == kerr.UnknownTopicOrPartition.Code:
				return -1, -1, fmt.Errorf("last mirrored epoch of %s: %w: %w", d.tp, kerr.ErrorForCode(p.ErrorCode), errPermanent)
			default:
				return -1, -1, fmt.Errorf("last mirrored epoch of %s: %w", d.tp, kerr.ErrorForCode(p.ErrorCode))
			}
		}
	}
	return -1, -1, fmt.Errorf("the source did not answer for %s's last mirrored epoch", d.tp)
}

// sourceLogStart returns the source partition's log start offset.
func (d *driver) sourceLogStart(ctx context.Context, cl kmsg.Requestor) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = d.tp.Topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp = d.tp.Partition, -2
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("source log start of %s: %w", d.tp, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if t.Topic == d.tp.Topic && p.Partition == d.tp.Partition {
				if p.ErrorCode != 0 {
					return 0, fmt.Errorf("source log start of %s: %w", d.tp, kerr.ErrorForCode(p.ErrorCode))
				}
				return p.Offset, nil
			}
		}
	}
	return 0, fmt.Errorf("source log start of %s: no answer", d.tp)
}

// waitReplicasTruncated waits until every in-sync follower (every follower
// with mirror.support.unclean.leader.election) has fetched after the
// truncation from inside the leader's log: its log is then a prefix of the
// leader's, and no election can bring back what was truncated.
func (d *driver) waitReplicasTruncated(ctx context.Context) error {
	mark := d.m.cfg.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		st := d.part.State()
		if st.LeaderEpoch != d.leaderEpoch {
			return fmt.Errorf("%s: leadership moved while preparing", d.tp)
		}
		log := d.part.Log()
		if log == nil {
			return fmt.Errorf("%s has no local log", d.tp)
		}
		want := st.ISR
		if d.m.cfg.SupportUncleanLeaderElection {
			want = st.Replicas
		}
		fetches := d.part.FollowerFetches()
		leo, start := log.LogEndOffset(), log.LogStartOffset()
		var waiting []int32
		for _, r := range want {
			if r == d.m.cfg.NodeID {
				continue
			}
			f, ok := fetches[r]
			if !ok || !f.LastFetch.After(mark) || f.LogEndOffset > leo || f.LogEndOffset < start {
				waiting = append(waiting, r)
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		case <-d.part.Changed():
		}
	}
}
