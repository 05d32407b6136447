package controller

import (
	"time"

	"github.com/kmirror/kmirror/internal/config"
	"github.com/kmirror/kmirror/internal/metadata"
)

// This file holds the elections the active controller starts by itself,
// beyond those of brokers leaving and returning (election.go):
//
//   - automatic preferred leader balancing (auto.leader.rebalance.enable):
//     every leader.imbalance.check.interval.seconds, for each broker whose
//     share of partitions it prefers (is first replica of) but does not
//     lead exceeds leader.imbalance.per.broker.percentage, those
//     partitions elect it where it is in the ISR and usable (Kafka's
//     per-broker rule; KRaft's controller balances without the threshold);
//   - unclean elections of leaderless partitions whose topic allows them,
//     whenever the metadata changed (unclean.leader.election.enable turned
//     on for a topic that is offline brings it back).

// maxBalanceElections bounds the elections of one balancing pass, so that
// a pass is one reasonably sized metadata entry (Kafka's bound).
const maxBalanceElections = 1000

// balanceLeaders returns the preferred leader elections of one balancing
// pass over img, at most maxBalanceElections, by topic name then
// partition.
func balanceLeaders(img *metadata.Image, percentage int32) []metadata.Record {
	type counts struct{ preferred, notLed int }
	per := map[int32]*counts{}
	for _, t := range img.Topics() {
		for _, st := range t.Partitions {
			if len(st.Replicas) == 0 {
				continue
			}
			b := st.Replicas[0]
			c := per[b]
			if c == nil {
				c = &counts{}
				per[b] = c
			}
			c.preferred++
			if st.Leader != b {
				c.notLed++
			}
		}
	}
	imbalanced := func(b int32) bool {
		c := per[b]
		return c != nil && c.preferred > 0 && float64(c.notLed)/float64(c.preferred) > float64(percentage)/100
	}
	usable := func(r int32) bool { return active(img, r) }
	var recs []metadata.Record
	for _, t := range img.Topics() {
		for _, p := range t.PartitionIDs() {
			st := t.Partitions[p]
			if len(st.Replicas) == 0 || st.Leader == st.Replicas[0] || !imbalanced(st.Replicas[0]) {
				continue
			}
			// Only the preferred replica itself: balancing never moves
			// leadership elsewhere.
			if !usable(st.Replicas[0]) || !st.InISR(st.Replicas[0]) {
				continue
			}
			leader := st.Replicas[0]
			recs = append(recs, &metadata.PartitionChangeRecord{TopicID: t.ID, Partition: p, Leader: &leader})
			if len(recs) == maxBalanceElections {
				return recs
			}
		}
	}
	return recs
}

// uncleanElections returns the elections of every leaderless partition
// whose topic allows unclean elections and that has a usable replica.
func uncleanElections(img *metadata.Image, cfg *config.Config) []metadata.Record {
	usable := func(r int32) bool { return active(img, r) }
	var recs []metadata.Record
	for _, t := range img.Topics() {
		var unclean, known bool
		for _, p := range t.PartitionIDs() {
			st := t.Partitions[p]
			if st.Leader != metadata.NoLeader {
				continue
			}
			if !known {
				unclean, known = uncleanElection(img, cfg, t.Name), true
			}
			if !unclean {
				break
			}
			if rec := electPartition(t.ID, p, st, -1, usable, true); rec != nil && rec.Leader != nil && *rec.Leader != metadata.NoLeader {
				recs = append(recs, rec)
			}
		}
	}
	return recs
}

// maintenance is what the active controller's loop checks on every tick
// besides broker sessions. Guarded by Controller.mu.
type maintenance struct {
	// nextBalance is when the next balancing pass is due (zero: one
	// interval after activation).
	nextBalance time.Time
	// uncleanChecked is the image offset of the last unclean-election
	// scan; the scan runs again only after the metadata changed.
	uncleanChecked uint64
}

// maintain runs the automatic elections that are due.
func (c *Controller) maintain() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.activeLocked() {
		c.maint = maintenance{}
		return
	}
	v := c.viewLocked()
	cfg := v.effectiveConfig()
	now := c.now()
	if off := v.img.Offset(); off != c.maint.uncleanChecked {
		c.maint.uncleanChecked = off
		if recs := uncleanElections(v.img, cfg); len(recs) > 0 {
			if _, err := c.propose(recs); err != nil {
				return
			}
			c.log.Warn("unclean leader elections: records acknowledged only by the old leaders may be lost", "partitions", len(recs))
			v = c.viewLocked()
			c.maint.uncleanChecked = v.img.Offset()
		}
		// A reassignment completes once its target has joined the ISR,
		// which an AlterPartition from the leader (or the start of the
		// reassignment itself) just recorded.
		if recs := reassignmentCompletions(v.img); len(recs) > 0 {
			if _, err := c.propose(recs); err != nil {
				return
			}
			c.log.Info("partition reassignments completed", "partitions", len(recs))
			v = c.viewLocked()
			c.maint.uncleanChecked = v.img.Offset()
		}
	}
	interval := time.Duration(cfg.LeaderImbalanceCheckIntervalSeconds) * time.Second
	if c.maint.nextBalance.IsZero() {
		c.maint.nextBalance = now.Add(interval)
		return
	}
	if !cfg.AutoLeaderRebalanceEnable || now.Before(c.maint.nextBalance) {
		return
	}
	c.maint.nextBalance = now.Add(interval)
	if recs := balanceLeaders(v.img, cfg.LeaderImbalancePerBrokerPercentage); len(recs) > 0 {
		if _, err := c.propose(recs); err != nil {
			return
		}
		c.log.Info("preferred leaders elected to balance leadership", "partitions", len(recs))
	}
}
