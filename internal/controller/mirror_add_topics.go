package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
	"github.com/kmirror/kmirror/internal/wire"
)

// addTopicsInput is what the AddTopicsToMirror driver gathers outside the
// decision lock, from the source cluster and the mirror coordinators, for
// the decision to check against the latest image.
type addTopicsInput struct {
	// props are the mirror's properties the source was queried with.
	props map[string]string
	// source holds the source's answer per topic; a topic that is missing
	// was not asked about.
	source map[string]sourceTopic
	// sourceErr is set when the source query failed as a whole.
	sourceErr error
	// states holds the persisted states of the partitions of the topics
	// that are REMOVED from a mirror (they may join once STOPPED).
	states map[stateKey]wire.MirrorPartitionState
	// statesErr is set when those states could not be read.
	statesErr error
}

// decideAddTopics validates an AddTopicsToMirror request on the image and
// the gathered input and returns the records of every accepted topic in
// one list, so that they commit together, and the response:
//
//   - a topic missing on this cluster is created with the source's topic id
//     and partition count, the source's configs (except the never-synced
//     ones and those kmirror does not know), a replication factor of
//     default.replication.factor capped at the usable brokers, and
//     mirror.name set in the same records;
//   - an existing topic must have the source's topic id
//     (INCONSISTENT_TOPIC_ID) and no more partitions than the source
//     (INVALID_PARTITIONS); missing partitions are added; then mirror.name
//     is set;
//   - a topic in a mirror (this one or another), MIRRORING or PAUSED, is
//     refused (INVALID_REQUEST naming the mirror); a REMOVED one may join
//     once every partition is STOPPED, a STOPPED one at once (failback);
//   - a topic the source lacks is UNKNOWN_TOPIC_OR_PARTITION; internal
//     topics and invalid names are refused.
//
// An unknown mirror is RESOURCE_NOT_FOUND for the whole request.
func decideAddTopics(v *view, req *wire.MirrorTopicsRequest, in addTopicsInput) ([]metadata.Record, *wire.MirrorTopicsResponse) {
	img := v.img
	if err := validateMirrorName(req.MirrorName); err != nil {
		return nil, mirrorTopicsFailure(req, err)
	}
	props := img.Configs(metadata.ConfigResource{Type: metadata.ResourceMirror, Name: req.MirrorName})
	if len(props) == 0 {
		return nil, mirrorTopicsFailure(req, errf(kerr.ResourceNotFound, "mirror %q does not exist", req.MirrorName))
	}
	if in.props != nil && !maps.Equal(props, in.props) {
		return nil, mirrorTopicsFailure(req, errf(kerr.RequestTimedOut, "mirror %q changed while its source was queried; retry", req.MirrorName))
	}
	counts := map[string]int{}
	for _, t := range req.Topics {
		counts[t.Name]++
	}
	taken := map[string]string{}
	for _, t := range img.Topics() {
		taken[collisionKey(t.Name)] = t.Name
	}
	d := &addTopicsDecision{v: v, mirror: req.MirrorName, in: in,
		create: &createTopicsDecision{v: v, internal: true, taken: taken}}
	resp := &wire.MirrorTopicsResponse{Version: req.Version}
	var recs []metadata.Record
	answered := map[string]bool{}
	for _, t := range req.Topics {
		if answered[t.Name] {
			continue
		}
		answered[t.Name] = true
		res := wire.MirrorTopicsResponseTopic{Name: t.Name}
		var trecs []metadata.Record
		var err error
		if counts[t.Name] > 1 {
			err = errf(kerr.InvalidRequest, "topic %q is named more than once", t.Name)
		} else {
			trecs, res.TopicID, err = d.topic(t.Name)
		}
		if err != nil {
			res.ErrorCode, res.ErrorMessage = codeOf(err), messageOf(err)
		} else {
			recs = append(recs, trecs...)
		}
		resp.Topics = append(resp.Topics, res)
	}
	return recs, resp
}

// addTopicsDecision carries what the topics of one AddTopicsToMirror
// request share.
type addTopicsDecision struct {
	v      *view
	mirror string
	in     addTopicsInput
	// create decides the creation of missing topics; its taken and created
	// counters span the request.
	create *createTopicsDecision
	// added counts the partitions the request adds to existing topics.
	added int
}

// topic decides one topic: its records and its id (zero when unknown).
func (d *addTopicsDecision) topic(name string) ([]metadata.Record, [16]byte, error) {
	img := d.v.img
	if err := validateTopicName(name); err != nil {
		return nil, [16]byte{}, err
	}
	if IsInternalTopic(name) {
		return nil, [16]byte{}, errf(kerr.InvalidRequest, "topic %q is an internal topic and cannot be mirrored", name)
	}
	dest, exists := img.Topic(name)
	var id [16]byte
	if exists {
		id = dest.ID
		if err := d.checkMembership(dest); err != nil {
			return nil, id, err
		}
	}
	src, err := d.source(name)
	if err != nil {
		return nil, id, err
	}
	if exists {
		recs, err := d.joinExisting(dest, src)
		return recs, id, err
	}
	recs, err := d.createMirrored(name, src)
	if err != nil {
		return nil, id, err
	}
	return recs, src.ID, nil
}

// checkMembership refuses an existing topic that is in a mirror, unless it
// was removed from one and every partition has STOPPED.
func (d *addTopicsDecision) checkMembership(dest *metadata.TopicImage) error {
	in, cur := topicMembership(d.v.img, dest.Name)
	switch cur {
	case notMirrored, stopped:
		// A stopped topic's failover is complete (failback).
		return nil
	case mirroring, paused:
		if in == d.mirror {
			return errf(kerr.InvalidRequest, "topic %q is already in mirror %q (%s)", dest.Name, in, cur)
		}
		return errf(kerr.InvalidRequest, "topic %q is in mirror %q (%s); remove it from that mirror first", dest.Name, in, cur)
	}
	if d.in.statesErr != nil {
		return d.in.statesErr
	}
	for _, k := range partitionKeys(in, dest) {
		st, ok := d.in.states[k]
		switch {
		case !ok:
			return errf(kerr.RequestTimedOut, "topic %q changed while its mirror states were read; retry", dest.Name)
		case st != wire.MirrorStateStopped:
			return errf(kerr.InvalidRequest, "topic %q is still failing over from mirror %q: partition %d is %s, not STOPPED", dest.Name, in, k.Partition, st)
		}
	}
	return nil
}

// source returns the source's answer for a topic, or the error the topic
// gets without one.
func (d *addTopicsDecision) source(name string) (sourceTopic, error) {
	src, ok := d.in.source[name]
	switch {
	case !ok && d.in.sourceErr != nil:
		return src, sourceQueryError(d.mirror, d.in.sourceErr)
	case !ok:
		return src, errf(kerr.RequestTimedOut, "topic %q was not looked up on the source cluster of mirror %q; retry", name, d.mirror)
	case errors.Is(src.Err, kerr.UnknownTopicOrPartition), errors.Is(src.Err, kerr.UnknownTopicID):
		return src, errf(kerr.UnknownTopicOrPartition, "topic %q does not exist on the source cluster of mirror %q", name, d.mirror)
	case src.Err != nil:
		var ke *kerr.Error
		if !errors.As(src.Err, &ke) {
			ke = kerr.UnknownServerError
		}
		return src, errf(ke, "the source cluster of mirror %q refused topic %q: %v", d.mirror, name, src.Err)
	case src.ID == metadata.Uuid{}:
		return src, errf(kerr.InvalidRequest, "the source cluster of mirror %q reports no topic id for %q; mirroring keeps topic ids, so the source must have them (Kafka 2.8 or later)", d.mirror, name)
	case src.Partitions <= 0:
		return src, errf(kerr.InvalidPartitions, "the source cluster of mirror %q reports no partitions for topic %q", d.mirror, name)
	}
	return src, nil
}

// joinExisting decides an existing topic that may join the mirror.
func (d *addTopicsDecision) joinExisting(dest *metadata.TopicImage, src sourceTopic) ([]metadata.Record, error) {
	if dest.ID != src.ID {
		return nil, errf(kerr.InconsistentTopicID, "topic %q has id %s on this cluster but %s on the source cluster of mirror %q; a mirrored topic must keep the source's id",
			dest.Name, dest.ID, src.ID, d.mirror)
	}
	have := int32(len(dest.Partitions))
	if have > src.Partitions {
		return nil, errf(kerr.InvalidPartitions, "topic %q has %d partitions on this cluster but %d on the source cluster of mirror %q; partitions cannot be removed",
			dest.Name, have, src.Partitions, d.mirror)
	}
	var recs []metadata.Record
	if have < src.Partitions {
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = dest.Name, src.Partitions
		precs, err := createPartitions(d.v, t, d.create.created+d.added)
		if err != nil {
			return nil, err
		}
		d.added += len(precs)
		recs = append(recs, precs...)
	}
	res := metadata.ConfigResource{Type: metadata.ResourceTopic, Name: dest.Name}
	return append(recs, metadata.SetConfig(res, config.MirrorNameConfig, d.mirror)), nil
}

// createMirrored decides the creation of a topic the cluster lacks, as a
// copy of the source's, in the mirror from the start.
func (d *addTopicsDecision) createMirrored(name string, src sourceTopic) ([]metadata.Record, error) {
	if other, ok := d.v.img.TopicByID(src.ID); ok {
		return nil, errf(kerr.InconsistentTopicID, "topic %q has id %s on the source cluster of mirror %q, which topic %q already has on this cluster",
			name, src.ID, d.mirror, other.Name)
	}
	configs, _ := copiedTopicConfigs(src.Configs)
	configs[config.MirrorNameConfig] = d.mirror
	rf := d.v.effectiveConfig().DefaultReplicationFactor
	if usable := len(d.v.usableBrokers()); usable > 0 && int(rf) > usable {
		rf = int16(usable)
	}
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, src.Partitions, rf
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(configs[k])
		t.Configs = append(t.Configs, c)
	}
	withID := *d.v
	withID.newID = func() metadata.Uuid { return src.ID }
	d.create.v = &withID
	defer func() { d.create.v = d.v }()
	if d.create.created+d.added+int(src.Partitions) > maxPartitionsPerRequest {
		return nil, errf(kerr.InvalidPartitions, "a request may create at most %d partitions", maxPartitionsPerRequest)
	}
	recs, _, err := d.create.topic(t)
	return recs, err
}

// copiedTopicConfigs returns the source configs a mirrored topic is created
// with: all but the never-synced ones, those this cluster does not know or
// that only kmirror sets, and values it would refuse. skipped names the
// rest, sorted, for the log.
func copiedTopicConfigs(src map[string]string) (kept map[string]string, skipped []string) {
	kept = map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(src)) {
		def, known := config.TopicDefinition(k)
		switch {
		case !mirrorconfig.SyncsTopicConfig(k), !known, def.Internal:
			skipped = append(skipped, k)
			continue
		}
		if _, err := def.Parse(src[k]); err != nil {
			skipped = append(skipped, k)
			continue
		}
		kept[k] = src[k]
	}
	return kept, skipped
}

// addTopicsToMirror is the driver of AddTopicsToMirror: it checks the
// mirror on the current image, asks the source about the topics and the
// mirror coordinators about the REMOVED ones (outside the decision lock:
// those can take seconds), then decides on the latest image and proposes
// every accepted topic's records in one entry.
func (c *Controller) addTopicsToMirror(ctx context.Context, req *wire.MirrorTopicsRequest) *wire.MirrorTopicsResponse {
	if !c.IsActive() {
		return mirrorTopicsFailure(req, errNotActive)
	}
	pre := c.q.Image()
	props := pre.Configs(metadata.ConfigResource{Type: metadata.ResourceMirror, Name: req.MirrorName})
	in := addTopicsInput{props: props}
	if len(props) > 0 {
		qctx, cancel := context.WithTimeout(ctx, sourceQueryTimeout(req.TimeoutMillis))
		defer cancel()
		var names []string
		var keys []stateKey
		for _, t := range req.Topics {
			if validateTopicName(t.Name) != nil || IsInternalTopic(t.Name) || slices.Contains(names, t.Name) {
				continue
			}
			names = append(names, t.Name)
			if dest, ok := pre.Topic(t.Name); ok {
				if in, cur := topicMembership(pre, t.Name); cur == removed {
					keys = append(keys, partitionKeys(in, dest)...)
				}
			}
		}
		if len(names) > 0 {
			// The source is reached with the secrets decrypted; the
			// stored form is what decideAddTopics compares.
			revealed, err := mirrorconfig.SecretCodecOf(c.cfg).Reveal(props)
			if err == nil {
				in.source, in.sourceErr = c.mirror.sourceQuery()(qctx, revealed, names)
			} else {
				in.sourceErr = fmt.Errorf("%w: %w", kerr.InvalidConfig, err)
			}
			if in.sourceErr != nil {
				c.log.Warn("mirror source query failed", "mirror", req.MirrorName, "err", in.sourceErr)
			}
		}
		if len(keys) > 0 {
			in.states, in.statesErr = c.mirror.stateReader(c)(qctx, pre, keys)
		}
	}
	var resp *wire.MirrorTopicsResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideAddTopics(v, req, in)
		if len(recs) == 0 || req.ValidateOnly {
			return nil
		}
		if _, err := c.propose(recs); err != nil {
			failAccepted(resp, proposeError(err))
			return nil
		}
		for _, t := range resp.Topics {
			if t.ErrorCode != 0 {
				continue
			}
			_, existed := pre.Topic(t.Name)
			_, skipped := copiedTopicConfigs(in.source[t.Name].Configs)
			c.log.Info("topic added to mirror", "mirror", req.MirrorName, "topic", t.Name, "topic_id", metadata.Uuid(t.TopicID),
				"created", !existed, "source_configs_not_copied", skipped)
		}
		return nil
	})
	if err != nil {
		return mirrorTopicsFailure(req, err)
	}
	return resp
}
