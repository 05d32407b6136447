package kafkamirror_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/pkg/mirroradmin"
)

// sourcePartition returns a source partition's leader, leader epoch and
// ISR as the source's metadata has them (leader -1 when it has none or
// the metadata cannot be read).
func sourcePartition(t testing.TB, s *source, topic string, partition int32) (leader, epoch int32, isr []int32) {
	t.Helper()
	md, err := s.admin(t).Metadata(ctxFor(t), topic)
	if err != nil {
		return -1, -1, nil
	}
	p, ok := md.Topics[topic].Partitions[partition]
	if !ok {
		return -1, -1, nil
	}
	return p.Leader, p.LeaderEpoch, p.ISR
}

// waitISR waits until every partition of topic has a leader and all of
// replicas in its ISR.
func waitISR(t testing.TB, s *source, topic string, partitions int32, replicas int) {
	t.Helper()
	for p := range partitions {
		poll(t, fmt.Sprintf("%s-%d's ISR complete on the source", topic, p), func() (bool, string) {
			leader, _, isr := sourcePartition(t, s, topic, p)
			return leader >= 0 && len(isr) == replicas, fmt.Sprintf("leader %d, ISR %v", leader, isr)
		})
	}
}

// waitReplicasIdentical checks that kmirror's replicas of every partition
// of topic hold the same bytes (the mirrored leader's followers followed
// every truncation).
func waitReplicasIdentical(t testing.TB, d *dest, topic string, partitions int32) {
	t.Helper()
	for p := range partitions {
		d.c.WaitReplicasIdentical(t, topic, p)
	}
}

// testSourceFaults (issue 13 item 3, faults of the source) runs three
// scenarios against a three-node kmirror destination, in this order since
// they stop and kill Kafka nodes: each leaves every Kafka node running.
func testSourceFaults(t *testing.T, s *source) {
	d := startDest(t, 3, nil)
	d.mirror(t, s, "kafka", nil)
	t.Run("LeaderKilled", func(t *testing.T) { testLeaderKilled(t, s.forTest(t), d) })
	t.Run("UncleanElection", func(t *testing.T) { testUncleanElection(t, s.forTest(t), d) })
	t.Run("SourceDown30s", func(t *testing.T) { testSourceDown(t, s.forTest(t), d) })
}

// testLeaderKilled kills the Kafka leader of a mirrored partition with
// SIGKILL while a Java producer writes: Kafka elects another leader, the
// mirror follows it, and after the producer stops every partition is
// byte-identical on kmirror, on each of its replicas.
func testLeaderKilled(t *testing.T, s *source, d *dest) {
	const topic = "fault-kill"
	s.createTopic(t, topic, 3, nil)
	d.addTopics(t, "kafka", topic)
	d.waitStates(t, "kafka", mirroradmin.StateMirroring, 3, topic)
	perf := startPerf(t, s.kc.Bootstrap(), s.producerConfig(t), topic)
	poll(t, "the Java producer writing to every partition", func() (bool, string) {
		ends, err := tryEndOffsets(t, s.kc.ClientOpts(), topic, false)
		if err != nil {
			return false, err.Error()
		}
		return ends[0] > 30 && ends[1] > 30 && ends[2] > 30, fmt.Sprint(ends)
	})
	old, oldEpoch, _ := sourcePartition(t, s, topic, 0)
	s.kc.Kill(old)
	restartOnFailure(t, s, old)
	t.Logf("killed Kafka node %d, the leader of %s-0 in epoch %d", old, topic, oldEpoch)
	var epoch int32
	poll(t, topic+"-0 led by another node", func() (bool, string) {
		leader, e, _ := sourcePartition(t, s, topic, 0)
		epoch = e
		return leader >= 0 && leader != old, fmt.Sprintf("leader %d", leader)
	})
	// The producer writes on under the new leader; the mirror copies it.
	var ends map[int32]int64
	poll(t, "more records under the new leader", func() (bool, string) {
		now, err := tryEndOffsets(t, s.kc.ClientOpts(), topic, false)
		if err != nil {
			return false, err.Error()
		}
		if ends == nil {
			ends = now
		}
		return now[0] > ends[0]+50, fmt.Sprint(now)
	})
	res := perf.Stop()
	t.Logf("the Java producer: %s", lastLine(res.Stdout))
	b := batches(t, waitSameLogs(t, s, d, topic, 3)[0])
	if last := b[len(b)-1]; last.PartitionLeaderEpoch < epoch {
		t.Errorf("kmirror's last batch of %s-0 is in epoch %d, the new leader's is %d", topic, last.PartitionLeaderEpoch, epoch)
	}
	s.kc.Start(old)
	waitISR(t, s, topic, 3, 3)
	waitSameLogs(t, s, d, topic, 3)
	waitReplicasIdentical(t, d, topic, 3)
}

// testUncleanElection loses the tail of a Kafka partition in an unclean
// election after the mirror copied it. The partition lives on nodes 1
// (leader) and 2 (follower) only, so that node 3 keeps the controller
// quorum, with unclean.leader.election.enable=true and
// min.insync.replicas=1: node 2 stops; node 1 takes more records alone
// (acks=1), which the mirror copies; node 1 is killed and node 2 starts,
// and Kafka elects it without those records. The mirror's next fetch
// gets a DivergingEpoch answer; kmirror truncates the copied tail on
// every replica, then copies what node 2 writes at those offsets, byte
// for byte.
func testUncleanElection(t *testing.T, s *source, d *dest) {
	const topic = "fault-unclean"
	const leader, stale = int32(1), int32(2)
	createAssigned(t, s, topic, []int32{leader, stale}, map[string]string{
		"unclean.leader.election.enable": "true", "min.insync.replicas": "1"})
	poll(t, topic+" led by node 1", func() (bool, string) {
		l, _, isr := sourcePartition(t, s, topic, 0)
		return l == leader && len(isr) == 2, fmt.Sprintf("leader %d, ISR %v", l, isr)
	})
	acks1 := s.client(t, append(manualProducer(), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())...)
	produceBatches(t, acks1, topic, 0, 3)
	d.addTopics(t, "kafka", topic)
	d.waitStates(t, "kafka", mirroradmin.StateMirroring, 1, topic)
	waitSameLogs(t, s, d, topic, 1)

	s.kc.Stop(stale)
	restartOnFailure(t, s, leader, stale)
	poll(t, "node 2 out of the ISR", func() (bool, string) {
		_, _, isr := sourcePartition(t, s, topic, 0)
		return slices.Equal(isr, []int32{leader}), fmt.Sprintf("ISR %v", isr)
	})
	produceBatches(t, acks1, topic, 0, 4) // the tail node 2 never sees
	tail := waitSameLogs(t, s, d, topic, 1)[0]
	tb := batches(t, tail)
	tailEnd, tailEpoch := tb[len(tb)-1].NextOffset(), tb[len(tb)-1].PartitionLeaderEpoch

	s.kc.Kill(leader)
	s.kc.Start(stale)
	poll(t, "node 2 elected uncleanly", func() (bool, string) {
		l, e, _ := sourcePartition(t, s, topic, 0)
		return l == stale && e > tailEpoch, fmt.Sprintf("leader %d in epoch %d", l, e)
	})
	var ends map[int32]int64
	poll(t, "node 2's log end", func() (bool, string) {
		var err error
		ends, err = tryEndOffsets(t, s.kc.ClientOpts(), topic, false)
		return err == nil, fmt.Sprint(err)
	})
	if ends[0] >= tailEnd {
		t.Fatalf("node 2's log ends at %d: it has the tail (to %d); the election lost nothing", ends[0], tailEnd)
	}
	t.Logf("node 2 leads from %d; the mirror copied up to %d in epoch %d", ends[0], tailEnd, tailEpoch)
	produceBatches(t, acks1, topic, 0, 6) // at and past the lost offsets
	logs := waitSameLogs(t, s, d, topic, 1)
	for _, b := range batches(t, logs[0]) {
		if b.PartitionLeaderEpoch == tailEpoch && b.BaseOffset >= ends[0] {
			t.Errorf("kmirror kept a batch of the lost tail at %d", b.BaseOffset)
		}
	}
	waitReplicasIdentical(t, d, topic, 1)

	s.kc.Start(leader)
	waitISR(t, s, topic, 1, 2)
	waitSameLogs(t, s, d, topic, 1)
}

// restartOnFailure starts the nodes that are down when t ends failed,
// so that a failed scenario leaves the next ones a whole source.
func restartOnFailure(t *testing.T, s *source, ids ...int32) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		var down []int32
		for _, id := range ids {
			if !s.kc.Running(id) {
				down = append(down, id)
			}
		}
		if len(down) > 0 {
			s.kc.Start(down...)
		}
	})
}

// createAssigned creates a one-partition topic on the given brokers (the
// first leads) with configs.
func createAssigned(t testing.TB, s *source, topic string, replicas []int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxFor(t), s.client(t))
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create %s on %v: %v", topic, replicas, err)
	}
}

// testSourceDown stops every Kafka node (SIGTERM, all at once) and keeps the source
// down for 30 seconds — longer than the mirror's connection and request
// timeouts, and than its backoffs — then starts it again: the mirror
// reports the outage, and resumes by itself when the source is back.
func testSourceDown(t *testing.T, s *source, d *dest) {
	const topic, outage = "fault-outage", 30 * time.Second
	s.createTopic(t, topic, 2, nil)
	cl := s.client(t, manualProducer()...)
	for p := range int32(2) {
		produceBatches(t, cl, topic, p, 3)
	}
	d.addTopics(t, "kafka", topic)
	d.waitStates(t, "kafka", mirroradmin.StateMirroring, 2, topic)
	waitSameLogs(t, s, d, topic, 2)

	down := time.Now()
	s.kc.Stop(s.kc.NodeIDs()...)
	restartOnFailure(t, s, s.kc.NodeIDs()...)
	t.Logf("every Kafka node stopped in %v", time.Since(down).Round(time.Millisecond))
	// The report waits for the mirror's metadata request to give up on
	// every source broker (replica.socket.timeout.ms, 30 s): allow two.
	pollFor(t, 2*waitTimeout, "the mirror to report the source unreachable", func() (bool, string) {
		ps, err := d.partitions(t, "kafka", topic)
		if err != nil || len(ps) != 2 {
			return false, fmt.Sprint(err)
		}
		for _, p := range ps {
			if !strings.Contains(p.LastError, "connection refused") {
				return false, fmt.Sprintf("partition %d %v: %q", p.Partition, p.State, p.LastError)
			}
		}
		return true, fmt.Sprintf("%v: %s", ps[0].State, ps[0].LastError)
	})
	ps, _ := d.partitions(t, "kafka", topic)
	t.Logf("%v after the stop: %v, %s", time.Since(down).Round(time.Millisecond), ps[0].State, ps[0].LastError)
	// The outage's length is the scenario, not a wait for something.
	time.Sleep(time.Until(down.Add(outage)))
	s.kc.Start(s.kc.NodeIDs()...)
	t.Logf("Kafka back after %v", time.Since(down).Round(time.Millisecond))

	for p := range int32(2) {
		produceBatches(t, cl, topic, p, 2)
	}
	d.waitStates(t, "kafka", mirroradmin.StateMirroring, 2, topic)
	waitSameLogs(t, s, d, topic, 2)
	poll(t, "the outage's errors cleared", func() (bool, string) {
		ps, err := d.partitions(t, "kafka", topic)
		if err != nil {
			return false, err.Error()
		}
		for _, p := range ps {
			if p.LastError != "" || p.Lag != 0 {
				return false, fmt.Sprintf("partition %d: lag %d, %s", p.Partition, p.Lag, p.LastError)
			}
		}
		return true, ""
	})
	waitReplicasIdentical(t, d, topic, 2)
	for _, id := range s.kc.NodeIDs() {
		if !s.kc.Running(id) {
			t.Errorf("Kafka node %d is not running", id)
		}
	}
}
