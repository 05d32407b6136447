package metadata

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// imageBytes is a canonical encoding of an image's content, for equality.
func imageBytes(im *Image) []byte { return EncodeBatch(nil, im.ToRecords()) }

func sameImage(t *testing.T, got, want *Image) {
	t.Helper()
	if !bytes.Equal(imageBytes(got), imageBytes(want)) {
		t.Fatalf("images differ:\n got %v\nwant %v", describe(got), describe(want))
	}
	if got.Offset() != want.Offset() {
		t.Fatalf("offsets differ: got %d want %d", got.Offset(), want.Offset())
	}
}

func describe(im *Image) []string {
	var out []string
	for _, r := range im.ToRecords() {
		out = append(out, r.Type().String())
	}
	return out
}

// apply replays rs at offset onto base and returns the delta and its image.
func apply(t *testing.T, base *Image, offset uint64, rs ...Record) (*Delta, *Image) {
	t.Helper()
	d := NewDelta(base)
	for _, r := range rs {
		if err := d.Replay(r, offset); err != nil {
			t.Fatalf("replay %s: %v", r.Type(), err)
		}
	}
	return d, d.Apply()
}

// deltaState captures everything observable about a delta.
func deltaState(d *Delta) []any {
	return []any{d.Offset(), imageBytes(d.Apply()), d.ChangedBrokers(), d.ChangedTopics(), d.CreatedTopics(),
		d.DeletedTopics(), d.ChangedConfigs(), d.ProducerIDsChanged(), d.ChangedACLs(),
		d.ChangedScramCredentials(), d.ChangedFeatures()}
}

// mustReject replays r and checks that it fails with code and leaves d as
// it was.
func mustReject(t *testing.T, d *Delta, r Record, offset uint64, code *kerr.Error) {
	t.Helper()
	before := deltaState(d)
	err := d.Replay(r, offset)
	if err == nil {
		t.Fatalf("replay %s %+v succeeded, want %s", r.Type(), r, code.Message)
	}
	var re *ReplayError
	if !errors.As(err, &re) || !errors.Is(err, code) {
		t.Fatalf("replay %s: got %v, want a ReplayError wrapping %s", r.Type(), err, code.Message)
	}
	if after := deltaState(d); !reflect.DeepEqual(before, after) {
		t.Fatalf("rejected %s changed the delta", r.Type())
	}
}

var (
	topicA = testUUID(0xa0)
	topicB = testUUID(0xb0)
)

func partition(topic Uuid, p int32, leader int32, replicas ...int32) *PartitionRecord {
	return &PartitionRecord{TopicID: topic, Partition: p, PartitionState: PartitionState{
		Replicas: replicas, ISR: replicas, Leader: leader}}
}

func createTopic(name string, id Uuid, parts int32, replicas ...int32) []Record {
	rs := []Record{&TopicRecord{Name: name, ID: id}}
	for p := int32(0); p < parts; p++ {
		rs = append(rs, partition(id, p, replicas[int(p)%len(replicas)], replicas...))
	}
	return rs
}

func TestTopicCreateAndDelete(t *testing.T) {
	rs := append(createTopic("b", topicB, 2, 1, 2), createTopic("a", topicA, 3, 1, 2, 3)...)
	rs = append(rs, SetConfig(ConfigResource{ResourceTopic, "a"}, "retention.ms", "10"))
	d, im := apply(t, EmptyImage(), 5, rs...)
	if im.Offset() != 5 {
		t.Fatalf("offset %d", im.Offset())
	}
	a, ok := im.Topic("a")
	if !ok || a.ID != topicA || len(a.Partitions) != 3 {
		t.Fatalf("topic a: %+v", a)
	}
	if byID, _ := im.TopicByID(topicA); byID != a {
		t.Fatalf("TopicByID returns a different topic")
	}
	if names := []string{im.Topics()[0].Name, im.Topics()[1].Name}; !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("Topics not sorted by name: %v", names)
	}
	if got := a.PartitionIDs(); !slices.Equal(got, []int32{0, 1, 2}) {
		t.Fatalf("partition ids %v", got)
	}
	if got := d.CreatedTopics(); !slices.Equal(got, []Uuid{topicA, topicB}) {
		t.Fatalf("CreatedTopics %v", got)
	}
	if got := d.ChangedPartitions(topicA); !slices.Equal(got, []int32{0, 1, 2}) {
		t.Fatalf("ChangedPartitions %v", got)
	}
	if p1, _ := a.Partition(1); p1.Leader != 2 || p1.LeaderEpoch != 0 || !p1.InISR(3) {
		t.Fatalf("partition 1: %+v", p1)
	}

	d2, im2 := apply(t, im, 6, &RemoveTopicRecord{ID: topicA})
	if _, ok := im2.Topic("a"); ok {
		t.Fatal("topic a survived RemoveTopicRecord")
	}
	if _, ok := im2.TopicByID(topicA); ok {
		t.Fatal("topic a's id survived RemoveTopicRecord")
	}
	if len(im2.Configs(ConfigResource{ResourceTopic, "a"})) != 0 {
		t.Fatal("topic configs survived the topic")
	}
	del := d2.DeletedTopics()
	if len(del) != 1 || del[0] != a {
		t.Fatalf("DeletedTopics %v", del)
	}
	if got := d2.ChangedConfigs(); !slices.Equal(got, []ConfigResource{{ResourceTopic, "a"}}) {
		t.Fatalf("ChangedConfigs %v", got)
	}
	if b1, _ := im.Topic("b"); b1 != mustTopic(t, im2, "b") {
		t.Fatal("unchanged topic b was copied instead of shared")
	}
}

func mustTopic(t *testing.T, im *Image, name string) *TopicImage {
	t.Helper()
	tp, ok := im.Topic(name)
	if !ok {
		t.Fatalf("no topic %s", name)
	}
	return tp
}

func TestTopicRules(t *testing.T) {
	_, im := apply(t, EmptyImage(), 1, createTopic("a", topicA, 1, 1, 2)...)
	d := NewDelta(im)
	if err := d.Replay(&TopicRecord{Name: "b", ID: topicB}, 2); err != nil {
		t.Fatal(err)
	}
	long := string(bytes.Repeat([]byte{'x'}, 250))
	for _, tc := range []struct {
		r    Record
		code *kerr.Error
	}{
		{&TopicRecord{Name: "a", ID: testUUID(1)}, kerr.TopicAlreadyExists},
		{&TopicRecord{Name: "b", ID: testUUID(1)}, kerr.TopicAlreadyExists},
		{&TopicRecord{Name: "c", ID: topicA}, kerr.TopicAlreadyExists},
		{&TopicRecord{Name: "c", ID: topicB}, kerr.TopicAlreadyExists},
		{&TopicRecord{Name: "c"}, kerr.InvalidRequest},
		{&TopicRecord{Name: "c", ID: metadataTopicID}, kerr.InvalidRequest},
		{&TopicRecord{Name: "a b", ID: testUUID(1)}, kerr.InvalidTopicException},
		{&TopicRecord{Name: "..", ID: testUUID(1)}, kerr.InvalidTopicException},
		{&TopicRecord{Name: long, ID: testUUID(1)}, kerr.InvalidTopicException},
		{partition(testUUID(1), 0, 1, 1), kerr.UnknownTopicID},
		{partition(topicB, -1, 1, 1), kerr.InvalidPartitions},
		{partition(topicB, 0, NoLeader), kerr.InvalidReplicaAssignment},
		{partition(topicB, 0, 1, 1, 1), kerr.InvalidReplicaAssignment},
		{partition(topicB, 0, 1, -3), kerr.InvalidReplicaAssignment},
		{partition(topicB, 0, 3, 1, 2), kerr.InvalidRequest}, // leader not in isr
		{&PartitionRecord{TopicID: topicB, PartitionState: PartitionState{Replicas: []int32{1}, ISR: []int32{2}, Leader: NoLeader}}, kerr.InvalidRequest},
		{&PartitionRecord{TopicID: topicB, PartitionState: PartitionState{Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1,
			AddingReplicas: []int32{2}, RemovingReplicas: []int32{2}}}, kerr.InvalidReplicaAssignment},
		{&PartitionRecord{TopicID: topicB, PartitionState: PartitionState{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1,
			AddingReplicas: []int32{5}}}, kerr.InvalidReplicaAssignment},
		{&PartitionRecord{TopicID: topicB, PartitionState: PartitionState{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1,
			LeaderRecoveryState: 7}}, kerr.InvalidRequest},
		{&RemoveTopicRecord{ID: testUUID(1)}, kerr.UnknownTopicID},
		{&PartitionChangeRecord{TopicID: topicA, Partition: 9}, kerr.UnknownTopicOrPartition},
		{&PartitionChangeRecord{TopicID: testUUID(1)}, kerr.UnknownTopicID},
	} {
		mustReject(t, d, tc.r, 2, tc.code)
	}
	// A topic created and deleted in one delta leaves no trace; its name is
	// free again.
	if err := d.Replay(&RemoveTopicRecord{ID: topicB}, 3); err != nil {
		t.Fatal(err)
	}
	if len(d.CreatedTopics()) != 0 || len(d.DeletedTopics()) != 0 {
		t.Fatalf("create+delete reported: %v %v", d.CreatedTopics(), d.DeletedTopics())
	}
	if err := d.Replay(&TopicRecord{Name: "b", ID: testUUID(9)}, 3); err != nil {
		t.Fatalf("re-creating b: %v", err)
	}
	mustReject(t, d, &TopicRecord{Name: "z", ID: testUUID(9)}, 4, kerr.TopicAlreadyExists)
	mustReject(t, d, &NoOpRecord{}, 2, kerr.InvalidRequest) // offset goes back
}

func TestPartitionChangeBumpsEpochsLikeKafka(t *testing.T) {
	_, im := apply(t, EmptyImage(), 1, createTopic("a", topicA, 1, 1, 2, 3)...)
	state := func(im *Image) PartitionState {
		s, _ := mustTopic(t, im, "a").Partition(0)
		return s
	}
	start := state(im)
	if start.Leader != 1 || start.LeaderEpoch != 0 || start.PartitionEpoch != 0 {
		t.Fatalf("start %+v", start)
	}
	steps := []struct {
		change              *PartitionChangeRecord
		leader              int32
		leaderEpoch, pEpoch int32
		isr                 []int32
	}{
		// ISR shrink: partition epoch only.
		{&PartitionChangeRecord{ISR: []int32{1, 2}}, 1, 0, 1, []int32{1, 2}},
		// New leader: both epochs.
		{&PartitionChangeRecord{Leader: i32(2)}, 2, 1, 2, []int32{1, 2}},
		// Leader set to the current leader still bumps the leader epoch.
		{&PartitionChangeRecord{Leader: i32(2)}, 2, 2, 3, []int32{1, 2}},
		// No leader.
		{&PartitionChangeRecord{Leader: i32(NoLeader), ISR: []int32{}}, NoLeader, 3, 4, nil},
		// Unclean election of 3 with recovery.
		{&PartitionChangeRecord{Leader: i32(3), ISR: []int32{3}, LeaderRecoveryState: lrs(Recovering)}, 3, 4, 5, []int32{3}},
	}
	cur := im
	for i, st := range steps {
		st.change.TopicID, st.change.Partition = topicA, 0
		var d *Delta
		d, cur = apply(t, cur, uint64(2+i), st.change)
		s := state(cur)
		if s.Leader != st.leader || s.LeaderEpoch != st.leaderEpoch || s.PartitionEpoch != st.pEpoch || !slices.Equal(s.ISR, st.isr) {
			t.Fatalf("step %d: got %+v, want leader %d epochs %d/%d isr %v", i, s, st.leader, st.leaderEpoch, st.pEpoch, st.isr)
		}
		if got := d.ChangedPartitions(topicA); !slices.Equal(got, []int32{0}) {
			t.Fatalf("step %d: ChangedPartitions %v", i, got)
		}
	}
	if s := state(cur); s.LeaderRecoveryState != Recovering || !slices.Equal(s.Replicas, []int32{1, 2, 3}) {
		t.Fatalf("final %+v", s)
	}
	// A change that would leave the leader outside the ISR is refused.
	d := NewDelta(cur)
	mustReject(t, d, &PartitionChangeRecord{TopicID: topicA, ISR: []int32{1}}, 10, kerr.InvalidRequest)
	mustReject(t, d, &PartitionChangeRecord{TopicID: topicA, Leader: i32(-5)}, 10, kerr.InvalidRequest)
	mustReject(t, d, &PartitionChangeRecord{TopicID: topicA, Replicas: []int32{1, 2}}, 10, kerr.InvalidRequest)
	// Reassignment: replicas and adding replicas together.
	_, cur = apply(t, cur, 11, &PartitionChangeRecord{TopicID: topicA, Replicas: []int32{1, 2, 3, 4},
		AddingReplicas: []int32{4}, RemovingReplicas: []int32{1}})
	if s := state(cur); !slices.Equal(s.AddingReplicas, []int32{4}) || s.LeaderEpoch != 4 || s.PartitionEpoch != 6 {
		t.Fatalf("reassignment %+v", s)
	}
}

// TestPartitionChangeMinLeaderEpoch checks kmirror's explicit epoch bump: the
// new leader epoch is max(old+1, LeaderEpoch), the leader stays unless Leader
// is set, and the change counts as a leader change.
func TestPartitionChangeMinLeaderEpoch(t *testing.T) {
	_, im := apply(t, EmptyImage(), 1, createTopic("a", topicA, 1, 1, 2, 3)...)
	state := func(im *Image) PartitionState {
		s, _ := mustTopic(t, im, "a").Partition(0)
		return s
	}
	steps := []struct {
		change      *PartitionChangeRecord
		leader      int32
		leaderEpoch int32
		pEpoch      int32
	}{
		// Above the current epoch: jumps to it; same leader.
		{&PartitionChangeRecord{LeaderEpoch: i32(40)}, 1, 40, 1},
		// At or below the current epoch: an ordinary bump by one.
		{&PartitionChangeRecord{LeaderEpoch: i32(40)}, 1, 41, 2},
		{&PartitionChangeRecord{LeaderEpoch: i32(0)}, 1, 42, 3},
		// With a new leader: both apply.
		{&PartitionChangeRecord{Leader: i32(2), LeaderEpoch: i32(100)}, 2, 100, 4},
		{&PartitionChangeRecord{Leader: i32(3), LeaderEpoch: i32(7)}, 3, 101, 5},
	}
	cur := im
	for i, st := range steps {
		st.change.TopicID, st.change.Partition = topicA, 0
		prev := state(cur)
		var d *Delta
		d, cur = apply(t, cur, uint64(2+i), st.change)
		s := state(cur)
		if s.Leader != st.leader || s.LeaderEpoch != st.leaderEpoch || s.PartitionEpoch != st.pEpoch || !slices.Equal(s.ISR, prev.ISR) {
			t.Fatalf("step %d: got %+v, want leader %d epochs %d/%d", i, s, st.leader, st.leaderEpoch, st.pEpoch)
		}
		if got := d.ChangedPartitions(topicA); !slices.Equal(got, []int32{0}) {
			t.Fatalf("step %d: ChangedPartitions %v", i, got)
		}
	}
	d := NewDelta(cur)
	mustReject(t, d, &PartitionChangeRecord{TopicID: topicA, LeaderEpoch: i32(-1)}, 20, kerr.InvalidRequest)
	// Through a snapshot: the epoch survives as the partition's state.
	_, again := apply(t, EmptyImage(), 1, cur.ToRecords()...)
	if s := state(again); s.LeaderEpoch != 101 || s.Leader != 3 {
		t.Fatalf("after snapshot: %+v", s)
	}
}

func TestConfigsAndMirrors(t *testing.T) {
	ordersRes := ConfigResource{ResourceTopic, "orders"}
	mirrorRes := ConfigResource{ResourceMirror, "east"}
	rs := append(createTopic("orders", topicA, 1, 1), createTopic("audit", topicB, 1, 1)...)
	rs = append(rs,
		SetConfig(ordersRes, "retention.ms", "1"),
		SetConfig(ordersRes, "retention.ms", "2"),
		SetConfig(ordersRes, MirrorNameConfig, "east"),
		SetConfig(mirrorRes, "bootstrap.servers", "src:9092"),
		SetConfig(ConfigResource{ResourceBroker, ""}, "log.retention.ms", "5"),
	)
	d, im := apply(t, EmptyImage(), 1, rs...)
	if got := im.Configs(ordersRes); !reflect.DeepEqual(got, map[string]string{"retention.ms": "2", MirrorNameConfig: "east"}) {
		t.Fatalf("orders configs %v", got)
	}
	im.Configs(ordersRes)["retention.ms"] = "mutated"
	if v, _ := im.Config(ordersRes, "retention.ms"); v != "2" {
		t.Fatal("Configs did not return a copy")
	}
	if got := im.Mirrors(); !slices.Equal(got, []string{"east"}) {
		t.Fatalf("Mirrors %v", got)
	}
	if got := im.MirrorTopics("east"); !slices.Equal(got, []string{"orders"}) {
		t.Fatalf("MirrorTopics %v", got)
	}
	if got := d.MirrorNameChanges(); !reflect.DeepEqual(got, []MirrorNameChange{{Topic: "orders", New: "east"}}) {
		t.Fatalf("MirrorNameChanges %v", got)
	}
	if got := d.ChangedMirrors(); !slices.Equal(got, []string{"east"}) {
		t.Fatalf("ChangedMirrors %v", got)
	}

	// audit joins, orders is deleted: both show up as mirror.name changes.
	d2, im2 := apply(t, im, 2,
		SetConfig(ConfigResource{ResourceTopic, "audit"}, MirrorNameConfig, "east"),
		&RemoveTopicRecord{ID: topicA},
		RemoveConfig(mirrorRes, "bootstrap.servers"),
		RemoveConfig(ConfigResource{ResourceBroker, ""}, "no.such.key"),
	)
	want := []MirrorNameChange{{Topic: "audit", New: "east"}, {Topic: "orders", Old: "east"}}
	if got := d2.MirrorNameChanges(); !reflect.DeepEqual(got, want) {
		t.Fatalf("MirrorNameChanges %v", got)
	}
	if len(im2.Mirrors()) != 0 || len(im2.ConfigResources(ResourceMirror)) != 0 {
		t.Fatalf("mirror without configs still listed: %v", im2.Mirrors())
	}
	// Removing a key that was never set is not a change.
	if got := d2.ChangedConfigs(); slices.Contains(got, ConfigResource{ResourceBroker, ""}) {
		t.Fatalf("ChangedConfigs reports a no-op removal: %v", got)
	}
	d3 := NewDelta(im2)
	mustReject(t, d3, SetConfig(ConfigResource{Type: 3, Name: "x"}, "k", "v"), 3, kerr.InvalidRequest)
	mustReject(t, d3, SetConfig(ConfigResource{ResourceTopic, "x"}, "", "v"), 3, kerr.InvalidConfig)
	mustReject(t, d3, SetConfig(ConfigResource{ResourceMirror, ""}, "k", "v"), 3, kerr.InvalidConfig)
}

// A topic deleted and re-created under the same name in one delta must not
// inherit the old topic's configs, but keeps configs set after re-creation.
func TestRecreatedTopicConfigs(t *testing.T) {
	res := ConfigResource{ResourceTopic, "a"}
	_, im := apply(t, EmptyImage(), 1, append(createTopic("a", topicA, 1, 1), SetConfig(res, "x", "old"), SetConfig(res, "y", "old"))...)
	d, im2 := apply(t, im, 2, append([]Record{&RemoveTopicRecord{ID: topicA}},
		append(createTopic("a", topicB, 1, 1), SetConfig(res, "x", "new"))...)...)
	if got := im2.Configs(res); !reflect.DeepEqual(got, map[string]string{"x": "new"}) {
		t.Fatalf("configs %v", got)
	}
	if tp := mustTopic(t, im2, "a"); tp.ID != topicB {
		t.Fatalf("topic a has id %v", tp.ID)
	}
	if len(d.DeletedTopics()) != 1 || !slices.Equal(d.CreatedTopics(), []Uuid{topicB}) {
		t.Fatalf("deleted %v created %v", d.DeletedTopics(), d.CreatedTopics())
	}
}

func TestBrokerRegistrationRules(t *testing.T) {
	reg := func(id int32, epoch int64) *RegisterBrokerRecord {
		return &RegisterBrokerRecord{BrokerRegistration{ID: id, Epoch: epoch, IncarnationID: testUUID(byte(id)), Fenced: true,
			Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "h", Port: uint16(9090 + id)}}}}
	}
	d, im := apply(t, EmptyImage(), 1, reg(2, 10), reg(1, 11))
	if got := d.ChangedBrokers(); !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("ChangedBrokers %v", got)
	}
	if bs := im.Brokers(); len(bs) != 2 || bs[0].ID != 1 || !bs[0].Fenced {
		t.Fatalf("Brokers %+v", bs)
	}
	if e, ok := mustBroker(t, im, 2).Endpoint("PLAINTEXT"); !ok || e.Port != 9092 {
		t.Fatalf("endpoint %+v", e)
	}

	d = NewDelta(im)
	mustReject(t, d, &UnfenceBrokerRecord{ID: 1, Epoch: 10}, 2, kerr.StaleBrokerEpoch)
	mustReject(t, d, &FenceBrokerRecord{ID: 3, Epoch: 10}, 2, kerr.BrokerIDNotRegistered)
	mustReject(t, d, &UnregisterBrokerRecord{BrokerID: 2, BrokerEpoch: 11}, 2, kerr.StaleBrokerEpoch)
	mustReject(t, d, &BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 11, Fenced: 2}, 2, kerr.InvalidRequest)
	mustReject(t, d, &BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 11, InControlledShutdown: 3}, 2, kerr.InvalidRequest)
	mustReject(t, d, &RegisterBrokerRecord{BrokerRegistration{ID: -1}}, 2, kerr.InvalidRequest)
	mustReject(t, d, &RegisterBrokerRecord{BrokerRegistration{ID: 4, Endpoints: []Endpoint{{Name: "A"}, {Name: "A"}}}}, 2, kerr.InvalidRequest)

	_, im = apply(t, im, 2, &UnfenceBrokerRecord{ID: 1, Epoch: 11},
		&BrokerRegistrationChangeRecord{BrokerID: 2, BrokerEpoch: 10, Fenced: FencingUnfence})
	if mustBroker(t, im, 1).Fenced || mustBroker(t, im, 2).Fenced {
		t.Fatal("unfence did not unfence")
	}
	_, im = apply(t, im, 3, &BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 11, InControlledShutdown: ShutdownStarted},
		&FenceBrokerRecord{ID: 2, Epoch: 10})
	if b1 := mustBroker(t, im, 1); !b1.InControlledShutdown || b1.Fenced {
		t.Fatalf("broker 1 %+v", b1)
	}
	if !mustBroker(t, im, 2).Fenced {
		t.Fatal("fence did not fence")
	}
	// Re-registration replaces the registration (new epoch, fenced again,
	// controlled shutdown over).
	_, im = apply(t, im, 4, reg(1, 20))
	if b1 := mustBroker(t, im, 1); b1.Epoch != 20 || b1.InControlledShutdown || !b1.Fenced {
		t.Fatalf("re-registered broker 1 %+v", b1)
	}
	d, im = apply(t, im, 5, &UnregisterBrokerRecord{BrokerID: 1, BrokerEpoch: 20})
	if _, ok := im.Broker(1); ok || !slices.Equal(d.ChangedBrokers(), []int32{1}) {
		t.Fatal("unregister did not remove broker 1")
	}
	// Registered and unregistered in one delta: no change at all.
	d, _ = apply(t, im, 6, reg(7, 30), &UnregisterBrokerRecord{BrokerID: 7, BrokerEpoch: 30})
	if d.HasChanges() {
		t.Fatalf("register+unregister left changes: %v", d.ChangedBrokers())
	}
}

func mustBroker(t *testing.T, im *Image, id int32) BrokerRegistration {
	t.Helper()
	b, ok := im.Broker(id)
	if !ok {
		t.Fatalf("no broker %d", id)
	}
	return b
}

func TestProducerIDBlocks(t *testing.T) {
	if EmptyImage().NextProducerID() != 0 {
		t.Fatal("empty image hands out ids from 0")
	}
	d, im := apply(t, EmptyImage(), 1, &ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 5, NextProducerID: 1000},
		&ProducerIdsRecord{BrokerID: 2, BrokerEpoch: 6, NextProducerID: 2000})
	if im.NextProducerID() != 2000 || !d.ProducerIDsChanged() {
		t.Fatalf("next producer id %d", im.NextProducerID())
	}
	d = NewDelta(im)
	mustReject(t, d, &ProducerIdsRecord{NextProducerID: 2000}, 2, kerr.InvalidRequest)
	mustReject(t, d, &ProducerIdsRecord{NextProducerID: 10}, 2, kerr.InvalidRequest)
}

func TestACLRules(t *testing.T) {
	acl := ACLEntry{ID: testUUID(1), ResourceType: ACLResourceTopic, ResourceName: "orders", PatternType: ACLPatternLiteral,
		Principal: "User:alice", Host: "*", Operation: ACLOperationWrite, Permission: ACLPermissionAllow}
	acl2 := acl
	acl2.ID, acl2.Permission = testUUID(2), ACLPermissionDeny
	d, im := apply(t, EmptyImage(), 1, &AccessControlEntryRecord{acl2}, &AccessControlEntryRecord{acl})
	if got := im.ACLs(); !reflect.DeepEqual(got, []ACLEntry{acl, acl2}) {
		t.Fatalf("ACLs %v", got)
	}
	if len(d.ChangedACLs()) != 2 {
		t.Fatalf("ChangedACLs %v", d.ChangedACLs())
	}
	d = NewDelta(im)
	mustReject(t, d, &AccessControlEntryRecord{acl}, 2, kerr.DuplicateResource)
	mustReject(t, d, &RemoveAccessControlEntryRecord{ID: testUUID(3)}, 2, kerr.ResourceNotFound)
	for _, mutate := range []func(a *ACLEntry){
		func(a *ACLEntry) { a.ID = Uuid{} },
		func(a *ACLEntry) { a.ResourceType = 1 },
		func(a *ACLEntry) { a.PatternType = 2 },
		func(a *ACLEntry) { a.Operation = 1 },
		func(a *ACLEntry) { a.Permission = 1 },
		func(a *ACLEntry) { a.Principal = "" },
	} {
		bad := acl
		bad.ID = testUUID(9)
		mutate(&bad)
		mustReject(t, d, &AccessControlEntryRecord{bad}, 2, kerr.InvalidRequest)
	}
	_, im = apply(t, im, 2, &RemoveAccessControlEntryRecord{ID: acl.ID})
	if _, ok := im.ACL(acl.ID); ok || len(im.ACLs()) != 1 {
		t.Fatalf("ACL not removed: %v", im.ACLs())
	}
}

func TestScramRules(t *testing.T) {
	c := ScramCredential{Name: "alice", Mechanism: ScramSHA256, Salt: []byte("s"), StoredKey: []byte("k"), ServerKey: []byte("v"), Iterations: 4096}
	c512 := c
	c512.Mechanism, c512.Iterations = ScramSHA512, 8192
	rec := &UserScramCredentialRecord{c}
	_, im := apply(t, EmptyImage(), 1, rec, &UserScramCredentialRecord{c512})
	rec.Salt[0] = 'X' // the image must hold its own copy
	if got, ok := im.ScramCredential("alice", ScramSHA256); !ok || string(got.Salt) != "s" {
		t.Fatalf("credential %+v", got)
	}
	if got := im.ScramCredentials(); len(got) != 2 || got[0].Mechanism != ScramSHA256 {
		t.Fatalf("ScramCredentials %+v", got)
	}
	d := NewDelta(im)
	mustReject(t, d, &RemoveUserScramCredentialRecord{Name: "bob", Mechanism: ScramSHA256}, 2, kerr.ResourceNotFound)
	mustReject(t, d, &UserScramCredentialRecord{ScramCredential{Name: "bob", Mechanism: 3, Iterations: 1}}, 2, kerr.UnsupportedSaslMechanism)
	mustReject(t, d, &UserScramCredentialRecord{ScramCredential{Name: "", Mechanism: 1, Iterations: 1}}, 2, kerr.InvalidRequest)
	mustReject(t, d, &UserScramCredentialRecord{ScramCredential{Name: "bob", Mechanism: 1}}, 2, kerr.InvalidRequest)
	_, im = apply(t, im, 2, &RemoveUserScramCredentialRecord{Name: "alice", Mechanism: ScramSHA512})
	if _, ok := im.ScramCredential("alice", ScramSHA512); ok || len(im.ScramCredentials()) != 1 {
		t.Fatal("credential not removed")
	}
}

func TestFeatureLevels(t *testing.T) {
	_, im := apply(t, EmptyImage(), 1, &FeatureLevelRecord{Name: MetadataVersionFeature, Level: 20},
		&FeatureLevelRecord{Name: "kraft.version", Level: 1}, &FeatureLevelRecord{Name: "gone", Level: 0})
	if im.FeatureLevel(MetadataVersionFeature) != 20 || len(im.Features()) != 2 {
		t.Fatalf("features %v", im.Features())
	}
	d, im := apply(t, im, 2, &FeatureLevelRecord{Name: "kraft.version", Level: 0})
	if _, ok := im.Features()["kraft.version"]; ok || !slices.Equal(d.ChangedFeatures(), []string{"kraft.version"}) {
		t.Fatalf("level 0 did not remove the feature: %v", im.Features())
	}
	mustReject(t, NewDelta(im), &FeatureLevelRecord{Name: "x", Level: -1}, 3, kerr.InvalidRequest)
}

// richImage builds an image with something of every kind, over several
// deltas.
func richImage(t *testing.T) *Image {
	t.Helper()
	im, err := buildRichImage()
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func buildRichImage() (*Image, error) {
	im := EmptyImage()
	var off uint64
	for _, batch := range [][]Record{
		{&FeatureLevelRecord{Name: MetadataVersionFeature, Level: 21}},
		{&RegisterBrokerRecord{BrokerRegistration{ID: 1, Epoch: 2, Rack: "r1", Endpoints: []Endpoint{{Name: "PLAINTEXT", Host: "h1", Port: 9092}},
			Features: []BrokerFeature{{Name: MetadataVersionFeature, MinSupported: 1, MaxSupported: 21}}}},
			&RegisterBrokerRecord{BrokerRegistration{ID: 2, Epoch: 3, Fenced: true, InControlledShutdown: true}}},
		createTopic("orders", topicA, 3, 1, 2),
		createTopic("audit", topicB, 1, 2),
		{&PartitionChangeRecord{TopicID: topicA, Partition: 1, ISR: []int32{2}, Leader: i32(2)},
			SetConfig(ConfigResource{ResourceTopic, "orders"}, MirrorNameConfig, "east"),
			SetConfig(ConfigResource{ResourceMirror, "east"}, "bootstrap.servers", "src:9092"),
			SetConfig(ConfigResource{ResourceBroker, "1"}, "log.retention.ms", "9")},
		{&ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 2, NextProducerID: 1000}},
		{&AccessControlEntryRecord{ACLEntry{ID: testUUID(5), ResourceType: ACLResourceGroup, ResourceName: "g", PatternType: ACLPatternLiteral,
			Principal: "User:bob", Host: "10.0.0.1", Operation: ACLOperationRead, Permission: ACLPermissionAllow}}},
		{&UserScramCredentialRecord{ScramCredential{Name: "bob", Mechanism: ScramSHA512, Salt: []byte{1}, StoredKey: []byte{2}, ServerKey: []byte{3}, Iterations: 4096}}},
		{&NoOpRecord{}},
	} {
		off++
		d := NewDelta(im)
		for _, r := range batch {
			if err := d.Replay(r, off); err != nil {
				return nil, err
			}
		}
		im = d.Apply()
	}
	return im, nil
}

func TestToRecordsRebuildsTheImage(t *testing.T) {
	im := richImage(t)
	rs := im.ToRecords()
	// Through the codec, as a snapshot would.
	decoded, err := DecodeBatch(EncodeBatch(nil, rs))
	if err != nil {
		t.Fatal(err)
	}
	_, rebuilt := apply(t, EmptyImage(), im.Offset(), decoded...)
	sameImage(t, rebuilt, im)
	if !reflect.DeepEqual(rebuilt.Brokers(), im.Brokers()) || !reflect.DeepEqual(rebuilt.ScramCredentials(), im.ScramCredentials()) {
		t.Fatal("rebuilt brokers or credentials differ")
	}
	for _, tp := range im.Topics() {
		if got := mustTopic(t, rebuilt, tp.Name); !reflect.DeepEqual(got, tp) {
			t.Fatalf("topic %s differs: %+v vs %+v", tp.Name, got, tp)
		}
	}
	if rs[0].Type() != TypeFeatureLevel {
		t.Fatalf("first record is %s, want the metadata version", rs[0].Type())
	}
}

func TestOldImageIsUnchangedByApply(t *testing.T) {
	im := richImage(t)
	before := imageBytes(im)
	orders := mustTopic(t, im, "orders")
	p0 := orders.Partitions[0]
	_, next := apply(t, im, 100,
		&PartitionChangeRecord{TopicID: topicA, Partition: 0, ISR: []int32{1}},
		partition(topicA, 3, 1, 1),
		SetConfig(ConfigResource{ResourceTopic, "orders"}, "retention.ms", "5"),
		SetConfig(ConfigResource{ResourceMirror, "east"}, "bootstrap.servers", "other:9092"),
		&FenceBrokerRecord{ID: 1, Epoch: 2},
		&ProducerIdsRecord{NextProducerID: 5000},
		&RemoveAccessControlEntryRecord{ID: testUUID(5)},
		&RemoveUserScramCredentialRecord{Name: "bob", Mechanism: ScramSHA512},
		&FeatureLevelRecord{Name: MetadataVersionFeature, Level: 22},
		&RemoveTopicRecord{ID: topicB},
	)
	if !bytes.Equal(imageBytes(im), before) {
		t.Fatal("Apply modified its base image")
	}
	if !reflect.DeepEqual(orders.Partitions[0], p0) || len(orders.Partitions) != 3 {
		t.Fatal("Apply modified a base topic's partitions")
	}
	if bytes.Equal(imageBytes(next), before) {
		t.Fatal("the new image did not change")
	}
	// The new image's unchanged partition state is shared, not rebuilt.
	if n := mustTopic(t, next, "orders"); !reflect.DeepEqual(n.Partitions[1], orders.Partitions[1]) || len(n.Partitions) != 4 {
		t.Fatalf("new orders topic %+v", n)
	}
}

// Whether records are replayed in one delta or many must not matter: the
// metadata log coalesces entries for publishers.
func TestDeltaBoundariesDoNotMatter(t *testing.T) {
	res := ConfigResource{ResourceTopic, "a"}
	script := []Record{
		&TopicRecord{Name: "a", ID: topicA}, partition(topicA, 0, 1, 1, 2), SetConfig(res, "k", "1"),
		&PartitionChangeRecord{TopicID: topicA, Leader: i32(2)},
		&RemoveTopicRecord{ID: topicA},
		&TopicRecord{Name: "a", ID: topicA}, // the same id again
		partition(topicA, 0, 2, 2),
		&RemoveTopicRecord{ID: topicB}, // invalid: never existed
		&TopicRecord{Name: "b", ID: topicB}, SetConfig(res, "k", "2"),
		&RegisterBrokerRecord{BrokerRegistration{ID: 1, Epoch: 1}},
		&UnfenceBrokerRecord{ID: 1, Epoch: 2}, // invalid epoch
		&UnregisterBrokerRecord{BrokerID: 1, BrokerEpoch: 1},
		&RegisterBrokerRecord{BrokerRegistration{ID: 1, Epoch: 3}},
	}
	one := NewDelta(EmptyImage())
	cur := EmptyImage()
	for i, r := range script {
		errOne := one.Replay(r, uint64(i+1))
		d := NewDelta(cur)
		errMany := d.Replay(r, uint64(i+1))
		if (errOne == nil) != (errMany == nil) {
			t.Fatalf("record %d (%s): one delta says %v, separate deltas say %v", i, r.Type(), errOne, errMany)
		}
		if errMany == nil {
			cur = d.Apply()
		}
	}
	sameImage(t, one.Apply(), cur)
	if p, _ := mustTopic(t, cur, "a").Partition(0); p.Leader != 2 || p.LeaderEpoch != 0 {
		t.Fatalf("re-created topic kept old state: %+v", p)
	}
}

func TestLocalChanges(t *testing.T) {
	_, im := apply(t, EmptyImage(), 1, append(createTopic("a", topicA, 2, 1, 2), createTopic("b", topicB, 1, 2, 3)...)...)
	lc := NewDelta(EmptyImage())
	for _, r := range im.ToRecords() {
		if err := lc.Replay(r, 1); err != nil {
			t.Fatal(err)
		}
	}
	got := lc.LocalChanges(2)
	if len(got.Leaders) != 2 || got.Leaders[0].Topic != "a" || got.Leaders[0].Partition != 1 || got.Leaders[1].Topic != "b" {
		t.Fatalf("leaders %+v", got.Leaders)
	}
	if len(got.Followers) != 1 || got.Followers[0].Partition != 0 || len(got.Deletes) != 0 {
		t.Fatalf("followers %+v deletes %+v", got.Followers, got.Deletes)
	}
	// Broker 1 is moved off a-0, topic b is deleted.
	d, _ := apply(t, im, 2,
		&PartitionChangeRecord{TopicID: topicA, Partition: 0, Replicas: []int32{2, 3}, ISR: []int32{2, 3}, Leader: i32(2)},
		&RemoveTopicRecord{ID: topicB})
	c1 := d.LocalChanges(1)
	if len(c1.Deletes) != 1 || c1.Deletes[0].Topic != "a" || c1.Deletes[0].TopicDeleted || !c1.Deletes[0].State.HasReplica(1) {
		t.Fatalf("broker 1 deletes %+v", c1.Deletes)
	}
	c3 := d.LocalChanges(3)
	if len(c3.Deletes) != 1 || c3.Deletes[0].Topic != "b" || !c3.Deletes[0].TopicDeleted || len(c3.Followers) != 1 {
		t.Fatalf("broker 3 %+v", c3)
	}
}

func TestDiff(t *testing.T) {
	im := richImage(t)
	full := Diff(EmptyImage(), im)
	sameImage(t, full.Apply(), im)
	if len(full.CreatedTopics()) != 2 || len(full.ChangedBrokers()) != 2 || !full.ProducerIDsChanged() || len(full.ChangedMirrors()) != 1 {
		t.Fatalf("full diff misses changes: topics %v brokers %v", full.CreatedTopics(), full.ChangedBrokers())
	}
	d, next := apply(t, im, 50,
		&PartitionChangeRecord{TopicID: topicA, Partition: 2, Leader: i32(2)},
		&RemoveTopicRecord{ID: topicB},
		&TopicRecord{Name: "audit", ID: testUUID(0x77)}, partition(testUUID(0x77), 0, 1, 1),
		&UnregisterBrokerRecord{BrokerID: 2, BrokerEpoch: 3},
		RemoveConfig(ConfigResource{ResourceMirror, "east"}, "bootstrap.servers"),
	)
	diff := Diff(im, next)
	sameImage(t, diff.Apply(), next)
	for name, pair := range map[string][2]any{
		"ChangedTopics":     {d.ChangedTopics(), diff.ChangedTopics()},
		"CreatedTopics":     {d.CreatedTopics(), diff.CreatedTopics()},
		"DeletedTopics":     {d.DeletedTopics(), diff.DeletedTopics()},
		"ChangedBrokers":    {d.ChangedBrokers(), diff.ChangedBrokers()},
		"ChangedConfigs":    {d.ChangedConfigs(), diff.ChangedConfigs()},
		"ChangedPartitions": {d.ChangedPartitions(topicA), diff.ChangedPartitions(topicA)},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s: replay says %v, Diff says %v", name, pair[0], pair[1])
		}
	}
	// A diff delta can be replayed further.
	if err := diff.Replay(&RemoveTopicRecord{ID: testUUID(0x77)}, 51); err != nil {
		t.Fatal(err)
	}
	if _, ok := diff.Apply().Topic("audit"); ok {
		t.Fatal("replay on a diff delta had no effect")
	}
	if Diff(im, im).HasChanges() {
		t.Fatal("diff of an image with itself has changes")
	}
}
