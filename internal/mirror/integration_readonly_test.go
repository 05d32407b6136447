package mirror_test

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/mirror/readonly"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/internal/wire"
)

// readOnlyCase tries one API's mutation of a mirrored topic on the
// destination and checks its answer; it returns what it did, for the
// failure messages.
type readOnlyCase func(t *testing.T, b *testcluster.Cluster, topic string)

// wantKafkaErr fails unless err is want and, when the API carries a
// message, the message names the mirror and the way out.
func wantKafkaErr(t *testing.T, what string, err, want error, message string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", what, err, want)
		return
	}
	if message != "" && (!strings.Contains(message, `mirror "m"`) || !strings.Contains(message, "remove-topics m")) {
		t.Errorf("%s: the message %q does not name the mirror and the way out", what, message)
	}
}

// readOnlyCases are the mutations package readonly refuses (or drops), by
// API key, each done the way a client does it.
var readOnlyCases = map[int16]readOnlyCase{
	int16(kmsg.Produce): func(t *testing.T, b *testcluster.Cluster, topic string) {
		// (The message is in the broker's answer; franz-go reports the
		// code.)
		if err := produceErr(t, b, topic); !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("produce: %v", err)
		}
	},
	int16(kmsg.DeleteTopics): func(t *testing.T, b *testcluster.Cluster, topic string) {
		resp, err := b.Admin(t).DeleteTopics(ctxFor(t), topic)
		if err != nil {
			t.Fatal(err)
		}
		r := resp[topic]
		wantKafkaErr(t, "delete topic", r.Err, kerr.PolicyViolation, r.ErrMessage)
	},
	int16(kmsg.DeleteRecords): func(t *testing.T, b *testcluster.Cluster, topic string) {
		os := kadm.Offsets{}
		os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1})
		resp, err := b.Admin(t).DeleteRecords(ctxFor(t), os)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := resp.Lookup(topic, 0)
		wantKafkaErr(t, "delete records", r.Err, kerr.PolicyViolation, "")
	},
	int16(kmsg.CreatePartitions): func(t *testing.T, b *testcluster.Cluster, topic string) {
		resp, err := b.Admin(t).CreatePartitions(ctxFor(t), 1, topic)
		if err != nil {
			t.Fatal(err)
		}
		r := resp[topic]
		wantKafkaErr(t, "create partitions", r.Err, kerr.PolicyViolation, r.ErrMessage)
		// The mirror's sync tag from a client is not the mirror's sync.
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version, req.TimeoutMillis = 3, 10000
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = topic, 3
		req.Topics = append(req.Topics, rt)
		req.UnknownTags.Set(0x4b50, []byte("m"))
		kresp, err := req.RequestWith(ctxFor(t), b.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		wantKafkaErr(t, "create partitions tagged as the mirror's sync", kerr.ErrorForCode(kresp.Topics[0].ErrorCode), kerr.PolicyViolation, deref(kresp.Topics[0].ErrorMessage))
	},
	int16(kmsg.IncrementalAlterConfigs): func(t *testing.T, b *testcluster.Cluster, topic string) {
		resp, err := b.Admin(t).AlterTopicConfigs(ctxFor(t), []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}, topic)
		if err != nil {
			t.Fatal(err)
		}
		wantKafkaErr(t, "incremental alter of a synced config", resp[0].Err, kerr.PolicyViolation, resp[0].ErrMessage)
		// A config the sync never copies stays the operator's.
		resp, err = b.Admin(t).AlterTopicConfigs(ctxFor(t), []kadm.AlterConfig{{Name: "min.insync.replicas", Value: kmsg.StringPtr("1")}}, topic)
		if err != nil || resp[0].Err != nil {
			t.Errorf("incremental alter of min.insync.replicas: %v %v", err, resp[0].Err)
		}
	},
	int16(kmsg.AlterConfigs): func(t *testing.T, b *testcluster.Cluster, topic string) {
		resp, err := b.Admin(t).AlterTopicConfigsState(ctxFor(t), []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}, topic)
		if err != nil {
			t.Fatal(err)
		}
		wantKafkaErr(t, "alter configs", resp[0].Err, kerr.PolicyViolation, resp[0].ErrMessage)
	},
	int16(kmsg.AddPartitionsToTxn): func(t *testing.T, b *testcluster.Cluster, topic string) {
		cl := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.TransactionalID("ro-txn"), kgo.RecordRetries(2))
		defer cl.Close()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		err := cl.ProduceSync(ctxFor(t), &kgo.Record{Partition: 0, Value: []byte("local")}).FirstErr()
		if !errors.Is(err, kerr.InvalidTopicException) {
			t.Errorf("transactional produce: %v, want INVALID_TOPIC_EXCEPTION from AddPartitionsToTxn", err)
		}
		if err := cl.EndTransaction(ctxFor(t), kgo.TryAbort); err != nil {
			t.Errorf("abort: %v", err)
		}
	},
	int16(kmsg.WriteTxnMarkers): func(t *testing.T, b *testcluster.Cluster, topic string) {
		// A coordinator's ABORT marker for a producer that touched the
		// partition: answered as written, not written.
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = 1
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 4242, 0, false, 0
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = topic, []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		resp, err := req.RequestWith(ctxFor(t), b.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Errorf("write txn markers: %v, want it answered as written", kerr.ErrorForCode(code))
		}
	},
}

// TestMirroredTopicIsReadOnly runs every mutation package readonly refuses
// against a MIRRORING topic on the destination, as a client would: each is
// refused with its Kafka error and a message naming the mirror and the way
// out (or, for transaction markers, not written), the destination's log
// stays byte-identical to the source's and the mirror carries on copying.
// Once the topic failed over, the same mutations are accepted. A rule of
// the table without a case here fails the test.
func TestMirroredTopicIsReadOnly(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "ro", 2, map[string]*string{"retention.ms": kmsg.StringPtr("86400000")})
	produceN(t, a, "ro", "before", 20)
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "ro")
	waitStates(t, b, "m", "ro", 2, wire.MirrorStateMirroring)
	an, bn := a.Nodes()[0], b.Nodes()[0]
	waitIdentical(t, an, bn, "ro", 2)

	var rules []readonly.Rule
	for _, r := range readonly.Rules() {
		if r.Effect == readonly.Refused || r.Effect == readonly.Dropped {
			rules = append(rules, r)
		}
	}
	// DeleteTopics last: were it accepted, the others would find no topic.
	slices.SortStableFunc(rules, func(x, y readonly.Rule) int {
		return cmp.Compare(b2i(x.Key == int16(kmsg.DeleteTopics)), b2i(y.Key == int16(kmsg.DeleteTopics)))
	})
	for _, r := range rules {
		c, ok := readOnlyCases[r.Key]
		if !ok {
			t.Errorf("%s is %s on mirrored topics but has no case in this test", r.Name(), r.Effect)
			continue
		}
		t.Run(r.Name(), func(t *testing.T) { c(t, b, "ro") })
	}

	// Nothing of that reached the mirrored log, which still copies.
	produceN(t, a, "ro", "after", 20)
	waitIdentical(t, an, bn, "ro", 2)
	if parts := leos(t, bn, "ro", 3); parts[2] != -1 {
		t.Fatal("the destination has a third partition")
	}

	// Failed over, the topic is an ordinary one.
	mirrorTopics(t, b, opRemove, "m", "ro")
	waitMirrorName(t, b, "ro", "m.stopped")
	adm := b.Admin(t)
	if resp, err := adm.AlterTopicConfigs(ctxFor(t), []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("1000")}}, "ro"); err != nil || resp[0].Err != nil {
		t.Errorf("alter configs after failover: %v %v", err, resp[0].Err)
	}
	if resp, err := adm.CreatePartitions(ctxFor(t), 1, "ro"); err != nil || resp["ro"].Err != nil {
		t.Errorf("create partitions after failover: %v %v", err, resp["ro"].Err)
	}
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "ro", Partition: 0, At: 1})
	if resp, err := adm.DeleteRecords(ctxFor(t), os); err != nil || resp.Error() != nil {
		t.Errorf("delete records after failover: %v %v", err, resp.Error())
	}
	if err := produceErr(t, b, "ro"); err != nil {
		t.Errorf("produce after failover: %v", err)
	}
	if resp, err := adm.DeleteTopics(ctxFor(t), "ro"); err != nil || resp["ro"].Err != nil {
		t.Errorf("delete topic after failover: %v %v", err, resp["ro"].Err)
	}
}

// TestTransactionAbortLeavesMirrorIntact is the failure the read-only rule
// for transactions closes: a transactional producer on the destination that
// touches a mirrored partition and aborts must not get an ABORT marker
// appended there (the log end would move past the source's, the next
// mirrored batch would be refused as below the log end, and mirroring
// would stop for good).
func TestTransactionAbortLeavesMirrorIntact(t *testing.T) {
	a := startCluster(t)
	b := startCluster(t)
	createTopic(t, a, "tx", 1, nil)
	createTopic(t, b, "local", 1, nil)
	produceN(t, a, "tx", "before", 10)
	createMirror(t, b, a, "m")
	mirrorTopics(t, b, opAdd, "m", "tx")
	waitStates(t, b, "m", "tx", 1, wire.MirrorStateMirroring)
	an, bn := a.Nodes()[0], b.Nodes()[0]
	waitIdentical(t, an, bn, "tx", 1)

	cl := b.Client(t, kgo.TransactionalID("dest-txn"), kgo.RecordRetries(2), kgo.RecordDeliveryTimeout(5*time.Second))
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "local", Value: []byte("ok")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "tx", Value: []byte("no")}).FirstErr(); err == nil {
		t.Fatal("a transactional produce to a mirrored topic was accepted")
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("abort: %v", err)
	}
	// The abort completes (its marker reached "local") ...
	waitFor(t, "the abort marker on the local topic", func() bool { return leo(t, bn, "local", 0) == 2 })
	// ... and the mirror goes on, byte for byte.
	produceN(t, a, "tx", "after", 10)
	waitIdentical(t, an, bn, "tx", 1)
	if st := partitionStates(t, b, "m", "tx"); st[0] != wire.MirrorStateMirroring {
		t.Fatalf("tx-0 is %v", st[0])
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
