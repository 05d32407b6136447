package controller

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestPlaceReplicasSpreads(t *testing.T) {
	var brokers []placementBroker
	for i := int32(1); i <= 5; i++ {
		brokers = append(brokers, placementBroker{ID: i})
	}
	for seed := uint64(0); seed < 20; seed++ {
		got, err := placeReplicas(brokers, 0, 10, 3, rand.New(rand.NewPCG(seed, 7)))
		if err != nil {
			t.Fatal(err)
		}
		leaders := map[int32]int{}
		replicas := map[int32]int{}
		for _, rs := range got {
			if len(rs) != 3 {
				t.Fatalf("replicas %v", rs)
			}
			if len(slices.Compact(slices.Sorted(slices.Values(rs)))) != 3 {
				t.Fatalf("replica set %v repeats a broker", rs)
			}
			leaders[rs[0]]++
			for _, r := range rs {
				replicas[r]++
			}
		}
		for _, b := range brokers {
			if leaders[b.ID] != 2 || replicas[b.ID] != 6 {
				t.Fatalf("seed %d: uneven spread, leaders %v replicas %v", seed, leaders, replicas)
			}
		}
	}
}

func TestPlaceReplicasRackAware(t *testing.T) {
	brokers := []placementBroker{{1, "a"}, {2, "a"}, {3, "b"}, {4, "b"}, {5, "c"}, {6, "c"}}
	rack := map[int32]string{}
	for _, b := range brokers {
		rack[b.ID] = b.Rack
	}
	for seed := uint64(0); seed < 20; seed++ {
		got, err := placeReplicas(brokers, 0, 12, 3, rand.New(rand.NewPCG(seed, 9)))
		if err != nil {
			t.Fatal(err)
		}
		for _, rs := range got {
			racks := map[string]bool{}
			for _, r := range rs {
				racks[rack[r]] = true
			}
			if len(racks) != 3 {
				t.Fatalf("seed %d: replicas %v do not cover the three racks", seed, rs)
			}
		}
	}
	// Two replicas over three racks: never two in one rack.
	got, _ := placeReplicas(brokers, 0, 12, 2, rand.New(rand.NewPCG(1, 1)))
	for _, rs := range got {
		if rack[rs[0]] == rack[rs[1]] {
			t.Fatalf("replicas %v share a rack", rs)
		}
	}
}

func TestArrangeBrokersAlternatesRacks(t *testing.T) {
	got := arrangeBrokers([]placementBroker{{5, "c"}, {1, "a"}, {3, "b"}, {2, "a"}, {4, "c"}})
	var ids []int32
	for _, b := range got {
		ids = append(ids, b.ID)
	}
	if !slices.Equal(ids, []int32{1, 3, 4, 2, 5}) {
		t.Fatalf("arranged %v, want 1 3 4 2 5", ids)
	}
}

func TestPlaceReplicasSingleNode(t *testing.T) {
	got, err := placeReplicas([]placementBroker{{ID: 1}}, 0, 3, 1, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range got {
		if !slices.Equal(rs, []int32{1}) {
			t.Fatalf("single node replicas %v", rs)
		}
	}
}

func TestPlaceReplicasErrors(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 1))
	one := []placementBroker{{ID: 1}}
	for _, tc := range []struct {
		name    string
		brokers []placementBroker
		count   int32
		rf      int16
		want    *kerr.Error
	}{
		{"rf above brokers", one, 1, 2, kerr.InvalidReplicationFactor},
		{"no brokers", nil, 1, 1, kerr.InvalidReplicationFactor},
		{"rf zero", one, 1, 0, kerr.InvalidReplicationFactor},
		{"no partitions", one, 0, 1, kerr.InvalidPartitions},
	} {
		_, err := placeReplicas(tc.brokers, 0, tc.count, tc.rf, rnd)
		wantErr(t, tc.name, err, tc.want)
	}
}

func TestValidateTopicName(t *testing.T) {
	for name, ok := range map[string]bool{
		"orders": true, "a.b_c-D9": true, "x": true,
		"": false, ".": false, "..": false, "a b": false, "ü": false, "a/b": false, "__cluster_metadata": false,
	} {
		if err := validateTopicName(name); (err == nil) != ok {
			t.Errorf("validateTopicName(%q) = %v", name, err)
		}
	}
	long := make([]byte, 249)
	for i := range long {
		long[i] = 'x'
	}
	if err := validateTopicName(string(long)); err != nil {
		t.Errorf("249 characters: %v", err)
	}
	if err := validateTopicName(string(long) + "x"); err == nil {
		t.Error("250 characters accepted")
	}
	if collisionKey("a.b_c") != collisionKey("a_b.c") {
		t.Error("'.' and '_' do not collide")
	}
}
