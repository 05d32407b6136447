package controller

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
)

// maxPartitionsPerRequest bounds the partitions one CreateTopics or
// CreatePartitions request may create, so that one request is one
// reasonably sized metadata log entry (Kafka bounds records per operation
// at the same number).
const maxPartitionsPerRequest = 10000

// decideCreateTopics validates a CreateTopics request against the image
// and returns the records that create the valid topics (TopicRecord, then
// its ConfigRecords, then its PartitionRecords, per topic) and the response,
// in request order. The caller proposes the records unless the request is
// validate-only. Every topic fails or succeeds on its own.
//
// internal marks the node's own path (CreateInternalTopic, or a broker's
// internal-topic request on the controller listener): it may create
// internal topics and set internal configs, an internal topic's replication
// factor of -1 becomes its configured factor capped by the usable brokers,
// and a topic that already exists is a success answered with its id.
func decideCreateTopics(v *view, req *kmsg.CreateTopicsRequest, internal bool) ([]metadata.Record, *kmsg.CreateTopicsResponse) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	resp.Version = req.Version

	counts := map[string]int{}
	for _, t := range req.Topics {
		counts[t.Topic]++
	}
	// taken maps the collision key of every existing topic, and of every
	// topic this request creates, to its name.
	taken := map[string]string{}
	for _, t := range v.img.Topics() {
		taken[collisionKey(t.Name)] = t.Name
	}

	d := &createTopicsDecision{v: v, internal: internal, taken: taken}
	var recs []metadata.Record
	answered := map[string]bool{}
	for _, t := range req.Topics {
		if answered[t.Topic] {
			continue
		}
		answered[t.Topic] = true
		var (
			res  kmsg.CreateTopicsResponseTopic
			trec []metadata.Record
			err  error
		)
		if counts[t.Topic] > 1 {
			err = errf(kerr.InvalidRequest, "Duplicate topic name.")
		} else {
			trec, res, err = d.topic(t)
		}
		if err != nil {
			res = kmsg.NewCreateTopicsResponseTopic()
			res.Topic = t.Topic
			res.ErrorCode = codeOf(err)
			res.ErrorMessage = messageOf(err)
		}
		recs = append(recs, trec...)
		resp.Topics = append(resp.Topics, res)
	}
	if req.Version >= 5 && len(recs) > 0 {
		d.fillConfigs(resp)
	}
	return recs, resp
}

// createTopicsDecision carries what the topics of one request share.
type createTopicsDecision struct {
	v        *view
	internal bool
	taken    map[string]string
	// created counts the partitions the request creates so far.
	created int
	// overrides keeps each created topic's configs for the response.
	overrides map[string]map[string]string
}

// topic decides one topic: the records that create it and its result.
func (d *createTopicsDecision) topic(t kmsg.CreateTopicsRequestTopic) ([]metadata.Record, kmsg.CreateTopicsResponseTopic, error) {
	res := kmsg.NewCreateTopicsResponseTopic()
	res.Topic = t.Topic
	img := d.v.img
	if err := validateTopicName(t.Topic); err != nil {
		return nil, res, err
	}
	if IsInternalTopic(t.Topic) && !d.internal {
		return nil, res, errf(kerr.InvalidRequest, "Topic '%s' is an internal topic: the cluster creates it itself.", t.Topic)
	}
	if existing, ok := img.Topic(t.Topic); ok {
		if d.internal {
			res.TopicID = existing.ID
			res.NumPartitions = int32(len(existing.Partitions))
			if st, ok := existing.Partition(0); ok {
				res.ReplicationFactor = int16(len(st.Replicas))
			}
			return nil, res, nil
		}
		return nil, res, errf(kerr.TopicAlreadyExists, "Topic '%s' already exists.", t.Topic)
	}
	if other, ok := d.taken[collisionKey(t.Topic)]; ok {
		return nil, res, errf(kerr.InvalidTopicException, "Topic '%s' collides with existing topic: %s", t.Topic, other)
	}
	overrides, err := d.configs(t)
	if err != nil {
		return nil, res, err
	}
	replicas, err := d.assign(t)
	if err != nil {
		return nil, res, err
	}
	if d.internal && IsInternalTopic(t.Topic) {
		capMinISR(overrides, len(replicas[0]))
	}

	id := d.v.newID()
	recs := make([]metadata.Record, 0, 1+len(overrides)+len(replicas))
	recs = append(recs, &metadata.TopicRecord{Name: t.Topic, ID: id})
	res2 := metadata.ConfigResource{Type: metadata.ResourceTopic, Name: t.Topic}
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		recs = append(recs, metadata.SetConfig(res2, name, overrides[name]))
	}
	for p, rs := range replicas {
		isr := activeReplicas(img, rs)
		recs = append(recs, &metadata.PartitionRecord{TopicID: id, Partition: int32(p), PartitionState: metadata.PartitionState{
			Replicas: rs, ISR: isr, Leader: isr[0], LeaderRecoveryState: metadata.Recovered,
		}})
	}
	d.taken[collisionKey(t.Topic)] = t.Topic
	d.created += len(replicas)
	if d.overrides == nil {
		d.overrides = map[string]map[string]string{}
	}
	d.overrides[t.Topic] = overrides
	res.TopicID = id
	res.NumPartitions = int32(len(replicas))
	res.ReplicationFactor = int16(len(replicas[0]))
	return recs, res, nil
}

// configs validates a topic's configs and returns them as a map.
func (d *createTopicsDecision) configs(t kmsg.CreateTopicsRequestTopic) (map[string]string, error) {
	out := make(map[string]string, len(t.Configs))
	var nulls []string
	for _, c := range t.Configs {
		if c.Value == nil {
			nulls = append(nulls, c.Name)
			continue
		}
		if _, dup := out[c.Name]; dup {
			return nil, errf(kerr.InvalidConfig, "Config %s is given more than once.", c.Name)
		}
		out[c.Name] = *c.Value
	}
	if len(nulls) > 0 {
		return nil, errf(kerr.InvalidConfig, "Null value not supported for topic configs: %s", strings.Join(nulls, ","))
	}
	if _, ok := out[config.MirrorNameConfig]; ok && !d.internal {
		return nil, errMirrorNameManaged
	}
	validate := config.ValidateTopicConfigs
	if d.internal {
		validate = config.ValidateInternalTopicConfigs
	}
	if err := validate(out); err != nil {
		return nil, err
	}
	return out, nil
}

// errMirrorNameManaged refuses a client's attempt to set mirror.name.
var errMirrorNameManaged = errf(kerr.InvalidConfig, "%s is managed by the mirror APIs", config.MirrorNameConfig)

// assign returns the replicas of every partition of a new topic: the
// manual assignment if the request has one, else a placement over the
// usable brokers with the requested (or default) partition count and
// replication factor.
func (d *createTopicsDecision) assign(t kmsg.CreateTopicsRequestTopic) ([][]int32, error) {
	img := d.v.img
	if len(t.ReplicaAssignment) > 0 {
		if t.ReplicationFactor != -1 {
			return nil, errf(kerr.InvalidRequest, "A manual partition assignment was specified, but replication factor was not set to -1.")
		}
		if t.NumPartitions != -1 {
			return nil, errf(kerr.InvalidRequest, "A manual partition assignment was specified, but numPartitions was not set to -1.")
		}
		if d.created+len(t.ReplicaAssignment) > maxPartitionsPerRequest {
			return nil, errf(kerr.InvalidPartitions, "A request may create at most %d partitions.", maxPartitionsPerRequest)
		}
		byPartition := map[int32][]int32{}
		rf := -1
		for _, a := range t.ReplicaAssignment {
			if _, dup := byPartition[a.Partition]; dup {
				return nil, errf(kerr.InvalidReplicaAssignment, "Found multiple manual partition assignments for partition %d", a.Partition)
			}
			if err := validateManualReplicas(img, a.Replicas, rf); err != nil {
				return nil, err
			}
			rf = len(a.Replicas)
			if len(activeReplicas(img, a.Replicas)) == 0 {
				return nil, errf(kerr.InvalidReplicaAssignment, "All brokers specified in the manual partition assignment for partition %d are fenced or in controlled shutdown.", a.Partition)
			}
			byPartition[a.Partition] = slices.Clone(a.Replicas)
		}
		out := make([][]int32, len(byPartition))
		for p := range out {
			rs, ok := byPartition[int32(p)]
			if !ok {
				return nil, errf(kerr.InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence")
			}
			out[p] = rs
		}
		return out, nil
	}
	switch {
	case t.ReplicationFactor < -1 || t.ReplicationFactor == 0:
		return nil, errf(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0, or -1 to use the default value.")
	case t.NumPartitions < -1 || t.NumPartitions == 0:
		return nil, errf(kerr.InvalidPartitions, "Number of partitions was set to an invalid non-positive value.")
	}
	partitions, rf := t.NumPartitions, t.ReplicationFactor
	usable := d.v.usableBrokers()
	if d.internal && IsInternalTopic(t.Topic) {
		cfgPartitions, cfgRF := internalTopicDefaults(d.v.cfg, t.Topic)
		if partitions == -1 {
			partitions = cfgPartitions
		}
		if rf == -1 {
			rf = cfgRF
			if len(usable) > 0 && int(rf) > len(usable) {
				rf = int16(len(usable))
			}
		}
	}
	if partitions == -1 {
		partitions = d.v.cfg.NumPartitions
	}
	if rf == -1 {
		rf = d.v.cfg.DefaultReplicationFactor
	}
	if d.created+int(partitions) > maxPartitionsPerRequest {
		return nil, errf(kerr.InvalidPartitions, "A request may create at most %d partitions; %s asks for %d.", maxPartitionsPerRequest, t.Topic, partitions)
	}
	replicas, err := placeReplicas(usable, 0, partitions, rf, d.v.rnd)
	if err != nil {
		return nil, err
	}
	return replicas, nil
}

// fillConfigs adds the effective configs of every created topic to the
// response (CreateTopics v5+), as DescribeConfigs would report them.
func (d *createTopicsDecision) fillConfigs(resp *kmsg.CreateTopicsResponse) {
	cfg := d.v.effectiveConfig()
	for i := range resp.Topics {
		r := &resp.Topics[i]
		overrides, ok := d.overrides[r.Topic]
		if !ok || r.ErrorCode != 0 {
			continue
		}
		for _, rc := range cfg.ResolveTopic(overrides) {
			c := kmsg.NewCreateTopicsResponseTopicConfig()
			c.Name = rc.Name
			c.Value = rc.Value
			c.ReadOnly = rc.ReadOnly
			c.Source = int8(rc.Source)
			c.IsSensitive = rc.Sensitive
			r.Configs = append(r.Configs, c)
		}
	}
}

// validateManualReplicas checks one partition's manual assignment: not
// empty, registered brokers, none twice, and the same replication factor
// as the partitions before it (rf, or -1 for the first).
func validateManualReplicas(img *metadata.Image, replicas []int32, rf int) error {
	if len(replicas) == 0 {
		return errf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list.")
	}
	seen := make(map[int32]bool, len(replicas))
	for _, b := range replicas {
		if _, ok := img.Broker(b); !ok {
			return errf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes broker %d, but no such broker is registered.", b)
		}
		if seen[b] {
			return errf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes the broker %d more than once.", b)
		}
		seen[b] = true
	}
	if rf >= 0 && len(replicas) != rf {
		return errf(kerr.InvalidReplicaAssignment, "The manual partition assignment includes a partition with %d replica(s), but this is not consistent with previous partitions, which have %d replica(s).", len(replicas), rf)
	}
	return nil
}

// activeReplicas returns the replicas that may be in a new partition's
// ISR, in replica order: the active brokers.
func activeReplicas(img *metadata.Image, replicas []int32) []int32 {
	var out []int32
	for _, r := range replicas {
		if active(img, r) {
			out = append(out, r)
		}
	}
	return out
}

// internalTopicDefaults returns the configured partition count and
// replication factor of an internal topic.
func internalTopicDefaults(cfg *config.Config, name string) (int32, int16) {
	switch name {
	case OffsetsTopic:
		return cfg.OffsetsTopicNumPartitions, cfg.OffsetsTopicReplicationFactor
	case TransactionStateTopic:
		return cfg.TransactionStateLogNumPartitions, cfg.TransactionStateLogReplicationFactor
	case MirrorStateTopic:
		return cfg.MirrorStateTopicNumPartitions, cfg.MirrorStateTopicReplicationFactor
	}
	return cfg.NumPartitions, cfg.DefaultReplicationFactor
}

// createTopics is the driver of CreateTopics: decide, then propose unless
// validate-only. If the proposal fails, every topic that would have been
// created fails with its error.
func (c *Controller) createTopics(req *kmsg.CreateTopicsRequest, internal bool) (kmsg.Response, error) {
	var resp *kmsg.CreateTopicsResponse
	err := c.decide(func(v *view) error {
		var recs []metadata.Record
		recs, resp = decideCreateTopics(v, req, internal)
		if len(recs) == 0 || req.ValidateOnly {
			return nil
		}
		if _, err := c.propose(recs); err != nil {
			perr := proposeError(err)
			for i := range resp.Topics {
				if t := &resp.Topics[i]; t.ErrorCode == 0 {
					name := t.Topic
					*t = kmsg.NewCreateTopicsResponseTopic()
					t.Topic, t.ErrorCode, t.ErrorMessage = name, codeOf(perr), messageOf(perr)
				}
			}
			return nil
		}
		for _, t := range resp.Topics {
			if t.ErrorCode == 0 {
				c.log.Info("topic created", "topic", t.Topic, "topic_id", metadata.Uuid(t.TopicID), "partitions", t.NumPartitions, "replication_factor", t.ReplicationFactor, "internal", internal)
			}
		}
		return nil
	})
	if err != nil {
		return errorResponse(req, err)
	}
	return resp, nil
}

// capMinISR lowers an internal topic's min.insync.replicas to its
// replication factor: the factor is capped by the usable brokers (a small
// cluster still gets its internal topics), and a min.insync.replicas above
// it (transaction.state.log.min.isr is 2 by default) would refuse every
// write to the topic.
func capMinISR(overrides map[string]string, rf int) {
	const key = "min.insync.replicas"
	v, ok := overrides[key]
	if !ok {
		return
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > rf {
		overrides[key] = strconv.Itoa(rf)
	}
}
