package controller

import (
	"cmp"
	"math/rand/v2"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// placementBroker is a broker replicas may be placed on.
type placementBroker struct {
	ID   int32
	Rack string // "" for none
}

// placeReplicas chooses the replicas of count new partitions, numbered from
// first, with rf replicas each, over brokers (the usable ones: unfenced and
// not shutting down). Each partition's first replica is its preferred
// leader.
//
// The assignment is Kafka's classic one. Brokers are taken round-robin from
// a random start, so leaders spread evenly; the other replicas follow the
// first at a shift that changes every len(brokers) partitions, so followers
// spread too. When any broker has a rack, the broker list is first arranged
// to alternate racks (rack a, b, c, a, b, c, ...) and a follower is skipped
// while its rack (or itself) already holds a replica of the partition and
// some rack (or broker) does not, so every rack gets a replica when rf is at
// least the number of racks and no rack gets two before all have one.
// Brokers without a rack form a rack of their own ("").
//
// first lets CreatePartitions continue the round-robin where the existing
// partitions stopped. rnd supplies the random start; tests seed it.
func placeReplicas(brokers []placementBroker, first, count int32, rf int16, rnd *rand.Rand) ([][]int32, error) {
	switch {
	case count <= 0:
		return nil, errf(kerr.InvalidPartitions, "Number of partitions must be larger than 0.")
	case rf <= 0:
		return nil, errf(kerr.InvalidReplicationFactor, "Replication factor must be larger than 0.")
	case int(rf) > len(brokers):
		return nil, errf(kerr.InvalidReplicationFactor, "replication factor %d larger than available brokers %d", rf, len(brokers))
	}
	list := arrangeBrokers(brokers)
	n := len(list)
	rackOf := make(map[int32]string, n)
	racks := map[string]bool{}
	for _, b := range list {
		rackOf[b.ID] = b.Rack
		racks[b.Rack] = true
	}
	rackAware := len(racks) > 1 || list[0].Rack != ""
	numRacks := len(racks)

	start := rnd.IntN(n)
	shift := rnd.IntN(n)
	out := make([][]int32, 0, count)
	for i := int32(0); i < count; i++ {
		p := int(first + i)
		if p > 0 && p%n == 0 {
			shift++
		}
		lead := (p + start) % n
		replicas := make([]int32, 0, rf)
		replicas = append(replicas, list[lead].ID)
		if !rackAware {
			for j := 0; j < int(rf)-1; j++ {
				replicas = append(replicas, list[followerIndex(lead, shift, j, n)].ID)
			}
			out = append(out, replicas)
			continue
		}
		usedRacks := map[string]bool{list[lead].Rack: true}
		used := map[int32]bool{list[lead].ID: true}
		k := 0
		for len(replicas) < int(rf) {
			b := list[followerIndex(lead, shift*numRacks, k, n)]
			k++
			if (usedRacks[b.Rack] && len(usedRacks) < numRacks) || (used[b.ID] && len(used) < n) {
				continue
			}
			replicas = append(replicas, b.ID)
			usedRacks[b.Rack] = true
			used[b.ID] = true
		}
		out = append(out, replicas)
	}
	return out, nil
}

// followerIndex is the position of the j-th follower of a partition whose
// first replica is at lead: never lead itself, and shifted so that
// consecutive rounds of partitions pair leaders with different followers.
func followerIndex(lead, shift, j, n int) int {
	if n == 1 {
		return lead
	}
	return (lead + 1 + (shift+j)%(n-1)) % n
}

// arrangeBrokers sorts brokers by id and, when racks are set, interleaves
// them by rack (racks in name order, brokers in id order within a rack):
// racks a:{1,2} b:{3} c:{4,5} give 1, 3, 4, 2, 5.
func arrangeBrokers(brokers []placementBroker) []placementBroker {
	sorted := slices.Clone(brokers)
	slices.SortFunc(sorted, func(a, b placementBroker) int { return cmp.Compare(a.ID, b.ID) })
	byRack := map[string][]placementBroker{}
	var racks []string
	for _, b := range sorted {
		if _, ok := byRack[b.Rack]; !ok {
			racks = append(racks, b.Rack)
		}
		byRack[b.Rack] = append(byRack[b.Rack], b)
	}
	if len(racks) == 1 {
		return sorted
	}
	slices.Sort(racks)
	out := make([]placementBroker, 0, len(sorted))
	for len(out) < len(sorted) {
		for _, r := range racks {
			if bs := byRack[r]; len(bs) > 0 {
				out = append(out, bs[0])
				byRack[r] = bs[1:]
			}
		}
	}
	return out
}
