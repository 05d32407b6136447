package controller

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
	"github.com/kmirror/kmirror/internal/mirror/mirrorconfig"
	"github.com/kmirror/kmirror/internal/wire"
)

func mirrorRes(name string) metadata.ConfigResource {
	return metadata.ConfigResource{Type: metadata.ResourceMirror, Name: name}
}

// withMirror adds a mirror (with bootstrap.servers) to img.
func withMirror(t testing.TB, img *metadata.Image, name string, kv ...string) *metadata.Image {
	t.Helper()
	return withConfig(t, img, mirrorRes(name), append([]string{"bootstrap.servers", "src:9092"}, kv...)...)
}

// withMirrorName sets a topic's mirror.name.
func withMirrorName(t testing.TB, img *metadata.Image, topic, value string) *metadata.Image {
	t.Helper()
	return withConfig(t, img, topicRes(topic), config.MirrorNameConfig, value)
}

func mirrorNameOf(img *metadata.Image, topic string) string {
	v, _ := img.Config(topicRes(topic), config.MirrorNameConfig)
	return v
}

func topicsReq(mirror string, topics ...string) *wire.MirrorTopicsRequest {
	r := &wire.MirrorTopicsRequest{MirrorName: mirror}
	for _, t := range topics {
		r.Topics = append(r.Topics, wire.MirrorTopicsRequestTopic{Name: t})
	}
	return r
}

func createMirrorReq(name string, kv ...string) *wire.CreateMirrorRequest {
	r := &wire.CreateMirrorRequest{MirrorName: name}
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		r.Configs = append(r.Configs, wire.CreateMirrorRequestConfig{Name: kv[i], Value: &v})
	}
	return r
}

func TestDecideCreateMirror(t *testing.T) {
	base := cluster(t, upBrokers(3)...)
	existing := withMirror(t, base, "east")
	cases := []struct {
		name    string
		img     *metadata.Image
		req     *wire.CreateMirrorRequest
		want    *kerr.Error
		msgPart string
	}{
		{"ok", base, createMirrorReq("west", "bootstrap.servers", "a:9092,b:9092", "sasl.password", "pw"), nil, ""},
		{"bad name", base, createMirrorReq("west.paused", "bootstrap.servers", "a:1"), kerr.InvalidRequest, "reserved suffix"},
		{"empty name", base, createMirrorReq("", "bootstrap.servers", "a:1"), kerr.InvalidRequest, "empty"},
		{"exists", existing, createMirrorReq("east", "bootstrap.servers", "a:1"), kerr.DuplicateResource, `"east" already exists`},
		{"no bootstrap", base, createMirrorReq("west", "client.id", "x"), kerr.InvalidConfig, "bootstrap.servers"},
		{"unknown key", base, createMirrorReq("west", "bootstrap.servers", "a:1", "bootstrap.server", "b:1"), kerr.InvalidConfig, "bootstrap.server:"},
		{"invalid value", base, createMirrorReq("west", "bootstrap.servers", "a"), kerr.InvalidConfig, "bootstrap.servers"},
		{"sasl incomplete", base, createMirrorReq("west", "bootstrap.servers", "a:1", "security.protocol", "SASL_SSL"), kerr.InvalidConfig, "sasl.mechanism"},
		{"twice", base, createMirrorReq("west", "bootstrap.servers", "a:1", "bootstrap.servers", "b:1"), kerr.InvalidConfig, "more than once"},
		{"no brokers for state topic", cluster(t), createMirrorReq("west", "bootstrap.servers", "a:1"), kerr.InvalidReplicationFactor, "__mirror_state"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := testConfig(t, map[string]string{"mirror.state.topic.replication.factor": "5"})
			recs, err := decideCreateMirror(testView(t, c.img, cfg), c.req)
			if c.want != nil {
				wantCode(t, c.name, codeOf(err), messageOf(err), c.want, c.msgPart)
				if strings.HasSuffix(*messageOf(err), ": "+c.want.Message) {
					t.Fatalf("message %q ends with the error's name", *messageOf(err))
				}
				if strings.Contains(err.Error(), "pw") {
					t.Fatalf("error %q quotes a secret", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			img := apply(t, c.img, recs...)
			got := img.Configs(mirrorRes("west"))
			if got["bootstrap.servers"] != "a:9092,b:9092" || got["sasl.password"] != "pw" || len(got) != 2 {
				t.Fatalf("mirror configs %v", got)
			}
			st, ok := img.Topic(MirrorStateTopic)
			if !ok || len(st.Partitions) != 50 {
				t.Fatalf("__mirror_state not created with 50 partitions: %v", st)
			}
			if p, _ := img.Config(topicRes(MirrorStateTopic), "cleanup.policy"); p != "compact" {
				t.Fatalf("__mirror_state cleanup.policy %q", p)
			}
			if p0, _ := st.Partition(0); len(p0.Replicas) != 3 {
				t.Fatalf("__mirror_state replication %v, want 3 (5 capped at 3 brokers)", p0.Replicas)
			}
			// A second mirror does not create the state topic again.
			recs2, err := decideCreateMirror(testView(t, img, nil), createMirrorReq("north", "bootstrap.servers", "n:1"))
			if err != nil || len(recs2) != 1 {
				t.Fatalf("second mirror: %d records, %v", len(recs2), err)
			}
		})
	}
	// Null values leave the default: not stored.
	req := createMirrorReq("west", "bootstrap.servers", "a:1")
	req.Configs = append(req.Configs, wire.CreateMirrorRequestConfig{Name: "client.id"})
	recs, err := decideCreateMirror(testView(t, base, nil), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := apply(t, base, recs...).Configs(mirrorRes("west")); len(got) != 1 {
		t.Fatalf("null config stored: %v", got)
	}
}

// mirrorTopicsImage has mirror east with topics m (mirroring), p (paused),
// r (removed), mirror west with w, and a plain topic plain.
func mirrorTopicsImage(t *testing.T) *metadata.Image {
	img := cluster(t, upBrokers(1)...)
	img = withMirror(t, img, "east")
	img = withMirror(t, img, "west")
	for i, name := range []string{"m", "p", "r", "w", "plain"} {
		img = withTopic(t, img, name, metadata.Uuid{0: 0x10, 15: byte(i + 1)}, partition(1, []int32{1}, []int32{1}))
	}
	img = withMirrorName(t, img, "m", "east")
	img = withMirrorName(t, img, "p", "east.paused")
	img = withMirrorName(t, img, "r", "east.removed")
	img = withMirrorName(t, img, "w", "west")
	return img
}

func TestDecideMirrorTopicsTransitions(t *testing.T) {
	img := mirrorTopicsImage(t)
	cases := []struct {
		op      mirrorTopicsOp
		topic   string
		want    *kerr.Error
		after   string // mirror.name after, on success
		msgPart string
	}{
		{opPause, "m", nil, "east.paused", ""},
		{opPause, "p", kerr.InvalidRequest, "", `topic "p" is PAUSED; only MIRRORING topics can be paused`},
		{opPause, "r", kerr.InvalidRequest, "", "is REMOVED"},
		{opResume, "p", nil, "east", ""},
		{opResume, "m", kerr.InvalidRequest, "", `topic "m" is MIRRORING; only PAUSED topics can be resumed`},
		{opResume, "r", kerr.InvalidRequest, "", "REMOVED"},
		{opRemove, "m", nil, "east.removed", ""},
		{opRemove, "p", nil, "east.removed", ""},
		{opRemove, "r", kerr.InvalidRequest, "", "REMOVED"},
		{opPause, "w", kerr.InvalidRequest, "", `topic "w" is in mirror "west", not "east"`},
		{opRemove, "plain", kerr.InvalidRequest, "", `topic "plain" is in no mirror`},
		{opResume, "nope", kerr.UnknownTopicOrPartition, "", `"nope" does not exist`},
	}
	for _, c := range cases {
		recs, resp := decideMirrorTopics(img, c.op, topicsReq("east", c.topic))
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 {
			t.Fatalf("op %d %s: response %+v", c.op, c.topic, resp)
		}
		res := resp.Topics[0]
		what := c.topic + " " + c.op.verb()
		wantCode(t, what, res.ErrorCode, res.ErrorMessage, c.want, c.msgPart)
		if c.topic != "nope" {
			ti, _ := img.Topic(c.topic)
			if res.TopicID != [16]byte(ti.ID) {
				t.Fatalf("%s: topic id %x", what, res.TopicID)
			}
		}
		if c.want != nil {
			if len(recs) != 0 {
				t.Fatalf("%s: records on failure", what)
			}
			continue
		}
		if got := mirrorNameOf(apply(t, img, recs...), c.topic); got != c.after {
			t.Fatalf("%s: mirror.name %q, want %q", what, got, c.after)
		}
	}

	// Mixed request: each topic on its own, duplicates refused, one entry.
	recs, resp := decideMirrorTopics(img, opPause, topicsReq("east", "m", "p", "m", "plain"))
	if len(resp.Topics) != 3 {
		t.Fatalf("answered %d topics, want 3 (one per distinct name)", len(resp.Topics))
	}
	wantCode(t, "dup m", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, kerr.InvalidRequest, "more than once")
	wantCode(t, "p", resp.Topics[1].ErrorCode, resp.Topics[1].ErrorMessage, kerr.InvalidRequest, "PAUSED")
	if len(recs) != 0 {
		t.Fatalf("records %v", recs)
	}

	// Unknown mirror: mirror-level error, repeated per topic.
	_, resp = decideMirrorTopics(img, opPause, topicsReq("south", "m"))
	wantCode(t, "unknown mirror", resp.ErrorCode, resp.ErrorMessage, kerr.ResourceNotFound, `mirror "south" does not exist`)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.ResourceNotFound.Code {
		t.Fatalf("per-topic results %+v", resp.Topics)
	}
}

// srcTopic is a source answer for decideAddTopics.
func srcTopic(id byte, partitions int32, kv ...string) sourceTopic {
	cfg := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		cfg[kv[i]] = kv[i+1]
	}
	return sourceTopic{ID: metadata.Uuid{0: 0x50, 15: id}, Partitions: partitions, Configs: cfg}
}

func TestDecideAddTopics(t *testing.T) {
	base := cluster(t, upBrokers(2)...)
	base = withMirror(t, base, "east")
	base = withMirror(t, base, "west")
	img := base
	// "same" exists with the source's id and fewer partitions.
	img = withTopic(t, img, "same", metadata.Uuid{0: 0x50, 15: 2}, partition(1, []int32{1}, []int32{1}))
	// "other" exists with another id.
	img = withTopic(t, img, "other", metadata.Uuid{0: 0x99, 15: 3}, partition(1, []int32{1}, []int32{1}))
	// "bigger" has more partitions than the source.
	img = withTopic(t, img, "bigger", metadata.Uuid{0: 0x50, 15: 4}, partition(1, []int32{1}, []int32{1}), partition(1, []int32{1}, []int32{1}))
	// "inwest" mirrors in west; "ineast" already in east; "back" was removed from west.
	img = withTopic(t, img, "inwest", metadata.Uuid{0: 0x50, 15: 5}, partition(1, []int32{1}, []int32{1}))
	img = withMirrorName(t, img, "inwest", "west.paused")
	img = withTopic(t, img, "ineast", metadata.Uuid{0: 0x50, 15: 6}, partition(1, []int32{1}, []int32{1}))
	img = withMirrorName(t, img, "ineast", "east")
	backID := metadata.Uuid{0: 0x50, 15: 7}
	img = withTopic(t, img, "back", backID, partition(1, []int32{1}, []int32{1}), partition(2, []int32{2}, []int32{2}))
	img = withMirrorName(t, img, "back", "west.removed")
	// "taken" is missing here but its source id is used by "holder".
	img = withTopic(t, img, "holder", metadata.Uuid{0: 0x50, 15: 8}, partition(1, []int32{1}, []int32{1}))

	source := map[string]sourceTopic{
		"fresh":  srcTopic(1, 3, "retention.ms", "1000", "min.insync.replicas", "2", "confluent.placement", "x", "segment.bytes", "12", "cleanup.policy", "compact"),
		"same":   srcTopic(2, 4),
		"other":  srcTopic(3, 1),
		"bigger": srcTopic(4, 1),
		"inwest": srcTopic(5, 1),
		"ineast": srcTopic(6, 1),
		"back":   srcTopic(7, 2),
		"taken":  srcTopic(8, 1),
		"gone":   {Err: kerr.UnknownTopicOrPartition},
		"noid":   {Partitions: 1},
		"denied": {Err: kerr.TopicAuthorizationFailed},
	}
	stopped := map[stateKey]wire.MirrorPartitionState{
		{Mirror: "west", TopicID: backID, Partition: 0}: wire.MirrorStateStopped,
		{Mirror: "west", TopicID: backID, Partition: 1}: wire.MirrorStateStopped,
	}
	stopping := map[stateKey]wire.MirrorPartitionState{
		{Mirror: "west", TopicID: backID, Partition: 0}: wire.MirrorStateStopped,
		{Mirror: "west", TopicID: backID, Partition: 1}: wire.MirrorStateStopping,
	}
	in := addTopicsInput{source: source, states: stopped}
	cases := []struct {
		topic   string
		in      addTopicsInput
		want    *kerr.Error
		msgPart string
	}{
		{"fresh", in, nil, ""},
		{"same", in, nil, ""},
		{"back", in, nil, ""},
		{"back", addTopicsInput{source: source, states: stopping}, kerr.InvalidRequest, "partition 1 is STOPPING, not STOPPED"},
		{"back", addTopicsInput{source: source, statesErr: errf(kerr.CoordinatorNotAvailable, "no coordinator")}, kerr.CoordinatorNotAvailable, "no coordinator"},
		{"back", addTopicsInput{source: source}, kerr.RequestTimedOut, "retry"},
		{"other", in, kerr.InconsistentTopicID, "has id"},
		{"bigger", in, kerr.InvalidPartitions, "2 partitions on this cluster but 1"},
		{"inwest", in, kerr.InvalidRequest, `is in mirror "west" (PAUSED)`},
		{"ineast", in, kerr.InvalidRequest, `already in mirror "east"`},
		{"taken", in, kerr.InconsistentTopicID, `topic "holder" already has`},
		{"gone", in, kerr.UnknownTopicOrPartition, `topic "gone" does not exist on the source cluster of mirror "east"`},
		{"noid", in, kerr.InvalidRequest, "no topic id"},
		{"denied", in, kerr.TopicAuthorizationFailed, "refused"},
		{"unasked", in, kerr.RequestTimedOut, "not looked up"},
		{"unasked", addTopicsInput{sourceErr: errors.New("dial tcp: connection refused")}, kerr.NetworkException, "could not be reached"},
		{"__consumer_offsets", in, kerr.InvalidRequest, "internal topic"},
		{"bad/name", in, kerr.InvalidTopicException, ""},
	}
	for _, c := range cases {
		t.Run(c.topic, func(t *testing.T) {
			recs, resp := decideAddTopics(testView(t, img, nil), topicsReq("east", c.topic), c.in)
			if resp.ErrorCode != 0 || len(resp.Topics) != 1 {
				t.Fatalf("response %+v", resp)
			}
			res := resp.Topics[0]
			wantCode(t, c.topic, res.ErrorCode, res.ErrorMessage, c.want, c.msgPart)
			if c.want != nil {
				if len(recs) != 0 {
					t.Fatalf("records on failure: %v", recs)
				}
				return
			}
			after := apply(t, img, recs...)
			if got := mirrorNameOf(after, c.topic); got != "east" {
				t.Fatalf("mirror.name %q", got)
			}
			ti, _ := after.Topic(c.topic)
			src := source[c.topic]
			if ti.ID != src.ID || res.TopicID != [16]byte(src.ID) {
				t.Fatalf("topic id %s (response %x), want the source's %s", ti.ID, res.TopicID, src.ID)
			}
			if int32(len(ti.Partitions)) != src.Partitions {
				t.Fatalf("%d partitions, want %d", len(ti.Partitions), src.Partitions)
			}
		})
	}

	// The created topic: the source's configs minus the never-synced and
	// unknown ones; replication factor capped at the 2 brokers.
	rf3 := testConfig(t, map[string]string{"default.replication.factor": "3"})
	recs, resp := decideAddTopics(testView(t, img, rf3), topicsReq("east", "fresh"), in)
	if resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("fresh: %+v", resp.Topics[0])
	}
	after := apply(t, img, recs...)
	got := after.Configs(topicRes("fresh"))
	want := map[string]string{"retention.ms": "1000", "cleanup.policy": "compact", "mirror.name": "east"}
	if len(got) != len(want) {
		t.Fatalf("configs %v, want %v (segment.bytes=12 is invalid, min.insync.replicas never synced, confluent.* unknown)", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("configs %v, want %v", got, want)
		}
	}
	ti, _ := after.Topic("fresh")
	for p, st := range ti.Partitions {
		if len(st.Replicas) != 2 {
			t.Fatalf("partition %d replicas %v, want 2 (default 3 capped at 2 brokers)", p, st.Replicas)
		}
	}

	// Several topics: accepted ones land in one list; failures stand alone.
	recs, resp = decideAddTopics(testView(t, img, nil), topicsReq("east", "fresh", "gone", "same", "fresh"), in)
	codes := []int16{}
	for _, r := range resp.Topics {
		codes = append(codes, r.ErrorCode)
	}
	if !slices.Equal(codes, []int16{kerr.InvalidRequest.Code, kerr.UnknownTopicOrPartition.Code, 0}) {
		t.Fatalf("codes %v", codes)
	}
	after = apply(t, img, recs...)
	if mirrorNameOf(after, "same") != "east" || mirrorNameOf(after, "fresh") != "" {
		t.Fatalf("same %q fresh %q", mirrorNameOf(after, "same"), mirrorNameOf(after, "fresh"))
	}
	if st, _ := after.Topic("same"); len(st.Partitions) != 4 {
		t.Fatalf("same has %d partitions, want 4 (added up to the source's)", len(st.Partitions))
	}

	// Unknown mirror, and a mirror changed since the query.
	_, resp = decideAddTopics(testView(t, img, nil), topicsReq("south", "fresh"), in)
	wantCode(t, "unknown mirror", resp.ErrorCode, resp.ErrorMessage, kerr.ResourceNotFound, "south")
	_, resp = decideAddTopics(testView(t, img, nil), topicsReq("east", "fresh"), addTopicsInput{props: map[string]string{"bootstrap.servers": "old:1"}, source: source})
	wantCode(t, "changed mirror", resp.ErrorCode, resp.ErrorMessage, kerr.RequestTimedOut, "changed")
}

func TestDecideDeleteMirror(t *testing.T) {
	img := mirrorTopicsImage(t)
	rID := metadata.Uuid{0: 0x10, 15: 3}
	rKey := stateKey{Mirror: "east", TopicID: rID, Partition: 0}

	_, err := decideDeleteMirror(img, "east", nil, nil)
	wantCode(t, "active topics", codeOf(err), messageOf(err), kerr.InvalidRequest, `"m" (MIRRORING), "p" (PAUSED)`)
	_, err = decideDeleteMirror(img, "south", nil, nil)
	wantCode(t, "unknown", codeOf(err), messageOf(err), kerr.ResourceNotFound, `"south"`)

	// Once m and p are removed too, only the states decide.
	img = withMirrorName(t, img, "m", "east.removed")
	img = withMirrorName(t, img, "p", "east.removed")
	keys := []stateKey{rKey, {Mirror: "east", TopicID: metadata.Uuid{0: 0x10, 15: 1}}, {Mirror: "east", TopicID: metadata.Uuid{0: 0x10, 15: 2}}}
	states := map[stateKey]wire.MirrorPartitionState{}
	for _, k := range keys {
		states[k] = wire.MirrorStateStopped
	}
	states[rKey] = wire.MirrorStateStopping
	_, err = decideDeleteMirror(img, "east", states, nil)
	wantCode(t, "stopping", codeOf(err), messageOf(err), kerr.InvalidRequest, "r-0 (STOPPING)")
	_, err = decideDeleteMirror(img, "east", nil, errf(kerr.CoordinatorNotAvailable, "down"))
	wantCode(t, "states failed", codeOf(err), messageOf(err), kerr.CoordinatorNotAvailable, "down")
	_, err = decideDeleteMirror(img, "east", map[stateKey]wire.MirrorPartitionState{}, nil)
	wantCode(t, "states missing", codeOf(err), messageOf(err), kerr.RequestTimedOut, "retry")

	states[rKey] = wire.MirrorStateStopped
	recs, err := decideDeleteMirror(img, "east", states, nil)
	if err != nil {
		t.Fatal(err)
	}
	after := apply(t, img, recs...)
	if slices.Contains(after.Mirrors(), "east") || !slices.Contains(after.Mirrors(), "west") {
		t.Fatalf("mirrors after delete: %v", after.Mirrors())
	}
	for _, topic := range []string{"m", "p", "r"} {
		if v := mirrorNameOf(after, topic); v != "" {
			t.Fatalf("%s keeps mirror.name %q", topic, v)
		}
	}
	if mirrorNameOf(after, "w") != "west" {
		t.Fatal("another mirror's topic changed")
	}
	// The name can be used again.
	if _, err := decideCreateMirror(testView(t, after, nil), createMirrorReq("east", "bootstrap.servers", "new:1")); err != nil {
		t.Fatalf("recreate: %v", err)
	}

	// A mirror without topics needs no states.
	if _, err := decideDeleteMirror(after, "west", nil, nil); err == nil || codeOf(err) != kerr.InvalidRequest.Code {
		t.Fatalf("west still has w: %v", err)
	}
	empty := withMirror(t, cluster(t), "lonely")
	recs, err = decideDeleteMirror(empty, "lonely", nil, nil)
	if err != nil || len(apply(t, empty, recs...).Mirrors()) != 0 {
		t.Fatalf("delete empty mirror: %v", err)
	}
}

func TestDecideLeaderEpochBump(t *testing.T) {
	id := metadata.Uuid{0: 0x77, 15: 1}
	img := withTopic(t, cluster(t, upBrokers(2)...), "orders", id,
		metadata.PartitionState{Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 5, PartitionEpoch: 9},
		metadata.PartitionState{Replicas: []int32{2}, ISR: []int32{}, Leader: metadata.NoLeader, LeaderEpoch: 3})
	topic, _ := img.Topic("orders")
	cases := []struct {
		name               string
		partition, sender  int32
		min                int32
		want               *kerr.Error
		record             bool
		epochAfter, pEpoch int32
	}{
		{"jump", 0, 5, 40, nil, true, 40, 10},
		{"just above", 0, 5, 6, nil, true, 6, 10},
		{"already there", 0, 5, 5, nil, false, 5, 9},
		{"already there, stale sender", 0, 2, 3, nil, false, 5, 9},
		{"stale sender", 0, 4, 40, kerr.FencedLeaderEpoch, false, 0, 0},
		{"controller behind", 0, 6, 40, kerr.NotController, false, 0, 0},
		{"negative", 0, 5, -1, kerr.InvalidRequest, false, 0, 0},
		{"no leader", 1, 3, 40, kerr.LeaderNotAvailable, false, 0, 0},
		{"no partition", 7, 0, 40, kerr.UnknownTopicOrPartition, false, 0, 0},
	}
	for _, c := range cases {
		rec, st, err := decideLeaderEpochBump(img, topic, c.partition, c.sender, c.min)
		wantErr(t, c.name, err, c.want)
		if c.want != nil {
			continue
		}
		if (rec != nil) != c.record {
			t.Fatalf("%s: record %v", c.name, rec)
		}
		if st.LeaderEpoch != c.epochAfter || st.PartitionEpoch != c.pEpoch || st.Leader != 1 {
			t.Fatalf("%s: state %+v", c.name, st)
		}
		if rec != nil {
			after := apply(t, img, rec)
			got, _ := after.Topic("orders")
			p, _ := got.Partition(0)
			if p.LeaderEpoch != c.epochAfter || p.PartitionEpoch != c.pEpoch || p.Leader != 1 || !slices.Equal(p.ISR, []int32{1, 2}) {
				t.Fatalf("%s: replayed %+v, decision said %+v", c.name, p, st)
			}
		}
	}

	// The tagged request round trip: the bump survives the wire, untagged
	// entries of a bump request are refused.
	req, err := bumpRequest(img, id, 0, 40)
	if err != nil {
		t.Fatal(err)
	}
	b := req.AppendTo(nil)
	decoded := kmsg.NewPtrAlterPartitionRequest()
	decoded.Version = req.Version
	if err := decoded.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if !isLeaderEpochBump(decoded) {
		t.Fatal("tag lost through encoding")
	}
	recs, resp := decideLeaderEpochBumps(img, decoded)
	if len(recs) != 1 || resp.Topics[0].Partitions[0].LeaderEpoch != 40 {
		t.Fatalf("bumps: %v %+v", recs, resp)
	}
	untagged := kmsg.NewAlterPartitionRequestTopicPartition()
	untagged.Partition = 1
	decoded.Topics[0].Partitions = append(decoded.Topics[0].Partitions, untagged)
	_, resp = decideLeaderEpochBumps(img, decoded)
	if got := resp.Topics[0].Partitions[1].ErrorCode; got != kerr.InvalidRequest.Code {
		t.Fatalf("untagged entry: code %d", got)
	}
	stripLeaderEpochBump(decoded)
	if isLeaderEpochBump(decoded) {
		t.Fatal("tag survives stripping")
	}
}

// TestMirrorSecretsStoredEncrypted: with password.encoder.secret the
// controller stores a mirror's secrets encrypted, at creation and when they
// are altered, and validates changes against the decrypted values; a
// controller with another secret refuses to alter the mirror, naming the
// property and the setting, rather than validating ciphertext.
func TestMirrorSecretsStoredEncrypted(t *testing.T) {
	base := cluster(t, upBrokers(3)...)
	cfg := testConfig(t, map[string]string{"password.encoder.secret": "s3cret"})
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="m" password="pw-1";`
	recs, err := decideCreateMirror(testView(t, base, cfg), createMirrorReq("west", "bootstrap.servers", "a:9092",
		"security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "PLAIN", "sasl.jaas.config", jaas))
	if err != nil {
		t.Fatal(err)
	}
	img := apply(t, base, recs...)
	stored := img.Configs(mirrorRes("west"))
	if !mirrorconfig.IsEncrypted(stored["sasl.jaas.config"]) || strings.Contains(stored["sasl.jaas.config"], "pw-1") ||
		stored["bootstrap.servers"] != "a:9092" || stored["sasl.mechanism"] != "PLAIN" {
		t.Fatalf("stored: %v", stored)
	}
	codec := mirrorconfig.SecretCodecOf(cfg)
	if got, err := codec.Reveal(stored); err != nil || got["sasl.jaas.config"] != jaas {
		t.Fatalf("revealed: %v, %v", got, err)
	}

	// A change of another property validates against the decrypted JAAS
	// (ciphertext would not parse) and leaves it as stored.
	id := "mirror-west"
	recs, err = configRecords(testView(t, img, cfg), mirrorRes("west"), map[string]*string{"client.id": &id}, "")
	if err != nil || len(recs) != 1 {
		t.Fatalf("alter client.id: %d records, %v", len(recs), err)
	}
	// A new password is stored encrypted too.
	jaas2 := strings.Replace(jaas, "pw-1", "pw-2", 1)
	recs, err = configRecords(testView(t, img, cfg), mirrorRes("west"), map[string]*string{"sasl.jaas.config": &jaas2}, "")
	if err != nil {
		t.Fatal(err)
	}
	img2 := apply(t, img, recs...)
	v, _ := img2.Config(mirrorRes("west"), "sasl.jaas.config")
	if !mirrorconfig.IsEncrypted(v) || strings.Contains(v, "pw-2") {
		t.Fatalf("altered secret stored as %q", v)
	}
	if got, err := codec.Open("sasl.jaas.config", v); err != nil || got != jaas2 {
		t.Fatalf("altered secret opens as %q, %v", got, err)
	}

	// A controller whose secret differs cannot validate the mirror.
	other := testConfig(t, map[string]string{"password.encoder.secret": "other"})
	_, err = configRecords(testView(t, img, other), mirrorRes("west"), map[string]*string{"client.id": &id}, "")
	var ke *kerr.Error
	if !errors.As(err, &ke) || ke != kerr.InvalidConfig || !strings.Contains(err.Error(), "sasl.jaas.config") ||
		!strings.Contains(err.Error(), "password.encoder.secret") {
		t.Fatalf("alter with another secret: %v", err)
	}
}

func TestDecideFailoverComplete(t *testing.T) {
	img := mirrorTopicsImage(t)
	img = withTopic(t, img, "r2", metadata.Uuid{0: 0x20, 15: 1},
		partition(1, []int32{1}, []int32{1}), partition(1, []int32{1}, []int32{1}))
	img = withMirrorName(t, img, "r2", "east.removed")
	r2, _ := img.Topic("r2")
	rep := failoverReport{topic: "r2", id: r2.ID}
	k0 := stateKey{Mirror: "east", TopicID: r2.ID, Partition: 0}
	k1 := stateKey{Mirror: "east", TopicID: r2.ID, Partition: 1}
	states := map[stateKey]wire.MirrorPartitionState{k0: wire.MirrorStateStopped, k1: wire.MirrorStateStopping}

	_, err := decideFailoverComplete(img, rep, states, nil)
	wantCode(t, "one partition stopping", codeOf(err), messageOf(err), kerr.InvalidRequest, "1 (STOPPING)")
	_, err = decideFailoverComplete(img, rep, map[stateKey]wire.MirrorPartitionState{k0: wire.MirrorStateStopped}, nil)
	wantCode(t, "a state missing", codeOf(err), messageOf(err), kerr.RequestTimedOut, "retry")
	_, err = decideFailoverComplete(img, rep, nil, errf(kerr.CoordinatorNotAvailable, "down"))
	wantCode(t, "states failed", codeOf(err), messageOf(err), kerr.CoordinatorNotAvailable, "down")
	_, err = decideFailoverComplete(img, failoverReport{topic: "r2", id: metadata.Uuid{1}}, states, nil)
	wantCode(t, "another topic id", codeOf(err), messageOf(err), kerr.UnknownTopicID, `"r2"`)
	m, _ := img.Topic("m")
	_, err = decideFailoverComplete(img, failoverReport{topic: "m", id: m.ID}, states, nil)
	wantCode(t, "mirroring topic", codeOf(err), messageOf(err), kerr.InvalidRequest, "MIRRORING, not REMOVED")

	states[k1] = wire.MirrorStateStopped
	recs, err := decideFailoverComplete(img, rep, states, nil)
	if err != nil || len(recs) != 1 {
		t.Fatalf("all stopped: %v %v", recs, err)
	}
	after := apply(t, img, recs...)
	if got := mirrorNameOf(after, "r2"); got != "east.stopped" {
		t.Fatalf("mirror.name after the failover completed: %q", got)
	}
	// A second report changes nothing and succeeds.
	if recs, err := decideFailoverComplete(after, rep, nil, nil); err != nil || len(recs) != 0 {
		t.Fatalf("report of a stopped topic: %v %v", recs, err)
	}
	// A stopped topic needs no states to let its mirror go, and may join a
	// mirror again at once.
	after = withMirrorName(t, after, "m", "east.stopped")
	after = withMirrorName(t, after, "p", "east.stopped")
	after = withMirrorName(t, after, "r", "east.stopped")
	recs, err = decideDeleteMirror(after, "east", nil, nil)
	if err != nil {
		t.Fatalf("delete a mirror whose topics are all stopped: %v", err)
	}
	if got := mirrorNameOf(apply(t, after, recs...), "r2"); got != "" {
		t.Fatalf("r2 keeps mirror.name %q after its mirror was deleted", got)
	}
}

func TestFailoverReportTag(t *testing.T) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version = 1
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "r2"
	req.Resources = append(req.Resources, rr)
	id := metadata.Uuid{0: 0x20, 15: 1}
	setTag(req, failoverCompleteTag, id[:])
	rep, ok := failoverReportOf(req)
	if !ok || rep.topic != "r2" || rep.id != id {
		t.Fatalf("report of a tagged request: %+v %v", rep, ok)
	}
	stripInternalTags(req)
	if _, ok := failoverReportOf(req); ok {
		t.Fatal("the report tag survived stripInternalTags")
	}
}

// TestMirroredTopicRefusals checks the controller's read-only rule: a
// MIRRORING, PAUSED or failing-over topic refuses deletion, growth and
// changes of synced configs, except from its own mirror's sync (only while
// MIRRORING); a STOPPED one, or a topic whose mirror does not sync configs,
// takes config changes.
func TestMirroredTopicRefusals(t *testing.T) {
	img := mirrorTopicsImage(t)
	img = withMirror(t, img, "quiet", "sync.topic.configs.enabled", "false")
	img = withTopic(t, img, "q", metadata.Uuid{0: 0x30, 15: 1}, partition(1, []int32{1}, []int32{1}))
	img = withMirrorName(t, img, "q", "quiet")
	img = withTopic(t, img, "s", metadata.Uuid{0: 0x30, 15: 2}, partition(1, []int32{1}, []int32{1}))
	img = withMirrorName(t, img, "s", "east.stopped")
	v := testView(t, img, nil)

	grow := func(topic string, tagged string) *kerr.Error {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version = 3
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = topic, 2
		req.Topics = append(req.Topics, rt)
		if tagged != "" {
			setTag(req, mirrorSyncTag, []byte(tagged))
		}
		_, resp := decideCreatePartitions(v, req)
		return codeErr(resp.Topics[0].ErrorCode)
	}
	setRetention := func(topic string, tagged string) *kerr.Error {
		req := incrReq(incr(topicT, topic, op(set, "retention.ms", ptr("5"))))
		if tagged != "" {
			setTag(req, mirrorSyncTag, []byte(tagged))
		}
		_, resp := decideIncrementalAlterConfigs(v, req)
		return codeErr(resp.Resources[0].ErrorCode)
	}
	for _, tc := range []struct {
		topic, tag       string
		grow, setConfigs *kerr.Error
	}{
		{"m", "", kerr.PolicyViolation, kerr.PolicyViolation},
		{"m", "east", nil, nil},                                   // its own mirror's sync
		{"m", "west", kerr.PolicyViolation, kerr.PolicyViolation}, // another mirror's
		{"p", "east", kerr.PolicyViolation, kerr.PolicyViolation}, // paused: no sync runs
		{"r", "", kerr.PolicyViolation, kerr.PolicyViolation},     // failing over
		{"q", "", kerr.PolicyViolation, nil},                      // the mirror does not sync configs
		{"s", "", nil, nil},                                       // failed over
		{"plain", "", nil, nil},
	} {
		if got := grow(tc.topic, tc.tag); got != tc.grow {
			t.Errorf("create partitions of %s (tag %q): %v, want %v", tc.topic, tc.tag, got, tc.grow)
		}
		if got := setRetention(tc.topic, tc.tag); got != tc.setConfigs {
			t.Errorf("set retention.ms of %s (tag %q): %v, want %v", tc.topic, tc.tag, got, tc.setConfigs)
		}
	}
	// A config the sync does not own stays the operator's.
	_, resp := decideIncrementalAlterConfigs(v, incrReq(incr(topicT, "m", op(set, "min.insync.replicas", ptr("1")))))
	if resp.Resources[0].ErrorCode != 0 {
		t.Errorf("min.insync.replicas of a mirrored topic: %v", kerr.ErrorForCode(resp.Resources[0].ErrorCode))
	}
	dreq := kmsg.NewPtrDeleteTopicsRequest()
	dreq.Version = 5
	dreq.TopicNames = []string{"m", "p", "r", "s"}
	_, dresp := decideDeleteTopics(v, dreq)
	for i, want := range []*kerr.Error{kerr.PolicyViolation, kerr.PolicyViolation, kerr.PolicyViolation, nil} {
		r := dresp.Topics[i]
		wantCode(t, *r.Topic, r.ErrorCode, r.ErrorMessage, want, "")
	}
}

// codeErr is the Kafka error of a code, nil for 0.
func codeErr(code int16) *kerr.Error {
	if code == 0 {
		return nil
	}
	return kerrOf(code)
}
