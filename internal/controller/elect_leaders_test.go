package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

func electReq(version int16, typ int8, topics map[string][]int32) *kmsg.ElectLeadersRequest {
	r := kmsg.NewPtrElectLeadersRequest()
	r.Version, r.ElectionType = version, typ
	if topics == nil {
		r.Topics = nil
		return r
	}
	for _, name := range []string{"t", "u", "zz"} {
		ps, ok := topics[name]
		if !ok {
			continue
		}
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = name, ps
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// electImage: brokers 1-3 up, 4 fenced. Topic t:
//
//	0: replicas [1 2 3], leader 2, ISR [1 2 3]   preferred can lead
//	1: replicas [1 2 3], leader 1                 already preferred
//	2: replicas [3 1 2], leader 1, ISR [1 2]      preferred out of the ISR
//	3: replicas [4 1 2], leader 1, ISR [4 1]      preferred fenced
//	4: replicas [1 2],   no leader, ISR [1]       offline, 2 is usable
//	5: replicas [4 1],   no leader, ISR [4]       offline, 1 usable (unclean)
//	6: replicas [4],     no leader, ISR [4]       offline for good
func electImage(t testing.TB) *metadata.Image {
	img := cluster(t, broker{id: 1}, broker{id: 2}, broker{id: 3}, broker{id: 4, fenced: true})
	return withTopic(t, img, "t", metadata.Uuid{0: 0xE1, 15: 1},
		partition(2, []int32{1, 2, 3}, []int32{1, 2, 3}),
		partition(1, []int32{1, 2, 3}, []int32{1, 2, 3}),
		partition(1, []int32{3, 1, 2}, []int32{1, 2}),
		partition(1, []int32{4, 1, 2}, []int32{4, 1}),
		partition(-1, []int32{1, 2}, []int32{1}),
		partition(-1, []int32{4, 1}, []int32{4}),
		partition(-1, []int32{4}, []int32{4}),
	)
}

func TestElectLeadersDecisions(t *testing.T) {
	type want struct {
		code   *kerr.Error
		leader int32 // after (-2: unchanged)
		isr    []int32
	}
	unchanged := int32(-2)
	for _, tc := range []struct {
		name    string
		typ     int8
		version int16
		want    map[int32]want
	}{
		{"preferred", electPreferred, 2, map[int32]want{
			0: {nil, 1, []int32{1, 2, 3}},
			1: {kerr.ElectionNotNeeded, unchanged, nil},
			2: {kerr.PreferredLeaderNotAvailable, unchanged, nil},
			3: {kerr.PreferredLeaderNotAvailable, unchanged, nil},
			4: {nil, 1, []int32{1}}, // the current leader may not stay: next valid replica in order
			5: {kerr.PreferredLeaderNotAvailable, unchanged, nil},
			6: {kerr.PreferredLeaderNotAvailable, unchanged, nil},
		}},
		{"preferred at v0", electUnclean /* ignored before v1 */, 0, map[int32]want{
			0: {nil, 1, []int32{1, 2, 3}},
			1: {kerr.ElectionNotNeeded, unchanged, nil},
		}},
		{"unclean", electUnclean, 1, map[int32]want{
			0: {kerr.ElectionNotNeeded, unchanged, nil},
			4: {nil, 1, []int32{1}},
			5: {nil, 1, []int32{1}},
			6: {kerr.EligibleLeadersNotAvailable, unchanged, nil},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := electImage(t)
			var ps []int32
			for p := range tc.want {
				ps = append(ps, p)
			}
			slices.Sort(ps)
			recs, resp := decideElectLeaders(testView(t, img, nil), electReq(tc.version, tc.typ, map[string][]int32{"t": ps, "zz": {0}}))
			after := apply(t, img, recs...)
			top, _ := after.Topic("t")
			before, _ := img.Topic("t")
			if len(resp.Topics) != 2 || resp.Topics[1].Topic != "zz" || resp.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("response topics %+v", resp.Topics)
			}
			for _, rp := range resp.Topics[0].Partitions {
				w := tc.want[rp.Partition]
				wantCode(t, "partition", rp.ErrorCode, rp.ErrorMessage, w.code, "")
				st, old := top.Partitions[rp.Partition], before.Partitions[rp.Partition]
				if w.leader == unchanged {
					if st.Leader != old.Leader || st.LeaderEpoch != old.LeaderEpoch {
						t.Fatalf("partition %d changed: %+v", rp.Partition, st)
					}
					continue
				}
				if st.Leader != w.leader || !slices.Equal(st.ISR, w.isr) || st.LeaderEpoch != old.LeaderEpoch+1 {
					t.Fatalf("partition %d after: %+v, want leader %d isr %v and a new leader epoch", rp.Partition, st, w.leader, w.isr)
				}
				if unclean := st.LeaderRecoveryState == metadata.Recovering; unclean != (tc.typ == electUnclean && tc.version >= 1 && !slices.Contains(old.ISR, w.leader)) {
					t.Fatalf("partition %d recovery state %v", rp.Partition, st.LeaderRecoveryState)
				}
			}
		})
	}
}

func TestElectLeadersAllPartitions(t *testing.T) {
	img := electImage(t)
	// A null topic list elects everywhere and leaves out the partitions
	// that need no election.
	recs, resp := decideElectLeaders(testView(t, img, nil), electReq(2, electUnclean, nil))
	if len(recs) != 2 || len(resp.Topics) != 1 {
		t.Fatalf("%d records, response %+v", len(recs), resp.Topics)
	}
	var got []int32
	for _, p := range resp.Topics[0].Partitions {
		got = append(got, p.Partition)
	}
	if !slices.Equal(got, []int32{4, 5, 6}) {
		t.Fatalf("partitions answered %v, want the offline ones", got)
	}
	// A partition named twice is elected once.
	recs, resp = decideElectLeaders(testView(t, img, nil), electReq(2, electPreferred, map[string][]int32{"t": {0, 0}}))
	if len(recs) != 1 || resp.Topics[0].Partitions[1].ErrorCode != kerr.ElectionNotNeeded.Code {
		t.Fatalf("%d records, %+v", len(recs), resp.Topics[0].Partitions)
	}
	// An unknown election type.
	_, resp = decideElectLeaders(testView(t, img, nil), electReq(1, 7, map[string][]int32{"t": {0}}))
	if resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("election type 7: code %d", resp.ErrorCode)
	}
}

func TestBalanceLeaders(t *testing.T) {
	img := cluster(t, upBrokers(3)...)
	// Broker 1 prefers four partitions and leads one (75% not led);
	// broker 2 prefers two and leads one (50%); broker 3 leads its own.
	img = withTopic(t, img, "t", metadata.Uuid{0: 0xBA, 15: 1},
		partition(1, []int32{1, 2}, []int32{1, 2}),
		partition(2, []int32{1, 2}, []int32{1, 2}),
		partition(2, []int32{1, 2}, []int32{2}), // preferred out of the ISR
		partition(3, []int32{1, 3}, []int32{1, 3}),
		partition(2, []int32{2, 1}, []int32{2, 1}),
		partition(1, []int32{2, 1}, []int32{2, 1}),
		partition(3, []int32{3, 1}, []int32{3, 1}),
	)
	for _, tc := range []struct {
		pct  int32
		want []int32 // partitions elected
	}{
		{10, []int32{1, 3, 5}},
		{50, []int32{1, 3}}, // broker 2 is at 50%, not above
		{80, nil},
	} {
		var got []int32
		for _, r := range balanceLeaders(img, tc.pct) {
			rec := r.(*metadata.PartitionChangeRecord)
			got = append(got, rec.Partition)
		}
		if !slices.Equal(got, tc.want) {
			t.Fatalf("at %d%%: elected %v, want %v", tc.pct, got, tc.want)
		}
		apply(t, img, balanceLeaders(img, tc.pct)...)
	}
}

func TestUncleanElectionsFollowTheConfig(t *testing.T) {
	img := cluster(t, upBrokers(2)...)
	img = withTopic(t, img, "t", metadata.Uuid{0: 0xBB, 15: 1}, partition(-1, []int32{3, 2}, []int32{3}))
	img = withTopic(t, img, "u", metadata.Uuid{0: 0xBB, 15: 2}, partition(-1, []int32{3, 1}, []int32{3}))
	cfg := testConfig(t, nil)
	if recs := uncleanElections(img, cfg); len(recs) != 0 {
		t.Fatalf("unclean elections while disabled: %v", recs)
	}
	img = withConfig(t, img, topicRes("u"), "unclean.leader.election.enable", "true")
	recs := uncleanElections(img, cfg)
	if len(recs) != 1 {
		t.Fatalf("%d elections, want u's", len(recs))
	}
	after := apply(t, img, recs...)
	u, _ := after.Topic("u")
	if st := u.Partitions[0]; st.Leader != 1 || !slices.Equal(st.ISR, []int32{1}) || st.LeaderRecoveryState != metadata.Recovering {
		t.Fatalf("u after: %+v", st)
	}
}

// TestElectionsThroughTheController drives ISR changes, ElectLeaders, the
// unclean election of a topic that starts allowing it, and automatic
// balancing through a running controller.
func TestElectionsThroughTheController(t *testing.T) {
	c := newTestCluster(t, 1, map[string]string{"leader.imbalance.check.interval.seconds": "1", "leader.imbalance.per.broker.percentage": "0"})
	nd := c.start(1)
	h := sender(c.active().ctl.Load().Handle)
	epochs := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		// Each broker is added to the quorum as a non-voter at its own
		// (unreachable) address.
		req := regReq(id, byte(id))
		req.Listeners[0].Port = uint16(id)
		reg := send[*kmsg.BrokerRegistrationResponse](t, h, req)
		if reg.ErrorCode != 0 {
			t.Fatalf("register broker %d: code %d", id, reg.ErrorCode)
		}
		epochs[id] = reg.BrokerEpoch
		waitFor(t, 10*time.Second, "broker unfenced", func() bool {
			hb := send[*kmsg.BrokerHeartbeatResponse](t, h, hbReq(id, reg.BrokerEpoch, int64(nd.q.AppliedOffset()), false, false))
			return !hb.IsFenced
		})
	}
	cr := send[*kmsg.CreateTopicsResponse](t, h, createReq(7, manualTopic("t", assignment(0, 1, 2, 3))))
	wantCode(t, "create", cr.Topics[0].ErrorCode, cr.Topics[0].ErrorMessage, nil, "")
	state := func() metadata.PartitionState {
		top, _ := nd.q.Image().Topic("t")
		return top.Partitions[0]
	}
	topicID := cr.Topics[0].TopicID

	// Broker 1 asks to be fenced: leadership moves to 2.
	send[*kmsg.BrokerHeartbeatResponse](t, h, hbReq(1, epochs[1], int64(nd.q.AppliedOffset()), true, false))
	if st := state(); st.Leader != 2 || slices.Contains(st.ISR, 1) {
		t.Fatalf("after fencing broker 1: %+v", st)
	}
	// A preferred election now has no preferred replica to elect.
	er := send[*kmsg.ElectLeadersResponse](t, h, electReq(2, electPreferred, map[string][]int32{"t": {0}}))
	wantCode(t, "preferred while out of the ISR", er.Topics[0].Partitions[0].ErrorCode, nil, kerr.PreferredLeaderNotAvailable, "")

	// Broker 1 is back, and leader 2 adds it to the ISR.
	send[*kmsg.BrokerHeartbeatResponse](t, h, hbReq(1, epochs[1], int64(nd.q.AppliedOffset()), false, false))
	st := state()
	ap := apReq(3, 2, epochs[2], metadata.Uuid(topicID), 0, st.LeaderEpoch, st.PartitionEpoch, metadata.Recovered,
		isrMember{2, epochs[2]}, isrMember{3, epochs[3]}, isrMember{1, epochs[1]})
	ar := send[*kmsg.AlterPartitionResponse](t, h, ap)
	if ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AlterPartition: %+v", ar)
	}
	if st2 := state(); !slices.Equal(st2.ISR, []int32{2, 3, 1}) || st2.PartitionEpoch != st.PartitionEpoch+1 || st2.LeaderEpoch != st.LeaderEpoch {
		t.Fatalf("after the expansion: %+v", st2)
	}
	// The same request again is stale.
	ar = send[*kmsg.AlterPartitionResponse](t, h, ap)
	wantCode(t, "stale AlterPartition", ar.Topics[0].Partitions[0].ErrorCode, nil, kerr.InvalidUpdateVersion, "")

	// Automatic balancing gives the partition back to broker 1 once its
	// interval has passed on the controller's clock.
	c.clock.Advance(1500 * time.Millisecond)
	waitFor(t, 10*time.Second, "the preferred leader back", func() bool { return state().Leader == 1 })
	if st := state(); st.LeaderEpoch != 2 {
		t.Fatalf("leader epoch %d after two elections", st.LeaderEpoch)
	}

	// Every replica but broker 3 goes; then 3 goes too, and the partition
	// is offline with 3 as the last ISR member.
	send[*kmsg.BrokerHeartbeatResponse](t, h, hbReq(1, epochs[1], int64(nd.q.AppliedOffset()), true, false))
	send[*kmsg.BrokerHeartbeatResponse](t, h, hbReq(2, epochs[2], int64(nd.q.AppliedOffset()), true, false))
	send[*kmsg.BrokerHeartbeatResponse](t, h, hbReq(3, epochs[3], int64(nd.q.AppliedOffset()), true, false))
	if st := state(); st.Leader != -1 || !slices.Equal(st.ISR, []int32{3}) {
		t.Fatalf("after every broker left: %+v", st)
	}
	// Broker 2 returns: out of the ISR, it may not lead.
	send[*kmsg.BrokerHeartbeatResponse](t, h, hbReq(2, epochs[2], int64(nd.q.AppliedOffset()), false, false))
	if st := state(); st.Leader != -1 {
		t.Fatalf("an out-of-sync replica leads with unclean elections off: %+v", st)
	}
	// Allowing unclean elections for the topic brings it back at once.
	ia := send[*kmsg.IncrementalAlterConfigsResponse](t, h, incrReq(incr(topicT, "t", op(set, "unclean.leader.election.enable", ptr("true")))))
	wantCode(t, "alter config", ia.Resources[0].ErrorCode, ia.Resources[0].ErrorMessage, nil, "")
	waitFor(t, 10*time.Second, "an unclean leader", func() bool { return state().Leader == 2 })
	if st := state(); !slices.Equal(st.ISR, []int32{2}) || st.LeaderRecoveryState != metadata.Recovering {
		t.Fatalf("after the unclean election: %+v", st)
	}
	// The new leader ends its recovery.
	st = state()
	ar = send[*kmsg.AlterPartitionResponse](t, h, apReq(3, 2, epochs[2], metadata.Uuid(topicID), 0, st.LeaderEpoch, st.PartitionEpoch, metadata.Recovered, isrMember{2, epochs[2]}))
	if ar.Topics[0].Partitions[0].ErrorCode != 0 || state().LeaderRecoveryState != metadata.Recovered {
		t.Fatalf("recovery not ended: %+v %+v", ar.Topics[0].Partitions[0], state())
	}
}
