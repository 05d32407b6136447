package quorum

import (
	"strconv"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the metadata quorum member, read at scrape time from raft and
// the state machine (nothing is counted on the apply path).
var (
	quorumStateDesc = prometheus.NewDesc("kmirror_quorum_state",
		"This node's raft state in the metadata quorum: 1 for the current state (leader, follower, candidate, shutdown), 0 for the others.",
		[]string{"state"}, nil)
	quorumHasLeaderDesc = prometheus.NewDesc("kmirror_quorum_has_leader",
		"1 when this node knows the metadata quorum's leader, else 0.", nil, nil)
	quorumTermDesc = prometheus.NewDesc("kmirror_quorum_term",
		"The raft term this node is in.", nil, nil)
	quorumCommitDesc = prometheus.NewDesc("kmirror_quorum_commit_index",
		"The highest metadata log index this node knows committed.", nil, nil)
	quorumLastIndexDesc = prometheus.NewDesc("kmirror_quorum_last_log_index",
		"The last index in this node's metadata log (stored or snapshotted).", nil, nil)
	quorumSnapshotDesc = prometheus.NewDesc("kmirror_quorum_last_snapshot_index",
		"The metadata log index of this node's latest snapshot (0 without one).", nil, nil)
	metadataAppliedDesc = prometheus.NewDesc("kmirror_metadata_applied_offset",
		"The metadata log offset this node has applied to its image: how far its view of the cluster has caught up.", nil, nil)
)

// raftStates are the values of the state label.
var raftStates = []raft.RaftState{raft.Follower, raft.Candidate, raft.Leader, raft.Shutdown}

// Collector returns the quorum member's Prometheus collector.
func (q *Quorum) Collector() prometheus.Collector { return quorumCollector{q} }

type quorumCollector struct{ q *Quorum }

// Describe implements prometheus.Collector.
func (c quorumCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{quorumStateDesc, quorumHasLeaderDesc, quorumTermDesc, quorumCommitDesc,
		quorumLastIndexDesc, quorumSnapshotDesc, metadataAppliedDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c quorumCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.q.raft
	st := r.State()
	for _, s := range raftStates {
		v := 0.0
		if s == st {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(quorumStateDesc, prometheus.GaugeValue, v, stateLabel(s))
	}
	has := 0.0
	if _, _, ok := c.q.Leader(); ok {
		has = 1
	}
	ch <- prometheus.MustNewConstMetric(quorumHasLeaderDesc, prometheus.GaugeValue, has)
	ch <- prometheus.MustNewConstMetric(quorumTermDesc, prometheus.GaugeValue, float64(r.CurrentTerm()))
	ch <- prometheus.MustNewConstMetric(quorumCommitDesc, prometheus.GaugeValue, float64(r.CommitIndex()))
	ch <- prometheus.MustNewConstMetric(quorumLastIndexDesc, prometheus.GaugeValue, float64(r.LastIndex()))
	snap := 0.0
	if v, err := strconv.ParseUint(r.Stats()["last_snapshot_index"], 10, 64); err == nil {
		snap = float64(v)
	}
	ch <- prometheus.MustNewConstMetric(quorumSnapshotDesc, prometheus.GaugeValue, snap)
	ch <- prometheus.MustNewConstMetric(metadataAppliedDesc, prometheus.GaugeValue, float64(c.q.AppliedOffset()))
}

func stateLabel(s raft.RaftState) string {
	switch s {
	case raft.Follower:
		return "follower"
	case raft.Candidate:
		return "candidate"
	case raft.Leader:
		return "leader"
	}
	return "shutdown"
}
