package broker

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/metadata"
)

func TestLeadershipMovesAway(t *testing.T) {
	e := newEnv(t, nil)
	id := e.createTopicWith("lm", 1, 1, []int32{1, 2}, []int32{1, 2}, nil)
	e.produce(9, 1, "lm", 0, makeBatch(t, plainBatch(), "a"))

	// A long poll parked on the partition wakes up when leadership moves
	// and answers NOT_LEADER_OR_FOLLOWER.
	req := fetchReq(12, fp("lm", 0, 1))
	req.MaxWaitMillis = 60_000
	done := make(chan *kmsg.FetchResponse, 1)
	go func() {
		resp, err := e.callErr(context.Background(), req)
		if err != nil {
			t.Error(err)
			close(done)
			return
		}
		done <- decodeFetch(t, resp)
	}()
	other := int32(2)
	e.meta.mustApply(t, &metadata.PartitionChangeRecord{TopicID: id, Partition: 0, Leader: &other})
	select {
	case r := <-done:
		if p := onlyPartition(t, r); p.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("parked fetch after the leader moved: %v", kerr.ErrorForCode(p.ErrorCode))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leadership change did not wake the long poll")
	}
	part := e.partition("lm", 0)
	if part.IsLeader() || part.LeaderEpoch() != 1 || part.Log() == nil {
		t.Fatalf("follower state: leader %v epoch %d", part.IsLeader(), part.LeaderEpoch())
	}
	if rp := e.produce(9, 1, "lm", 0, makeBatch(t, plainBatch(), "b")); rp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce to a follower: %v", kerr.ErrorForCode(rp.ErrorCode))
	}
	// Leaving the replica set deletes the replica.
	e.meta.mustApply(t, &metadata.PartitionChangeRecord{TopicID: id, Partition: 0, Replicas: []int32{2}, ISR: []int32{2}})
	if _, ok := e.b.rm.Partition(tpOf("lm", 0)); ok {
		t.Fatal("partition kept after the replica moved away")
	}
	if _, ok := e.mgr.Log(tpOf("lm", 0)); ok {
		t.Fatal("log kept after the replica moved away")
	}
}

func TestTopicRecreatedWithANewID(t *testing.T) {
	e := newEnv(t, nil)
	old := e.createTopic("re", 1, nil)
	e.mustProduce("re", 0, makeBatch(t, plainBatch(), "old"))
	// Deleted and created again in one delta, as can happen when a broker
	// catches up on the metadata log.
	id := metadata.RandomUuid()
	e.meta.mustApply(t, &metadata.RemoveTopicRecord{ID: old}, &metadata.TopicRecord{Name: "re", ID: id},
		&metadata.PartitionRecord{TopicID: id, Partition: 0, PartitionState: metadata.PartitionState{Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}})
	l := e.partition("re", 0).Log()
	if got, _ := l.TopicID(); metadata.Uuid(got) != id || l.LogEndOffset() != 0 {
		t.Fatalf("recreated topic: id %v log end %d", metadata.Uuid(got), l.LogEndOffset())
	}
	if off := e.mustProduce("re", 0, makeBatch(t, plainBatch(), "new")); off != 0 {
		t.Fatalf("first offset of the new topic %d", off)
	}
}

func TestBrokerRestartServesExistingLogs(t *testing.T) {
	dir := t.TempDir()
	e := newEnvInDir(t, dir, nil)
	e.createTopic("keep", 2, map[string]string{"retention.ms": "123456", "max.message.bytes": "5000"})
	e.createTopic("plain", 1, nil)
	e.mustProduce("keep", 1, makeBatch(t, plainBatch(), "durable-1", "durable-2"))
	img := e.meta.Image()
	e.close()

	e2 := newEnvWithImage(t, dir, img, map[string]string{"log.retention.hours": "100"})
	p := onlyPartition(t, decodeFetch(t, e2.call(fetchReq(12, fp("keep", 1, 0)))))
	vals, _ := fetchedValues(t, p.RecordBatches)
	if len(vals) != 2 || vals[1] != "durable-2" || p.HighWatermark != 2 {
		t.Fatalf("after restart: %q hw %d (%v)", vals, p.HighWatermark, kerr.ErrorForCode(p.ErrorCode))
	}
	if epochs := e2.partition("keep", 1).Log().EpochEntries(); len(epochs) != 1 || epochs[0].Epoch != 0 {
		t.Fatalf("epoch cache after restart %+v", epochs)
	}
	if lc := e2.partition("keep", 0).Log().Config(); lc.RetentionMs != 123456 || lc.MaxMessageBytes != 5000 {
		t.Fatalf("log config after restart: retention.ms %d max.message.bytes %d", lc.RetentionMs, lc.MaxMessageBytes)
	}
	// A topic without overrides follows the broker defaults, not the
	// storage manager's.
	if lc := e2.partition("plain", 0).Log().Config(); lc.RetentionMs != 100*3600*1000 {
		t.Fatalf("retention.ms of a topic without overrides after restart: %d", lc.RetentionMs)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep-0")); err != nil {
		t.Fatal(err)
	}
}

func TestDescribeLogDirsProducersAndCluster(t *testing.T) {
	e := newEnv(t, nil)
	e.createTopic("d", 2, nil)
	pid := int64(77)
	e.mustProduce("d", 1, makeBatch(t, batchOpts{pid: pid, epoch: 3, seq: 0}, "a", "b"))

	ld := e.call(&kmsg.DescribeLogDirsRequest{Version: 4}).(*kmsg.DescribeLogDirsResponse)
	if len(ld.Dirs) != 1 || ld.Dirs[0].Dir != e.dir || ld.Dirs[0].ErrorCode != 0 || ld.Dirs[0].TotalBytes <= 0 || ld.Dirs[0].UsableBytes <= 0 {
		t.Fatalf("log dirs %+v", ld.Dirs)
	}
	if ts := ld.Dirs[0].Topics; len(ts) != 1 || ts[0].Topic != "d" || len(ts[0].Partitions) != 2 || ts[0].Partitions[1].Size <= 0 || ts[0].Partitions[0].Size != 0 {
		t.Fatalf("log dir topics %+v", ts)
	}
	only := e.call(&kmsg.DescribeLogDirsRequest{Version: 1, Topics: []kmsg.DescribeLogDirsRequestTopic{{Topic: "d", Partitions: []int32{1}}}}).(*kmsg.DescribeLogDirsResponse)
	if ts := only.Dirs[0].Topics; len(ts) != 1 || len(ts[0].Partitions) != 1 || ts[0].Partitions[0].Partition != 1 {
		t.Fatalf("filtered log dirs %+v", ts)
	}

	dp := e.call(&kmsg.DescribeProducersRequest{Topics: []kmsg.DescribeProducersRequestTopic{{Topic: "d", Partitions: []int32{1, 0, 5}}}}).(*kmsg.DescribeProducersResponse)
	ps := dp.Topics[0].Partitions
	if len(ps[0].ActiveProducers) != 1 || ps[0].ActiveProducers[0].ProducerID != pid || ps[0].ActiveProducers[0].ProducerEpoch != 3 ||
		ps[0].ActiveProducers[0].LastSequence != 1 || ps[0].ActiveProducers[0].CurrentTxnStartOffset != -1 {
		t.Fatalf("producers of d-1 %+v", ps[0])
	}
	if ps[1].ErrorCode != 0 || len(ps[1].ActiveProducers) != 0 || ps[2].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("producers of d-0 and d-5: %+v %+v", ps[1], ps[2])
	}

	dc := e.call(&kmsg.DescribeClusterRequest{Version: 1, EndpointType: 1, IncludeClusterAuthorizedOperations: true}).(*kmsg.DescribeClusterResponse)
	if dc.ErrorCode != 0 || dc.ClusterID != e.b.deps.ClusterID || dc.ControllerID != 1 || len(dc.Brokers) != 2 || dc.ClusterAuthorizedOperations != clusterOperations {
		t.Fatalf("describe cluster %+v", dc)
	}
	dc = e.call(&kmsg.DescribeClusterRequest{Version: 1, EndpointType: 2}).(*kmsg.DescribeClusterResponse)
	if dc.ErrorCode != kerr.UnsupportedEndpointType.Code {
		t.Fatalf("controller endpoints from a broker: %v", kerr.ErrorForCode(dc.ErrorCode))
	}
}

// TestStrayLogsDeletedOnceTheRegistrationIsSeen: a topic deleted while the
// node was down leaves a log nobody will ever delete through a metadata
// change. The restarted broker keeps every log until its image holds this
// process's own registration (before that the image may be behind the
// logs), then deletes the stray one and keeps the one it hosts.
func TestStrayLogsDeletedOnceTheRegistrationIsSeen(t *testing.T) {
	dir := t.TempDir()
	e := newEnvInDir(t, dir, nil)
	e.createTopic("kept", 1, nil)
	goneID := e.createTopic("gone", 1, nil)
	e.mustProduce("kept", 0, makeBatch(t, plainBatch(), "k"))
	e.mustProduce("gone", 0, makeBatch(t, plainBatch(), "g"))
	img := e.meta.Image()
	e.close()
	// While the node is down, "gone" is deleted.
	d := metadata.NewDelta(img)
	if err := d.Replay(&metadata.RemoveTopicRecord{ID: goneID}, img.Offset()+1); err != nil {
		t.Fatal(err)
	}
	img = d.Apply()

	incarnation := metadata.RandomUuid()
	e2 := startEnvAs(t, dir, nil, img, incarnation)
	goneDir, keptDir := filepath.Join(dir, "gone-0"), filepath.Join(dir, "kept-0")
	if _, err := os.Stat(goneDir); err != nil {
		t.Fatalf("a log deleted before this process registered: %v", err)
	}
	e2.meta.mustApply(t, &metadata.RegisterBrokerRecord{BrokerRegistration: metadata.BrokerRegistration{
		ID: 1, Epoch: 20, IncarnationID: incarnation,
		Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9092}},
	}})
	pollUntil(t, "the stray log deleted", func() bool {
		_, err := os.Stat(goneDir)
		return os.IsNotExist(err)
	})
	if _, err := os.Stat(keptDir); err != nil {
		t.Fatalf("the hosted log: %v", err)
	}
	p := onlyPartition(t, decodeFetch(t, e2.call(fetchReq(12, fp("kept", 0, 0)))))
	if vals, _ := fetchedValues(t, p.RecordBatches); len(vals) != 1 || vals[0] != "k" {
		t.Fatalf("the hosted partition after the stray check: %q", vals)
	}
}
