package controller

import (
	"slices"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
)

// This file holds leader and ISR election: what happens to partitions when
// a broker stops being usable (fenced, shutting down, re-registered) or
// becomes usable again. The rules are Kafka's without eligible leader
// replicas (ELR):
//
//   - A broker that leaves drops out of every ISR, except where it is the
//     last member: the ISR never becomes empty, so the partition remembers
//     which replica has all acknowledged records.
//   - A partition keeps its leader while the leader is usable and in the
//     ISR; otherwise the first replica (in preferred order) that is in the
//     ISR and usable leads. With none, the partition is offline (leader
//     -1) unless unclean.leader.election.enable lets the first usable
//     replica lead anyway, which then becomes the whole ISR and starts in
//     leader recovery.
//   - Every leader change bumps the leader epoch (the replay rules do that
//     for any PartitionChangeRecord that sets Leader), which fences the old
//     leader. An ISR shrink alone does not, as in Kafka 3.6 and later.
//
// ISR changes asked for by leaders are in alter_partition.go, elections
// asked for by operators in elect_leaders.go, and the elections the
// controller starts by itself (preferred leader balancing, unclean
// elections once a topic allows them) in rebalance.go.

// electPartition returns the change a partition needs once broker out (or
// -1 for none) has left and acceptable says who may lead, or nil when it
// needs none.
func electPartition(topicID metadata.Uuid, partition int32, st metadata.PartitionState, out int32, acceptable func(int32) bool, unclean bool) *metadata.PartitionChangeRecord {
	isr := st.ISR
	if out >= 0 && slices.Contains(isr, out) && len(isr) > 1 {
		isr = slices.DeleteFunc(slices.Clone(isr), func(r int32) bool { return r == out })
	}
	valid := func(r int32) bool { return r != out && acceptable(r) && slices.Contains(isr, r) }

	leader := metadata.NoLeader
	elected := false
	if st.Leader != metadata.NoLeader && valid(st.Leader) {
		leader, elected = st.Leader, true
	}
	for _, r := range st.Replicas {
		if elected {
			break
		}
		if valid(r) {
			leader, elected = r, true
		}
	}
	uncleanElected := false
	if !elected && unclean {
		for _, r := range st.Replicas {
			if r != out && acceptable(r) {
				leader, uncleanElected = r, true
				isr = []int32{r}
				break
			}
		}
	}

	rec := &metadata.PartitionChangeRecord{TopicID: topicID, Partition: partition}
	changed := false
	if leader != st.Leader {
		l := leader
		rec.Leader = &l
		changed = true
	}
	if !slices.Equal(isr, st.ISR) {
		rec.ISR = slices.Clone(isr)
		changed = true
	}
	if uncleanElected && st.LeaderRecoveryState != metadata.Recovering {
		rs := metadata.Recovering
		rec.LeaderRecoveryState = &rs
		changed = true
	}
	if !changed {
		return nil
	}
	return rec
}

// brokerOutChanges returns the partition changes for broker out becoming
// unusable: it leaves every ISR it is in (but the last member's place) and
// every partition it leads gets a new leader. Partitions are visited by
// topic name, then partition id.
func brokerOutChanges(img *metadata.Image, cfg *config.Config, out int32) []metadata.Record {
	acceptable := func(r int32) bool { return r != out && active(img, r) }
	var recs []metadata.Record
	for _, t := range img.Topics() {
		unclean := uncleanElection(img, cfg, t.Name)
		for _, p := range t.PartitionIDs() {
			st := t.Partitions[p]
			if !slices.Contains(st.ISR, out) && st.Leader != out {
				continue
			}
			if rec := electPartition(t.ID, p, st, out, acceptable, unclean); rec != nil {
				recs = append(recs, rec)
			}
		}
	}
	return recs
}

// brokerInChanges returns the partition changes for broker in becoming
// usable: every partition without a leader elects one, which may now be
// in (or, with unclean election, any usable replica).
func brokerInChanges(img *metadata.Image, cfg *config.Config, in int32) []metadata.Record {
	acceptable := func(r int32) bool { return r == in || active(img, r) }
	var recs []metadata.Record
	for _, t := range img.Topics() {
		unclean := uncleanElection(img, cfg, t.Name)
		for _, p := range t.PartitionIDs() {
			st := t.Partitions[p]
			if st.Leader != metadata.NoLeader || !st.HasReplica(in) {
				continue
			}
			if rec := electPartition(t.ID, p, st, -1, acceptable, unclean); rec != nil {
				recs = append(recs, rec)
			}
		}
	}
	return recs
}

// leadsAny reports whether broker id leads any partition.
func leadsAny(img *metadata.Image, id int32) bool {
	for _, t := range img.Topics() {
		for _, st := range t.Partitions {
			if st.Leader == id {
				return true
			}
		}
	}
	return false
}
