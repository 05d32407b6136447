package controller

import (
	"slices"
	"testing"

	"github.com/kmirror/kmirror/internal/metadata"
)

func TestElectionWhenBrokerLeaves(t *testing.T) {
	id := metadata.Uuid{0: 5, 15: 1}
	for _, tc := range []struct {
		name      string
		brokers   []broker
		part      metadata.PartitionState
		out       int32
		unclean   bool
		leader    int32
		isr       []int32
		epoch     int32
		recovered bool
	}{
		{"leader leaves", upBrokers(3), partition(1, []int32{1, 2, 3}, []int32{1, 2, 3}), 1, false, 2, []int32{2, 3}, 1, true},
		{"follower leaves", upBrokers(3), partition(1, []int32{1, 2, 3}, []int32{1, 2, 3}), 2, false, 1, []int32{1, 3}, 0, true},
		{"preferred order among the ISR", upBrokers(3), partition(3, []int32{1, 2, 3}, []int32{3, 2}), 3, false, 2, []int32{2}, 1, true},
		{"last ISR member stays, partition offline", upBrokers(2), partition(1, []int32{1, 2}, []int32{1}), 1, false, -1, []int32{1}, 1, true},
		{"unclean election picks a live replica", upBrokers(2), partition(1, []int32{1, 2}, []int32{1}), 1, true, 2, []int32{2}, 1, false},
		{"unclean election with no live replica", []broker{{id: 1}, {id: 2, fenced: true}}, partition(1, []int32{1, 2}, []int32{1}), 1, true, -1, []int32{1}, 1, true},
		{"shutting-down ISR member does not lead", []broker{{id: 1}, {id: 2, shutdown: true}, {id: 3}}, partition(1, []int32{1, 2, 3}, []int32{1, 2, 3}), 1, false, 3, []int32{2, 3}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := cluster(t, tc.brokers...)
			img = withTopic(t, img, "t", id, tc.part)
			cfg := testConfig(t, map[string]string{"unclean.leader.election.enable": map[bool]string{true: "true", false: "false"}[tc.unclean]})
			after := apply(t, img, brokerOutChanges(img, cfg, tc.out)...)
			tp, _ := after.Topic("t")
			st := tp.Partitions[0]
			if st.Leader != tc.leader || !slices.Equal(st.ISR, tc.isr) || st.LeaderEpoch != tc.epoch {
				t.Fatalf("after %d left: leader %d isr %v epoch %d; want %d %v %d", tc.out, st.Leader, st.ISR, st.LeaderEpoch, tc.leader, tc.isr, tc.epoch)
			}
			if got := st.LeaderRecoveryState == metadata.Recovered; got != tc.recovered {
				t.Fatalf("leader recovery state %v", st.LeaderRecoveryState)
			}
		})
	}
}

func TestElectionWhenBrokerReturns(t *testing.T) {
	id := metadata.Uuid{0: 5, 15: 2}
	offline := partition(-1, []int32{1, 2}, []int32{1})
	for _, tc := range []struct {
		name    string
		back    int32
		unclean string // "" none, "topic", "cluster"
		leader  int32
		isr     []int32
	}{
		{"ISR member returns and leads", 1, "", 1, []int32{1}},
		{"out-of-sync replica returns, unclean off", 2, "", -1, []int32{1}},
		{"out-of-sync replica returns, unclean on the topic", 2, "topic", 2, []int32{2}},
		{"out-of-sync replica returns, unclean as cluster default", 2, "cluster", 2, []int32{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := cluster(t, broker{id: 1, fenced: true}, broker{id: 2, fenced: true})
			img = withTopic(t, img, "t", id, offline)
			switch tc.unclean {
			case "topic":
				img = withConfig(t, img, topicRes("t"), "unclean.leader.election.enable", "true")
			case "cluster":
				img = withConfig(t, img, brokerRes(""), "unclean.leader.election.enable", "true")
			}
			cfg := testConfig(t, nil)
			after := apply(t, img, brokerInChanges(img, cfg, tc.back)...)
			tp, _ := after.Topic("t")
			st := tp.Partitions[0]
			if st.Leader != tc.leader || !slices.Equal(st.ISR, tc.isr) {
				t.Fatalf("leader %d isr %v; want %d %v", st.Leader, st.ISR, tc.leader, tc.isr)
			}
			if tc.leader >= 0 && st.LeaderEpoch != 1 {
				t.Fatalf("leader epoch %d after election, want 1", st.LeaderEpoch)
			}
		})
	}
}

func TestTopicUncleanConfigOverridesClusterDefault(t *testing.T) {
	img := cluster(t, upBrokers(1)...)
	img = withConfig(t, img, brokerRes(""), "unclean.leader.election.enable", "true")
	img = withTopic(t, img, "t", metadata.Uuid{0: 5, 15: 3}, partition(1, []int32{1}, []int32{1}))
	cfg := testConfig(t, nil)
	if !uncleanElection(img, cfg, "t") {
		t.Fatal("cluster default not used")
	}
	img = withConfig(t, img, topicRes("t"), "unclean.leader.election.enable", "false")
	if uncleanElection(img, cfg, "t") {
		t.Fatal("topic config not preferred")
	}
	if !uncleanElection(metadata.EmptyImage(), testConfig(t, map[string]string{"unclean.leader.election.enable": "true"}), "t") {
		t.Fatal("static config not used")
	}
}
