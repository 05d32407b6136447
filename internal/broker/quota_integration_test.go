package broker_test

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// throttles records the throttle times a client's brokers reported.
type throttles struct {
	mu  sync.Mutex
	max time.Duration
	n   int
}

// OnBrokerThrottle implements kgo.HookBrokerThrottle.
func (h *throttles) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	h.max = max(h.max, d)
}

func (h *throttles) get() (int, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n, h.max
}

var _ kgo.HookBrokerThrottle = (*throttles)(nil)

// TestClientByteRateQuotas sets Kafka's producer_byte_rate and
// consumer_byte_rate quotas and checks that a client going over them is
// answered with throttle times (and one staying under them is not): the
// produce quota on a client id, the fetch quota as the default of every
// client id.
func TestClientByteRateQuotas(t *testing.T) {
	// Two one-second samples: a rate is measured over at least a second.
	c := testcluster.Start(t, testcluster.Config("quota.window.num", "2"))
	adm := c.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "q"); err != nil {
		t.Fatal(err)
	}
	alter := func(e []kadm.ClientQuotaEntityComponent, key string, v float64) {
		t.Helper()
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: e, Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: v}}}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("alter quota %s: %v %+v", key, err, res)
		}
	}
	alter([]kadm.ClientQuotaEntityComponent{{Type: "client-id", Name: kmsg.StringPtr("slow-producer")}}, "producer_byte_rate", 20_000)
	alter([]kadm.ClientQuotaEntityComponent{{Type: "client-id"}}, "consumer_byte_rate", 20_000)

	value := make([]byte, 10_000)
	rand.Read(value) // incompressible: quotas count the bytes sent
	produce := func(clientID string, h *throttles, n int) {
		t.Helper()
		cl := c.Client(t, kgo.ClientID(clientID), kgo.DefaultProduceTopic("q"), kgo.WithHooks(h))
		defer cl.Close()
		for range n {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// 6 records of 10 kB at once: over 20 kB/s.
	var slow, fast throttles
	produce("slow-producer", &slow, 6)
	if n, d := slow.get(); n == 0 || d <= 0 {
		t.Fatalf("a producer over its quota got no throttle (%d throttles, max %v)", n, d)
	}
	produce("other-producer", &fast, 3)
	if n, _ := fast.get(); n != 0 {
		t.Fatalf("a producer without a quota was throttled %d times", n)
	}

	var cons throttles
	cl := c.Client(t, kgo.ClientID("any-consumer"), kgo.ConsumeTopics("q"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithHooks(&cons))
	defer cl.Close()
	for got := 0; got < 9; {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if n, d := cons.get(); n == 0 || d <= 0 {
		t.Fatalf("a consumer over the default consumer quota got no throttle (%d, %v)", n, d)
	}
}

// TestRequestPercentageQuota sets Kafka's request_percentage quota: a
// client over it is answered with throttle times on every kind of
// request (Metadata from the broker, FindCoordinator from the group
// coordinator, a fetch), one without a quota is not, and a long poll's
// wait is not charged as work.
func TestRequestPercentageQuota(t *testing.T) {
	c := testcluster.Start(t, testcluster.Config("quota.window.num", "2"))
	adm := c.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "rq"); err != nil {
		t.Fatal(err)
	}
	alter := func(client, key string, v float64) {
		t.Helper()
		e := []kadm.ClientQuotaEntityComponent{{Type: "client-id", Name: kmsg.StringPtr(client)}}
		res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: e, Ops: []kadm.AlterClientQuotaOp{{Key: key, Value: v}}}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("alter quota %s: %v %+v", key, err, res)
		}
	}
	// 0.0001 % of a thread is 1 µs of handling per second: any request
	// is over it.
	alter("greedy", "request_percentage", 0.0001)
	// Half a thread: a fetch that waits 2 s for data and does almost no
	// work stays within it, unless its wait were charged.
	alter("poller", "request_percentage", 50)

	// The quotas reach the broker with the metadata.
	greedy := c.Client(t, kgo.ClientID("greedy"))
	defer greedy.Close()
	throttleOf := func(cl *kgo.Client, req kmsg.Request) int32 {
		t.Helper()
		resp, err := cl.Request(ctx, req)
		if err != nil {
			t.Fatalf("%T: %v", req, err)
		}
		ms, _ := resp.(kmsg.ThrottleResponse).Throttle()
		return ms
	}
	var got int32
	for i := 0; got == 0; i++ {
		if i == 200 {
			t.Fatal("Metadata over a request_percentage quota never throttled")
		}
		got = throttleOf(greedy, kmsg.NewPtrMetadataRequest())
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = "g"
	if ms := throttleOf(greedy, fc); ms <= 0 {
		t.Errorf("FindCoordinator (the group coordinator's API) over the quota: throttle %d", ms)
	}

	free := c.Client(t, kgo.ClientID("free"))
	defer free.Close()
	for range 20 {
		if ms := throttleOf(free, kmsg.NewPtrMetadataRequest()); ms != 0 {
			t.Fatalf("a client without a quota throttled %d ms", ms)
		}
	}

	poller := c.Client(t, kgo.ClientID("poller"))
	defer poller.Close()
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("rq")
	md.Topics = append(md.Topics, mt)
	mresp, err := md.RequestWith(ctx, poller)
	if err != nil || len(mresp.Topics) != 1 {
		t.Fatalf("metadata of rq: %v", err)
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 2000, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "rq", mresp.Topics[0].TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	for range 2 {
		start := time.Now()
		resp, err := fetch.RequestWith(ctx, poller)
		if err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < time.Second {
			t.Fatalf("the fetch of an empty partition answered after %v: it did not long-poll", waited)
		}
		if resp.ThrottleMillis != 0 {
			t.Fatalf("a long poll's wait was charged: throttle %d ms against a 50%% quota", resp.ThrottleMillis)
		}
	}

	// The same fetch from the greedy client is throttled: the streamed
	// fetch response carries the request quota's throttle too.
	fresp, err := fetch.RequestWith(ctx, greedy)
	if err != nil {
		t.Fatal(err)
	}
	if fresp.ThrottleMillis <= 0 {
		t.Fatalf("a fetch over the request quota: throttle %d", fresp.ThrottleMillis)
	}
}
