package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDecideDescribeQuorum(t *testing.T) {
	st := quorumStatus{leader: 2, epoch: 7, highWatermark: 120, listener: "CONTROLLER",
		voters: []replicaStatus{
			{id: 1, addr: "127.0.0.1:19093", logEnd: 118, lastFetch: 1000, caughtUp: -1},
			{id: 2, addr: "127.0.0.1:29093", logEnd: 121, lastFetch: 2000, caughtUp: 2000},
			{id: 3, addr: "controller-3:39093", logEnd: -1, lastFetch: -1, caughtUp: -1},
		},
		observers: []replicaStatus{{id: 4, logEnd: 120, lastFetch: 1500, caughtUp: 1500}},
	}
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Version = 2
	for _, tp := range []struct {
		topic string
		part  int32
	}{{MetadataTopic, 0}, {MetadataTopic, 1}, {"orders", 0}} {
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = tp.topic
		rp := kmsg.NewDescribeQuorumRequestTopicPartition()
		rp.Partition = tp.part
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp := decideDescribeQuorum(req, st)
	if len(resp.Topics) != 3 {
		t.Fatalf("%d topics answered", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LeaderID != 2 || p.LeaderEpoch != 7 || p.HighWatermark != 120 || len(p.CurrentVoters) != 3 || len(p.Observers) != 1 {
		t.Fatalf("metadata partition: %+v", p)
	}
	if v := p.CurrentVoters[0]; v.ReplicaID != 1 || v.LogEndOffset != 118 || v.LastFetchTimestamp != 1000 || v.LastCaughtUpTimestamp != -1 {
		t.Fatalf("voter 1: %+v", v)
	}
	for _, other := range []kmsg.DescribeQuorumResponseTopicPartition{resp.Topics[1].Partitions[0], resp.Topics[2].Partitions[0]} {
		if other.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("partition %d answered %d, want UNKNOWN_TOPIC_OR_PARTITION", other.Partition, other.ErrorCode)
		}
	}
	if len(resp.Nodes) != 3 || resp.Nodes[2].NodeID != 3 || resp.Nodes[2].Listeners[0].Host != "controller-3" ||
		resp.Nodes[2].Listeners[0].Port != 39093 || resp.Nodes[0].Listeners[0].Name != "CONTROLLER" {
		t.Fatalf("nodes: %+v", resp.Nodes)
	}
	req.Version = 1
	if resp := decideDescribeQuorum(req, st); len(resp.Nodes) != 0 {
		t.Fatal("nodes in a v1 answer")
	}
}
